package dashboard_test

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// cardTargets are the targets of the lock cards of an index page, in order.
func cardTargets(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<h3><a href="/locks/[^"]+">([^<]+)</a>`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestIndexFilter: the index page filters its cards by ?q= (target,
// holder, waiter, any case) and ?state= (held, waiting, frozen, free)
// without the script, and counts the locks by state in its header,
// whatever the filter, each count a link to the page filtered by it.
func TestIndexFilter(t *testing.T) {
	s := start(t, func(_ *fake.Clientset, locks *lock.Client) {
		ctx := t.Context()
		take := func(target, repo, build string) {
			_, _, err := locks.TryAcquire(ctx, lock.Request{Target: target, Identity: record.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: build},
				ClaimID: target + "-" + build, TTL: time.Hour})
			require.NoError(t, err)
		}
		take("api-prod", "api", "1")
		take("web-prod", "web", "41")
		take("web-prod", "web", "42") // waits
		take("web-staging", "web", "7")
		_, err := locks.Release(ctx, "web-staging", record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}, lock.ReleaseOptions{})
		require.NoError(t, err)
		_, err = locks.Freeze(ctx, record.FreezeRequest{Target: "db-prod", By: record.Identity{Owner: "sre", Repo: "ops", Branch: "main", Build: "1"},
			Reason: "migration", Until: time.Now().Add(time.Hour)})
		require.NoError(t, err)
	})
	s.await(t, "the four locks", func(s *dashboard.Snapshot) bool { return len(s.Locks) == 4 })

	for _, tt := range []struct {
		query string
		want  []string
	}{
		{query: "", want: []string{"api-prod", "db-prod", "web-prod", "web-staging"}},
		{query: "?state=held", want: []string{"api-prod", "web-prod"}},
		{query: "?state=waiting", want: []string{"web-prod"}},
		{query: "?state=frozen", want: []string{"db-prod"}},
		{query: "?state=free", want: []string{"web-staging"}},
		{query: "?q=PROD", want: []string{"api-prod", "db-prod", "web-prod"}},
		{query: "?q=acme/web@main%2342", want: []string{"web-prod"}},
		{query: "?q=acme/api", want: []string{"api-prod"}},
		{query: "?q=web&state=held", want: []string{"web-prod"}},
		{query: "?q=nothing"},
		{query: "?state=bogus", want: []string{"api-prod", "db-prod", "web-prod", "web-staging"}},
	} {
		t.Run(tt.query, func(t *testing.T) {
			resp, body := get(t, s.srv.URL+"/"+tt.query, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, tt.want, cardTargets(body), "the cards of %q", tt.query)
			assert.Contains(t, body, `<a href="/?state=held" data-state="held"`)
			for state, n := range map[string]int{"held": 2, "waiting": 1, "frozen": 1, "free": 1} {
				assert.Regexp(t, fmt.Sprintf(`data-state="%s"( aria-current="true")?><span class="n">%d</span> %s</a>`, state, n, state), body, "every lock counted")
			}
			if tt.want == nil {
				assert.Regexp(t, `<p class="empty" id="nomatch">No lock matches the filter`, body)
				assert.NotContains(t, body, "No locks yet")
			} else {
				assert.Contains(t, body, `<p class="empty" id="nomatch" hidden>`)
			}
		})
	}
	_, body := get(t, s.srv.URL+"/?q=web&state=held", nil)
	assert.Contains(t, body, `<input type="search" name="q" value="web"`, "the form keeps the filter")
	assert.Contains(t, body, `<option value="held" selected>held</option>`)
	assert.Contains(t, body, `data-state="held" aria-current="true"`)
}
