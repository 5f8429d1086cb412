package kube

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBoundRequests: a request to a server that never answers, or whose
// body stops mid-way, ends with a timeout; a body that keeps coming, or a
// watch that stays quiet after its headers, is not cut.
func TestBoundRequests(t *testing.T) {
	t.Parallel()
	// NOTE: the steady body writes ten times per bound, and the bound is a
	// whole second, so a loaded machine (-race on two busy cores, which
	// stalled a 300 ms bound) does not stall it past the bound.
	const d = time.Second
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flush := func() { w.(http.Flusher).Flush() }
		switch r.URL.Path {
		case "/silent":
			<-r.Context().Done()
		case "/stalls":
			_, _ = w.Write([]byte("part"))
			flush()
			<-r.Context().Done()
		case "/steady":
			for range 20 {
				_, _ = w.Write([]byte("x"))
				flush()
				time.Sleep(d / 10)
			}
		case "/watch":
			flush()
			time.Sleep(3 * d)
			_, _ = w.Write([]byte("event"))
		}
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: BoundRequests(d)(http.DefaultTransport)}
	get := func(path string) (string, error) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	tests := []struct {
		name, path, want, wantErr string
	}{
		{name: "no answer", path: "/silent", wantErr: "no answer from the API server for 1s"},
		{name: "a body that stops", path: "/stalls", wantErr: "no answer from the API server for 1s"},
		{name: "a body that keeps coming", path: "/steady", want: strings.Repeat("x", 20)},
		{name: "a quiet watch", path: "/watch?watch=true", want: "event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := get(tt.path)
			if tt.wantErr != "" {
				require.Error(t, err, tt.path)
				assert.ErrorContains(t, err, tt.wantErr, tt.path)
				assert.ErrorIs(t, err, context.DeadlineExceeded, "reads as a timeout: %s", tt.path)
				return
			}
			require.NoError(t, err, tt.path)
			assert.Equal(t, tt.want, got, tt.path)
		})
	}
}
