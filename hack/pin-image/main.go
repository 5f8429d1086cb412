// Command pin-image pins the image of lockctl's kustomize base (deploy/)
// and of its cronjob component (which deploy/cronjob uses) to a released
// image, by tag and digest: it rewrites
// their `images:` entry for lockctl to
//
//	{name: lockctl, newName: IMAGE, newTag: VERSION, digest: sha256:…}
//
// where the digest is that of the multi-platform image in the OCI layout
// tar `make image` wrote (its index.json), the bytes a copy to IMAGE pushes.
// A release runs it after pushing that tar to IMAGE:VERSION, and commits the
// result before tagging (docs/in-cluster.md):
//
//	go run ./hack/pin-image -image "$LOCKCTL_IMAGE" -version v0.2.0 -oci _output/image/lockctl.tar
//
// With -check it writes nothing and fails unless the bases are pinned to
// VERSION and to the digest of the tar: the release checks that the image
// it attaches is the one the bases run. IMAGE is the repository without a
// tag (OWNER/IMAGE on the registry the release publishes to).
package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// Bases are the kustomizations whose image a release pins, relative to the
// repository.
var Bases = []string{"deploy/kustomization.yaml", "deploy/components/cronjob/kustomization.yaml"}

// ImageName is the image name the manifests of deploy/ use.
const ImageName = "lockctl"

type options struct {
	image, version, oci, root string
	check                     bool
}

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	o := options{root: "."}
	fs := flag.NewFlagSet("pin-image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.image, "image", o.image, "the image repository the release pushed to, without tag (OWNER/IMAGE on its registry)")
	fs.StringVar(&o.version, "version", o.version, "the release tag, such as v0.2.0")
	fs.StringVar(&o.oci, "oci", o.oci, "the OCI layout tar of the release's image (make image: _output/image/lockctl.tar)")
	fs.StringVar(&o.root, "root", o.root, "the repository's top directory")
	fs.BoolVar(&o.check, "check", o.check, "write nothing; fail unless the bases are pinned to -version and the tar's digest")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	digest, err := IndexDigest(o.oci, ImageName+":"+o.version)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	for _, b := range Bases {
		file := filepath.Join(o.root, b)
		if o.check {
			err = Check(file, o.version, digest)
		} else {
			err = Pin(file, o.image, o.version, digest)
		}
		if err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
		if !o.check {
			fmt.Fprintf(stderr, "pinned %s to %s:%s@%s\n", b, o.image, o.version, digest)
		}
	}
	return 0
}

var releaseTag = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

func (o options) validate() error {
	if !releaseTag.MatchString(o.version) {
		return fmt.Errorf("-version %q is not a release tag such as v0.2.0", o.version)
	}
	if o.oci == "" {
		return errors.New("-oci is required: the OCI layout tar of the release's image (make image writes _output/image/lockctl.tar)")
	}
	if o.check {
		return nil
	}
	if o.image == "" || strings.ContainsAny(o.image, ":@") || o.image == ImageName {
		return fmt.Errorf("-image %q: give the repository the image was pushed to, without tag or digest (OWNER/IMAGE on its registry)", o.image)
	}
	return nil
}

// IndexDigest returns the digest of the image named ref (lockctl:VERSION)
// in the OCI layout tar at path: the descriptor of its index.json whose
// org.opencontainers.image.ref.name is ref.
func IndexDigest(path, ref string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s has no index.json: not an OCI layout tar", path)
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", path, err)
		}
		if pathClean(h.Name) != "index.json" {
			continue
		}
		var idx struct {
			Manifests []struct {
				Digest      string            `json:"digest"`
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			return "", fmt.Errorf("%s: index.json: %w", path, err)
		}
		var names []string
		for _, m := range idx.Manifests {
			name := m.Annotations["org.opencontainers.image.ref.name"]
			if name == ref {
				if !sha256Digest.MatchString(m.Digest) {
					return "", fmt.Errorf("%s: %s has digest %q, not sha256:<64 hex>", path, ref, m.Digest)
				}
				return m.Digest, nil
			}
			names = append(names, name)
		}
		return "", fmt.Errorf("%s holds %q, not %s: build the image of this version (make image VERSION=%s)", path, names, ref, strings.TrimPrefix(ref, ImageName+":"))
	}
}

func pathClean(name string) string { return strings.TrimPrefix(path.Clean("/"+name), "/") }

var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Entry is a kustomization's images: entry for lockctl.
type Entry struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// Pinned reports whether e pins a released image: a repository of its own,
// a release tag and a sha256 digest.
func (e Entry) Pinned() bool {
	return e.NewName != "" && e.NewName != ImageName && releaseTag.MatchString(e.NewTag) && sha256Digest.MatchString(e.Digest)
}

// Image is what e makes of the manifests' image, as kustomize renders it.
func (e Entry) Image() string {
	s := firstOf(e.NewName, e.Name)
	if e.NewTag != "" {
		s += ":" + e.NewTag
	}
	if e.Digest != "" {
		s += "@" + e.Digest
	}
	return s
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Read returns the images: entry for lockctl of the kustomization file.
func Read(file string) (Entry, error) {
	node, err := kyaml.ReadFile(file)
	if err != nil {
		return Entry{}, err
	}
	entry, err := imageEntry(node, file)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	for field, dst := range map[string]*string{"name": &e.Name, "newName": &e.NewName, "newTag": &e.NewTag, "digest": &e.Digest} {
		if v := entry.Field(field); v != nil {
			*dst = kyaml.GetValue(v.Value)
		}
	}
	return e, nil
}

// imageEntry finds the images: entry named lockctl.
func imageEntry(node *kyaml.RNode, file string) (*kyaml.RNode, error) {
	images, err := node.Pipe(kyaml.Lookup("images"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if images == nil {
		return nil, fmt.Errorf("%s has no images: entry for %s", file, ImageName)
	}
	entry, err := images.Pipe(kyaml.MatchElement("name", ImageName))
	if err != nil || entry == nil {
		return nil, fmt.Errorf("%s has no images: entry named %s", file, ImageName)
	}
	return entry, nil
}

// Pin rewrites the lockctl entry of the kustomization file to image,
// version and digest, keeping the rest of the file, comments included.
func Pin(file, image, version, digest string) error {
	node, err := kyaml.ReadFile(file)
	if err != nil {
		return err
	}
	entry, err := imageEntry(node, file)
	if err != nil {
		return err
	}
	for _, f := range [][2]string{{"newName", image}, {"newTag", version}, {"digest", digest}} {
		if err := entry.PipeE(kyaml.SetField(f[0], kyaml.NewStringRNode(f[1]))); err != nil {
			return fmt.Errorf("%s: set %s: %w", file, f[0], err)
		}
	}
	return kyaml.WriteFile(node, file)
}

// Check fails unless the kustomization file pins lockctl to version and
// digest.
func Check(file, version, digest string) error {
	e, err := Read(file)
	if err != nil {
		return err
	}
	if !e.Pinned() || e.NewTag != version || e.Digest != digest {
		return fmt.Errorf("%s runs %s, not the released image %s@%s: run hack/pin-image with -image (docs/in-cluster.md)", file, e.Image(), version, digest)
	}
	return nil
}
