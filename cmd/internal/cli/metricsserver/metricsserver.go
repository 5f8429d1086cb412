// Package metricsserver serves the reconcile loop's Prometheus metrics
// and its health and readiness probes over HTTP.
package metricsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/lockctl/lockctl/metrics"
)

// Start serves reg on addr until stop is called: /metrics in
// Prometheus format, /healthz (200 while the process serves) and /readyz
// (200 when ready returns nil, else 503 with its error), for a Deployment's
// probes. Errors of the server once it runs are logged to log.
func Start(ctx context.Context, addr string, reg *metrics.Registry, ready func() error, log *logrus.Entry) (stop func(), err error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", reg.Handler())
	mux.Handle("/healthz", healthHandler(func() error { return nil }))
	mux.Handle("/readyz", healthHandler(ready))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Error("metrics server stopped")
		}
	}()
	return func() {
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}, nil
}

// healthHandler answers 200 "ok" when check returns nil, else 503 with the
// error, as kube-apiserver's /healthz and /readyz do.
func healthHandler(check func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if err := check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
