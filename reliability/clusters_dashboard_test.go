package reliability

import (
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIntegrationClustersDashboard: lockctl dashboard --contexts watches
// every cluster at once: its first page lists the contexts with their
// locks counted by state, and each context's page, under /c/N, shows that
// cluster's locks alone, live, its links and its script's requests under
// the same path.
func TestIntegrationClustersDashboard(t *testing.T) {
	t.Parallel()
	c := newFleetCase(t)
	kc := c.fl.Kubeconfig
	o := c.start(kc, slices.Concat([]string{"acquire", "staging", "--contexts", "eu"}, identity("web"))...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)

	p := c.start(kc, "dashboard", "--contexts", strings.Join(c.fl.Contexts, ","))
	var url string
	require.Eventually(t, func() bool {
		url = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(p.stdout.String())
		return url != ""
	}, time.Minute, 20*time.Millisecond, "the dashboard prints its URL; stderr: %s", p.stderr.String())
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
		return string(b)
	}
	require.Eventually(t, func() bool {
		page := get("")
		return strings.Contains(page, `<span class="n">1</span> held`) && !strings.Contains(page, "connecting")
	}, time.Minute, 100*time.Millisecond, "the first page counts the locks of every cluster")
	page := get("")
	for i, name := range c.fl.Contexts {
		assert.Contains(t, page, `<a href="/c/`+string(rune('1'+i))+`/">`+name+`</a>`, "context %s is listed", name)
	}
	eu := 1 + slices.Index(c.fl.Contexts, "eu")
	euPath := "c/" + string(rune('0'+eu))
	assert.Contains(t, get(euPath+"/api/snapshot"), `"build":"1"`, "eu's page shows eu's holder")
	for i, name := range c.fl.Contexts {
		if name != "eu" {
			assert.NotContains(t, get("c/"+string(rune('1'+i))+"/api/snapshot"), `"build":"1"`, "%s's page shows no one else's lock", name)
		}
	}
	html := get(euPath + "/")
	assert.Contains(t, html, `data-base="/`+euPath+`"`, "the script's requests go under the cluster's path")
	assert.Contains(t, html, `href="/`+euPath+`/locks/`, "the links too")
	assert.Contains(t, html, "context eu", "the page names its cluster")

	o = c.start(kc, slices.Concat([]string{"release", "staging", "--contexts", "eu"}, identity("web"))...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
}
