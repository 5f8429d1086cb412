package record

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ParsePodRef parses a holder pod given as NAME or NAMESPACE/NAME (lockctl's
// --pod), checking the names as the API server would. The Namespace of a
// bare NAME is empty: the caller picks the default. The error says which
// part is wrong ("namespace: …" or "name: …").
func ParsePodRef(s string) (PodRef, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		ns, name = "", s
	} else if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return PodRef{}, fmt.Errorf("namespace: %s", errs[0])
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return PodRef{}, fmt.Errorf("name: %s", errs[0])
	}
	return PodRef{Namespace: ns, Name: name}, nil
}
