package metricsserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHealthHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		check    func() error
		wantCode int
		wantBody string
	}{
		{name: "ready", check: func() error { return nil }, wantCode: http.StatusOK, wantBody: "ok\n"},
		{name: "not ready", check: func() error { return errors.New("caches not filled") }, wantCode: http.StatusServiceUnavailable, wantBody: "not ready: caches not filled\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			healthHandler(tt.check).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			assert.Equal(t, tt.wantCode, rec.Code)
			assert.Equal(t, tt.wantBody, rec.Body.String())
		})
	}
}
