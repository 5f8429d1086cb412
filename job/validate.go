package job

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxJobNameLen keeps spec.job usable as a label value.
const maxJobNameLen = validation.LabelValueMaxLength

// statusReserve is the room a job record keeps for its status (description,
// times, pod name, URL) next to the spec, in bytes.
const statusReserve = 64 << 10

// maxSpecSize bounds the spec as its record stores it (JSON), so that every
// job Validate accepts fits a ConfigMap with its status.
const maxSpecSize = MaxFileSize - statusReserve

// Default fills in the defaults of a parsed job: the build-cluster alias.
func Default(j *Job) {
	if j.Spec.Cluster == "" {
		j.Spec.Cluster = DefaultCluster
	}
}

// Validate checks a job document and returns a *ValidationError listing
// every field at fault, or nil. The pod spec is checked only as far as lockctl
// needs (containers with names and images); the API server checks the rest
// when the pod is created.
func Validate(j *Job) error {
	var errs field.ErrorList
	errs = append(errs, validateType(j)...)
	errs = append(errs, validateMeta(&j.ObjectMeta, field.NewPath("metadata"))...)
	errs = append(errs, validateSpec(&j.Spec, field.NewPath("spec"))...)
	errs = append(errs, validateSpecSize(&j.Spec, field.NewPath("spec"))...)
	if len(errs) == 0 {
		return nil
	}
	return &ValidationError{Source: j.Name, Errors: errs}
}

func validateType(j *Job) field.ErrorList {
	var errs field.ErrorList
	switch j.APIVersion {
	case "":
		errs = append(errs, field.Required(field.NewPath("apiVersion"), "must be "+APIVersion))
	case APIVersion:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), j.APIVersion, []string{APIVersion}))
	}
	switch j.Kind {
	case "":
		errs = append(errs, field.Required(field.NewPath("kind"), "must be "+Kind))
	case Kind:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("kind"), j.Kind, []string{Kind}))
	}
	return errs
}

// reservedLabelPrefix marks labels lockctl sets itself.
const reservedLabelPrefix = "lockctl.dev/"

func validateMeta(m *metav1.ObjectMeta, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case m.Name != "":
		errs = append(errs, dnsLabel(path.Child("name"), m.Name, false)...)
	case m.GenerateName != "":
		errs = append(errs, dnsLabel(path.Child("generateName"), m.GenerateName, true)...)
	default:
		errs = append(errs, field.Required(path.Child("name"), "name or generateName is required"))
	}
	if m.Namespace != "" {
		errs = append(errs, dnsLabel(path.Child("namespace"), m.Namespace, false)...)
	}
	errs = append(errs, metavalidation.ValidateLabels(m.Labels, path.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(m.Annotations, path.Child("annotations"))...)
	for k := range m.Labels {
		if strings.HasPrefix(k, reservedLabelPrefix) || k == LabelManagedBy {
			errs = append(errs, field.Forbidden(path.Child("labels").Key(k), "reserved for lockctl"))
		}
	}
	return errs
}

// validateSpecSize refuses a spec whose JSON would not fit the job record.
// JSON can be larger than the YAML it came from (it escapes <, > and &).
func validateSpecSize(s *JobSpec, path *field.Path) field.ErrorList {
	raw, err := json.Marshal(s)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	if len(raw) <= maxSpecSize {
		return nil
	}
	fe := field.TooLong(path, nil, maxSpecSize)
	fe.Detail = fmt.Sprintf("stored as JSON it is %s, more than the %s a job record (a ConfigMap) keeps for it: "+
		"keep large scripts in the container image or in a ConfigMap the pod mounts", byteSize(int64(len(raw))), byteSize(maxSpecSize))
	return field.ErrorList{fe}
}

func dnsLabel(path *field.Path, name string, prefix bool) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSLabel(name, prefix) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func validateSpec(s *JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateJobName(s.Job, path.Child("job"))...)
	switch {
	case s.Type == "":
		errs = append(errs, field.Required(path.Child("type"), "one of periodic, presubmit, postsubmit, batch"))
	case !sets.New(Types...).Has(s.Type):
		errs = append(errs, field.NotSupported(path.Child("type"), s.Type, Types))
	}
	errs = append(errs, validateRefs(s.Type, s.Refs, path.Child("refs"))...)
	if s.Cluster != "" {
		errs = append(errs, labelValue(path.Child("cluster"), s.Cluster)...)
	}
	if s.MaxConcurrency < 0 {
		errs = append(errs, field.Invalid(path.Child("maxConcurrency"), s.MaxConcurrency, "must be 0 (no limit) or more"))
	}
	if s.Queue != "" {
		errs = append(errs, labelValue(path.Child("queue"), s.Queue)...)
	}
	if s.Lock != nil {
		if s.Lock.Namespace == "" {
			errs = append(errs, field.Required(path.Child("lock", "namespace"), "the namespace whose lock the job holds"))
		} else {
			errs = append(errs, dnsLabel(path.Child("lock", "namespace"), s.Lock.Namespace, false)...)
		}
	}
	errs = append(errs, validatePodSpec(s.PodSpec, path.Child("podSpec"))...)
	return errs
}

func validateJobName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "the job name")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if len(name) > maxJobNameLen {
		errs = append(errs, field.TooLong(path, name, maxJobNameLen))
	}
	return errs
}

func labelValue(path *field.Path, v string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

func validateRefs(t Type, refs *Refs, path *field.Path) field.ErrorList {
	needPulls := t == Presubmit || t == Batch
	if refs == nil {
		if needPulls || t == Postsubmit {
			return field.ErrorList{field.Required(path, "a "+string(t)+" job needs refs")}
		}
		return nil
	}
	var errs field.ErrorList
	if refs.Org == "" {
		errs = append(errs, field.Required(path.Child("org"), ""))
	}
	if refs.Repo == "" {
		errs = append(errs, field.Required(path.Child("repo"), ""))
	}
	if needPulls && len(refs.Pulls) == 0 {
		errs = append(errs, field.Required(path.Child("pulls"), "a "+string(t)+" job needs a pull request"))
	}
	if t == Presubmit && len(refs.Pulls) > 1 {
		errs = append(errs, field.TooMany(path.Child("pulls"), len(refs.Pulls), 1))
	}
	for i, p := range refs.Pulls {
		if p.Number == 0 {
			errs = append(errs, field.Required(path.Child("pulls").Index(i).Child("number"), ""))
		} else if p.Number < 0 {
			errs = append(errs, field.Invalid(path.Child("pulls").Index(i).Child("number"), p.Number, "must be positive"))
		}
	}
	return errs
}

func validatePodSpec(ps *corev1.PodSpec, path *field.Path) field.ErrorList {
	if ps == nil {
		return field.ErrorList{field.Required(path, "the pod to run")}
	}
	var errs field.ErrorList
	if len(ps.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "at least one container"))
	}
	names := sets.New[string]()
	check := func(cs []corev1.Container, p *field.Path) {
		for i, c := range cs {
			cp := p.Index(i)
			switch {
			case c.Name == "":
				errs = append(errs, field.Required(cp.Child("name"), ""))
			case names.Has(c.Name):
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			default:
				names.Insert(c.Name)
				errs = append(errs, dnsLabel(cp.Child("name"), c.Name, false)...)
			}
			if c.Image == "" {
				errs = append(errs, field.Required(cp.Child("image"), ""))
			}
		}
	}
	check(ps.InitContainers, path.Child("initContainers"))
	check(ps.Containers, path.Child("containers"))
	return errs
}
