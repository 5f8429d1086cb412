package integrations_test

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/deploytools"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
	clitest.Cleanup()
}

// repoRoot is the repository's top directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// tool returns the path of a tool hack/integration-tools.sh builds. Like
// testenv's control plane, a missing tool fails the test with what to run,
// and -short skips it (these tests run node, bash and the tools).
func tool(t *testing.T, name string) string {
	t.Helper()
	return deploytools.Tool(t, name)
}

// release is a lockctl release served over loopback, as the GitHub
// release downloads serve one: BaseURL/VERSION/ARCHIVE and checksums.txt.
type release struct {
	BaseURL, Version string
	// Archives are the archive file names, by binary name.
	Archives map[string]string
	// SHA256 are the archives' checksums, by file name.
	SHA256 map[string]string
	Dir    string
}

// serveRelease packs the lockctl binary the tests build into
// lockctl_VERSION_linux_ARCH.tar.gz and kubectl-lockctl_..., as goreleaser's
// archives do, writes checksums.txt in sha256sum's format, and serves them.
func serveRelease(t *testing.T, version string) *release {
	t.Helper()
	bin, err := os.ReadFile(clitest.Binary(t))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), version)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	r := &release{Version: version, Archives: map[string]string{}, SHA256: map[string]string{}, Dir: dir}
	var sums strings.Builder
	for _, name := range []string{"lockctl", "kubectl-lockctl"} {
		file := fmt.Sprintf("%s_%s_linux_%s.tar.gz", name, strings.TrimPrefix(version, "v"), runtime.GOARCH)
		path := filepath.Join(dir, file)
		writeTarGz(t, path, map[string][]byte{name: bin, "LICENSE": []byte("Apache-2.0\n")})
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		r.Archives[name], r.SHA256[file] = file, hex.EncodeToString(sum[:])
		fmt.Fprintf(&sums, "%s  %s\n", r.SHA256[file], file)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(sums.String()), 0o644))
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(dir))))
	t.Cleanup(srv.Close)
	r.BaseURL = srv.URL
	return r
}

// writeTarGz writes files (executable) into a gzipped tar at path.
func writeTarGz(t *testing.T, path string, files map[string][]byte) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for name, data := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
}
