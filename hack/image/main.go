// Command image builds lockctl's container image without a container
// runtime or a registry: it compiles the static binary (CGO_ENABLED=0, time
// zone data embedded by cmd/tzdata.go) for each platform, puts it on an
// empty base with a non-root user, and writes a multi-platform OCI image layout as one tar
// file, which `docker load`, `podman load`, `kind load image-archive` and
// `skopeo copy oci-archive:` read.
//
//	go run ./hack/image -o _output/image/lockctl.tar -version v0.1.0
//
// With -busybox it also writes the shell variant, NAME:VERSION-shell, to
// -shell-o: the same binary plus a static busybox (Debian's busybox-static,
// fetched by hack/busybox.sh) as /bin/sh and the usual tools, for CI job
// images that run scripts (a GitLab job's image:, a Tekton step with
// script:). Its entrypoint is empty and its command /bin/sh, as CI systems
// expect of a job image; lockctl is on PATH.
//
// `make image` and the release configuration (.goreleaser.yml) run it.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image is made of.
const (
	// BinaryPath is where the binary lives in the image; the entrypoint.
	BinaryPath = "/usr/local/bin/lockctl"
	// User is the numeric user and group the container runs as: the
	// "nonroot" user of distroless images, which restricted Pod Security
	// admits.
	User = "65532:65532"
	// Module is lockctl's module path, for -ldflags.
	Module = "github.com/lockctl/lockctl"
)

type options struct {
	out       string
	version   string
	ldflags   string
	platforms string
	name      string
	binaries  string
	trimpath  bool
	busybox   string
	shellOut  string
}

// busyboxApplets are the commands the shell variant links to busybox: a
// shell and what CI scripts commonly call.
var busyboxApplets = []string{
	"sh", "ash", "[", "[[", "awk", "basename", "cat", "chmod", "cp", "cut", "date", "dirname", "echo", "env", "false",
	"find", "grep", "gzip", "head", "id", "ls", "mkdir", "mktemp", "mv", "printf", "pwd", "rm", "sed", "sha256sum",
	"sleep", "sort", "tail", "tar", "tee", "test", "touch", "tr", "true", "uname", "wc", "wget", "xargs",
}

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	o := options{version: "dev", platforms: "linux/amd64,linux/arm64", name: "lockctl", out: "_output/image/lockctl.tar", trimpath: true}
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.out, "o", o.out, "the OCI image layout tar file to write")
	fs.StringVar(&o.version, "version", o.version, "image version: its tag and label, and cmd.version unless -ldflags sets it")
	fs.StringVar(&o.ldflags, "ldflags", o.ldflags, "linker flags for go build (default: -s -w and the version)")
	fs.StringVar(&o.platforms, "platforms", o.platforms, "comma-separated OS/ARCH list; only linux makes sense")
	fs.StringVar(&o.name, "name", o.name, "image name, without the tag: the reference is NAME:VERSION")
	fs.StringVar(&o.binaries, "binaries", o.binaries, "comma-separated OS/ARCH=PATH list of binaries already built (such as goreleaser's), instead of building them")
	fs.BoolVar(&o.trimpath, "trimpath", o.trimpath, "build with -trimpath, as releases are; false reuses the packages go test compiled")
	fs.StringVar(&o.busybox, "busybox", o.busybox, "comma-separated OS/ARCH=PATH list of static busybox binaries (hack/busybox.sh): also write the shell variant for those platforms")
	fs.StringVar(&o.shellOut, "shell-o", o.shellOut, "the shell variant's tar file (default: -o with -shell before .tar)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := build(o); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	fmt.Fprintf(stderr, "wrote %s (%s:%s, %s)\n", o.out, o.name, o.version, o.platforms)
	if o.busybox != "" {
		fmt.Fprintf(stderr, "wrote %s (%s:%s-shell)\n", o.shellPath(), o.name, o.version)
	}
	return 0
}

func (o options) shellPath() string {
	if o.shellOut != "" {
		return o.shellOut
	}
	return strings.TrimSuffix(o.out, ".tar") + "-shell.tar"
}

func build(o options) error {
	if o.ldflags == "" {
		o.ldflags = "-s -w -X " + Module + "/cmd.version=" + o.version
	}
	prebuilt, err := parseBinaries(o.binaries)
	if err != nil {
		return err
	}
	busybox, err := parseBinaries(o.busybox)
	if err != nil {
		return err
	}
	created := sourceDate()
	tmp, err := os.MkdirTemp("", "lockctl-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var plats []*v1.Platform
	bins := map[string]string{}
	for _, p := range strings.Split(o.platforms, ",") {
		plat, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("platform %q: %w", p, err)
		}
		key := plat.OS + "/" + plat.Architecture
		bin, ok := prebuilt[key]
		if !ok {
			bin = filepath.Join(tmp, plat.OS+"-"+plat.Architecture, "lockctl")
			if err := goBuild(bin, *plat, o.ldflags, o.trimpath); err != nil {
				return err
			}
		}
		plats, bins[key] = append(plats, plat), bin
	}
	if err := writeImage(filepath.Join(tmp, "layout"), o.out, o.name+":"+o.version, plats, func(plat *v1.Platform) (v1.Image, error) {
		return image(bins[plat.OS+"/"+plat.Architecture], "", *plat, o.version, created)
	}, created); err != nil {
		return err
	}
	if len(busybox) == 0 {
		return nil
	}
	var shellPlats []*v1.Platform
	for _, plat := range plats {
		if _, ok := busybox[plat.OS+"/"+plat.Architecture]; ok {
			shellPlats = append(shellPlats, plat)
		}
	}
	for key := range busybox {
		if _, ok := bins[key]; !ok {
			return fmt.Errorf("-busybox names %s, which is not among -platforms %s", key, o.platforms)
		}
	}
	return writeImage(filepath.Join(tmp, "shell-layout"), o.shellPath(), o.name+":"+o.version+"-shell", shellPlats, func(plat *v1.Platform) (v1.Image, error) {
		key := plat.OS + "/" + plat.Architecture
		return image(bins[key], busybox[key], *plat, o.version, created)
	}, created)
}

