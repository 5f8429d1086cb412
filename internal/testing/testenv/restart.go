package testenv

import (
	"context"
	"fmt"
	"time"
)

// RestartAPIServer kills kube-apiserver with SIGKILL, as a crash would,
// keeps it down for down (0 means restart at once), then starts it again
// with the same flags on the same port and returns once it is ready. etcd
// keeps running, so every object and resourceVersion survives; clients see
// refused connections in the gap and their watches end. The scheduler and
// kwok reconnect by themselves.
//
// It is for tests that run alone (not t.Parallel), since every test sharing
// the Env loses the API server meanwhile; it must not run concurrently with
// Stop or with itself.
func (e *Env) RestartAPIServer(ctx context.Context, down time.Duration) error {
	i := e.procIndex("kube-apiserver")
	if i < 0 {
		return fmt.Errorf("restart kube-apiserver: not running in this Env")
	}
	old := e.procs[i]
	old.stop()
	select {
	case <-old.done:
	default:
		return fmt.Errorf("restart kube-apiserver: still running after SIGKILL")
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("restart kube-apiserver: %w", context.Cause(ctx))
	case <-time.After(down):
	}
	p, err := startProcess(e.Dir, old.name, old.cmd.Path, old.cmd.Args[1:], old.cmd.Env)
	if err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	e.procs[i] = p
	return e.waitUntil(ctx, "kube-apiserver (restarted)", p, func(ctx context.Context) error {
		body, err := e.Client.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("readyz: %w: %s", err, body)
		}
		return nil
	})
}

// procIndex returns the index in e.procs of the component called name, or
// -1.
func (e *Env) procIndex(name string) int {
	for i, p := range e.procs {
		if p != nil && p.name == name {
			return i
		}
	}
	return -1
}

// PID returns the process id of the component called name
// ("kube-apiserver", "etcd"), or 0 when it does not run in this Env: for
// benchmarks that read its CPU time from /proc.
func (e *Env) PID(name string) int {
	i := e.procIndex(name)
	if i < 0 || e.procs[i].cmd.Process == nil {
		return 0
	}
	return e.procs[i].cmd.Process.Pid
}
