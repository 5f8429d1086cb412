// Command helm-plugin writes the release archive of lockctl's Helm 4
// post-renderer plugin, lockctl-stamp-X.Y.Z.tgz: a gzipped tar holding
// lockctl-stamp/plugin.yaml, which is plugins/helm/lockctl-stamp/plugin.yaml
// with the release's version (X.Y.Z, without the tag's v) in place of its
// own. That is the layout `helm plugin install ARCHIVE` extracts: a
// directory named as the archive without its version and extension.
//
//	go run ./hack/helm-plugin -version v0.2.0 -o dist/lockctl-stamp-0.2.0.tgz
//
// .goreleaser.yml runs it before a release and attaches the archive, which
// checksums.txt covers; docs/helm.md says how to install it.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// pluginName is the plugin's name, and the directory the archive holds.
const pluginName = "lockctl-stamp"

// versionLine is the plugin's version in its plugin.yaml.
var versionLine = regexp.MustCompile(`(?m)^version: .*$`)

// semver is a release version, as Helm wants a plugin's.
var semver = regexp.MustCompile(`^v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$`)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("helm-plugin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the release's version, vX.Y.Z (required)")
	source := fs.String("plugin", filepath.Join("plugins", "helm", pluginName, "plugin.yaml"), "the plugin's plugin.yaml")
	out := fs.String("o", "", "the archive to write, lockctl-stamp-X.Y.Z.tgz (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	m := semver.FindStringSubmatch(*version)
	if m == nil || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: helm-plugin -version vX.Y.Z -o lockctl-stamp-X.Y.Z.tgz")
		return 2
	}
	if want := pluginName + "-" + m[1] + ".tgz"; filepath.Base(*out) != want {
		fmt.Fprintf(stderr, "the archive must be named %s: helm plugin install finds the plugin's directory from the name\n", want)
		return 2
	}
	data, err := archive(*source, m[1])
	if err == nil {
		err = os.MkdirAll(filepath.Dir(*out), 0o755)
	}
	if err == nil {
		err = os.WriteFile(*out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// archive is the plugin's archive at version.
func archive(source, version string) ([]byte, error) {
	manifest, err := os.ReadFile(source)
	if err != nil {
		return nil, err
	}
	if len(versionLine.FindAll(manifest, -1)) != 1 {
		return nil, fmt.Errorf("%s: no single top-level version line to replace", source)
	}
	manifest = versionLine.ReplaceAll(manifest, []byte("version: "+version))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	// NOTE: a fixed time, so that one version's archive is the same bytes
	// whenever it is built.
	mtime := time.Unix(0, 0)
	for _, h := range []*tar.Header{
		{Name: pluginName + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime},
		{Name: pluginName + "/plugin.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(manifest)), ModTime: mtime},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if _, err := tw.Write(manifest); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