// writeImage writes a multi-platform image named ref, with one image per
// platform from img, as an OCI layout tar at out.
func writeImage(dir, out, ref string, plats []*v1.Platform, img func(*v1.Platform) (v1.Image, error), created time.Time) error {
	var idx v1.ImageIndex = empty.Index
	idx = mutate.IndexMediaType(idx, types.OCIImageIndex)
	for _, plat := range plats {
		im, err := img(plat)
		if err != nil {
			return fmt.Errorf("image for %s: %w", plat, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        im,
			Descriptor: v1.Descriptor{Platform: plat},
		})
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
		"io.containerd.image.name":          ref,
	})); err != nil {
		return fmt.Errorf("write the image layout: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return tarDir(dir, out, created)
}

// goBuild compiles lockctl for plat as the Makefile does. The time zone
// database, which the empty base lacks, is in every lockctl binary
// (cmd/tzdata.go).
func goBuild(out string, plat v1.Platform, ldflags string, trimpath bool) error {
	args := []string{"build", "-ldflags", ldflags, "-o", out}
	if trimpath {
		args = append(args, "-trimpath")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = moduleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+plat.OS, "GOARCH="+plat.Architecture)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %w", plat, err)
	}
	return nil
}

// image puts the binary bin on an empty base for plat, and, when busybox
// is not empty, that static busybox in a layer below it.
func image(bin, busybox string, plat v1.Platform, version string, created time.Time) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if busybox != "" {
		bb, err := os.ReadFile(busybox)
		if err != nil {
			return nil, err
		}
		layerTar, err := busyboxLayer(bb, created)
		if err != nil {
			return nil, err
		}
		if img, err = appendLayer(img, layerTar, v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "hack/image: /bin/busybox", Comment: "busybox-static from Debian",
		}); err != nil {
			return nil, err
		}
	}
	layerTar, err := binaryLayer(data, created)
	if err != nil {
		return nil, err
	}
	img, err = appendLayer(img, layerTar, v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "hack/image: " + BinaryPath, Comment: "lockctl " + version,
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	cf.Created = v1.Time{Time: created}
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.User = User
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/usr/local/bin"}
	if busybox != "" {
		cf.Config.Entrypoint = nil
		cf.Config.Cmd = []string{"/bin/sh"}
		cf.Config.Env = []string{"PATH=/usr/local/bin:/bin", "HOME=/tmp"}
	}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "lockctl",
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.source":  "https://" + Module,
	}
	return mutate.ConfigFile(img, cf)
}

// appendLayer adds the uncompressed layer tar layerTar to img.
func appendLayer(img v1.Image, layerTar []byte, h v1.History) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, History: h})
}

// busyboxLayer is the shell variant's first layer: busybox as
// /bin/busybox, a symbolic link to it for each of busyboxApplets, and a
// world-writable /tmp (with the sticky bit) for scripts.
func busyboxLayer(bb []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdrs := []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "bin/", Mode: 0o755},
		{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777},
		{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb))},
	}
	for _, a := range busyboxApplets {
		hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777})
	}
	for _, h := range hdrs {
		h.ModTime, h.Format = created, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Name == "bin/busybox" {
			if _, err := tw.Write(bb); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// binaryLayer is the one layer: the binary, owned by root and executable by
// all, and its directories.
func binaryLayer(bin []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: strings.TrimPrefix(BinaryPath, "/"), Mode: 0o755, Size: int64(len(bin)), ModTime: created, Format: tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir writes the files under dir into the tar file out, in name order
// and with fixed times, so the same input gives the same bytes.
func tarDir(dir, out string, created time.Time) (err error) {
	var files []string
	if err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		files = append(files, path)
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(files)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(f)
	for _, path := range files {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: created, Format: tar.FormatPAX}
		if info.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		src.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// sourceDate is SOURCE_DATE_EPOCH when set (reproducible builds), else the
// Unix epoch: the image's bytes depend on its inputs only.
func sourceDate() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}

func parseBinaries(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		plat, path, ok := strings.Cut(pair, "=")
		if !ok || plat == "" || path == "" {
			return nil, fmt.Errorf("invalid -binaries entry %q: want OS/ARCH=PATH", pair)
		}
		out[plat] = path
	}
	return out, nil
}

// moduleRoot is the directory of lockctl's go.mod: the working directory
// or one of its parents.
func moduleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}
