package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

func TestSamplePercentile(t *testing.T) {
	t.Parallel()
	ms := func(n ...int) Sample {
		var s Sample
		for _, v := range n {
			s = append(s, time.Duration(v)*time.Millisecond)
		}
		return s
	}
	tests := []struct {
		name   string
		sample Sample
		p      float64
		want   time.Duration
	}{
		{name: "empty", sample: nil, p: 50, want: 0},
		{name: "one", sample: ms(7), p: 99, want: 7 * time.Millisecond},
		{name: "median of unsorted", sample: ms(5, 1, 4, 2, 3), p: 50, want: 3 * time.Millisecond},
		{name: "p99 of 100 is the 99th", sample: ms(seq(100)...), p: 99, want: 99 * time.Millisecond},
		{name: "p99 of 200 is the 198th", sample: ms(seq(200)...), p: 99, want: 198 * time.Millisecond},
		{name: "p100 is the max", sample: ms(3, 9, 1), p: 100, want: 9 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, tt.sample.Percentile(tt.p), "p%v of %v", tt.p, tt.sample)
		})
	}
}

func TestResourceOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, want string
	}{
		{name: "job record", path: "/api/v1/namespaces/ci/configmaps/job-00001", want: "configmaps"},
		{name: "build-id counter", path: "/api/v1/namespaces/ci/configmaps/lockctl.build-id.deploy", want: "build-id counter"},
		{name: "ledger", path: "/api/v1/namespaces/ci/configmaps/lockctl.admission", want: "admission ledger"},
		{name: "lock", path: "/api/v1/namespaces/ci/configmaps/lockctl-lock-staging", want: "lock"},
		{name: "pods", path: "/api/v1/namespaces/ci/pods/job-00001", want: "pods"},
		{name: "pod list", path: "/api/v1/namespaces/ci/pods", want: "pods"},
		{name: "lease", path: "/apis/coordination.k8s.io/v1/namespaces/ci/leases/x", want: "leases"},
		{name: "cluster scoped", path: "/api/v1/nodes", want: "nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodGet, "https://example.invalid"+tt.path, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ResourceOf(req), tt.path)
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestCounterCountsByVerb(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer srv.Close()

	var c Counter
	cfg := c.Wrap(&rest.Config{Host: srv.URL})
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	for _, r := range []struct{ method, query string }{
		{http.MethodGet, ""}, {http.MethodGet, "?watch=true"}, {http.MethodPost, ""},
		{http.MethodPut, ""}, {http.MethodPut, ""}, {http.MethodDelete, ""}, {http.MethodPatch, ""},
	} {
		req, err := http.NewRequest(r.method, srv.URL+"/api/v1/configmaps"+r.query, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err, "%s %s", r.method, r.query)
		resp.Body.Close()
	}

	got := c.Counts()
	assert.Equal(t, map[string]int{VerbGet: 1, VerbWatch: 1, VerbCreate: 1, VerbUpdate: 2, VerbDelete: 1, VerbPatch: 1}, got.ByVerb)
	assert.Equal(t, 7, got.Total(), "total")
	assert.Equal(t, 5, got.Writes(), "writes")
	assert.Equal(t, 2, got.Conflicts, "409s")
	assert.Equal(t, 7, got.ByResource["get configmaps"]+got.ByResource["watch configmaps"]+got.ByResource["create configmaps"]+
		got.ByResource["update configmaps"]+got.ByResource["delete configmaps"]+got.ByResource["patch configmaps"], "by resource: %v", got.ByResource)
	assert.Equal(t, map[string]int{VerbUpdate: 1}, c.Counts().Sub(Counts{ByVerb: map[string]int{
		VerbGet: 1, VerbWatch: 1, VerbCreate: 1, VerbUpdate: 1, VerbDelete: 1, VerbPatch: 1,
	}}).ByVerb, "Sub drops verbs with no difference")
}

func TestScrapeValues(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# HELP a_bytes A.\n# TYPE a_bytes gauge\na_bytes 1.5e+06\nb_bytes{x=\"y\"} 2\nc_bytes not-a-number\nd_bytes 4\n")
	}))
	defer srv.Close()
	got, err := scrapeValues(t.Context(), srv.Client(), srv.URL, "a_bytes", "b_bytes", "c_bytes")
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"a_bytes": 1.5e6}, got, "only unlabelled samples named, and parsable")
}
