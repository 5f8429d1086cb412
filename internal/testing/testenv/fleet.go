package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FleetContexts are the kubeconfig contexts of the clusters GetFleet
// starts, one a region, as a team deploying one release to several
// clusters names them.
var FleetContexts = []string{"us", "eu", "ap"}

// Fleet is several control planes, each its own etcd and kube-apiserver
// (Options.LocksOnly unless asked otherwise), and one kubeconfig with a
// context for each: what a test of locks held across clusters gives
// lockctl --contexts.
type Fleet struct {
	// Contexts name the clusters, in the order of Envs.
	Contexts []string
	// Envs are the control planes, one a context.
	Envs []*Env
	// Kubeconfig is a kubeconfig with one context per cluster, each the
	// admin user in namespace "default"; its current context is the
	// first.
	Kubeconfig string
	// Dir holds Kubeconfig.
	Dir string
}

// StartFleet starts a control plane for each of contexts at once (Start
// with o), and writes the kubeconfig naming them. ctx bounds only the
// start-up; on error nothing is left running.
func StartFleet(ctx context.Context, contexts []string, o Options) (*Fleet, error) {
	fl := &Fleet{Contexts: contexts, Envs: make([]*Env, len(contexts))}
	errs := make([]error, len(contexts))
	var wg sync.WaitGroup
	for i := range contexts {
		wg.Go(func() { fl.Envs[i], errs[i] = Start(ctx, o) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		fl.Dir, err = os.MkdirTemp("", dirPrefix+"fleet-")
	}
	if err == nil {
		fl.Kubeconfig, err = fl.KubeconfigVia(nil, fl.Dir)
	}
	if err != nil {
		fl.Stop()
		return nil, fmt.Errorf("start fleet: %w", err)
	}
	return fl, nil
}

// Stop stops every control plane and removes Dir.
func (fl *Fleet) Stop() {
	for _, e := range fl.Envs {
		if e != nil {
			e.Stop()
		}
	}
	if fl.Dir != "" {
		_ = os.RemoveAll(fl.Dir)
	}
}

// Env returns the control plane of context name; it panics for a name
// not in Contexts.
func (fl *Fleet) Env(name string) *Env {
	for i, c := range fl.Contexts {
		if c == name {
			return fl.Envs[i]
		}
	}
	panic(fmt.Sprintf("testenv: no cluster %q in the fleet %v", name, fl.Contexts))
}

// KubeconfigVia writes into dir a kubeconfig of the fleet whose contexts
// of proxies reach their API server through their Proxy (a partition's
// test freezes it), and returns its path.
func (fl *Fleet) KubeconfigVia(proxies map[string]*Proxy, dir string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	for i, name := range fl.Contexts {
		one, err := clientcmd.LoadFromFile(fl.Envs[i].Kubeconfig)
		if err != nil {
			return "", err
		}
		cluster := *one.Clusters[ContextName]
		if p := proxies[name]; p != nil {
			cluster.Server = "https://" + p.Addr()
		}
		cfg.Clusters[name] = &cluster
		cfg.AuthInfos[name+"-admin"] = one.AuthInfos[ContextName+"-admin"]
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin", Namespace: metav1.NamespaceDefault}
	}
	cfg.CurrentContext = fl.Contexts[0]
	path := filepath.Join(dir, "kubeconfig-fleet")
	if len(proxies) > 0 {
		path += "-via-proxies"
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	return path, os.Chmod(path, 0o600)
}

// ProxiedKubeconfig starts a Proxy to the API server of each of contexts,
// closed when t ends, and writes into dir a kubeconfig of the fleet
// reaching those through them (KubeconfigVia). It fails t on an error.
func (fl *Fleet) ProxiedKubeconfig(t testing.TB, dir string, contexts ...string) (map[string]*Proxy, string) {
	t.Helper()
	proxies := map[string]*Proxy{}
	for _, name := range contexts {
		addr, err := fl.Env(name).APIServerAddr()
		require.NoError(t, err, "proxy to the API server of %q", name)
		p, err := StartProxy(addr)
		require.NoError(t, err, "proxy to the API server of %q", name)
		t.Cleanup(p.Close)
		proxies[name] = p
	}
	path, err := fl.KubeconfigVia(proxies, dir)
	require.NoError(t, err, "kubeconfig through the proxies")
	return proxies, path
}

// Namespace creates one namespace, named after the test, in every
// cluster of the fleet and returns its name: the lock namespace a test
// gives lockctl --contexts.
func (fl *Fleet) Namespace(t testing.TB) string {
	t.Helper()
	name := fl.Envs[0].Namespace(t)
	for _, e := range fl.Envs[1:] {
		_, err := e.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"lockctl.dev/test": "true"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err, "create namespace %q for %s", name, t.Name())
	}
	return name
}

// FleetStartTimeout bounds how long GetFleet waits for the fleet to
// start: three control planes at once on a loaded machine.
const FleetStartTimeout = 5 * time.Minute

// sharedFleet is the package-wide fleet, started by the first GetFleet
// and stopped by Main after the package's tests.
var sharedFleet struct {
	once sync.Once
	fl   *Fleet
	err  error
}

// GetFleet returns the package's shared fleet of FleetContexts, each
// cluster LocksOnly, starting it on first use. It skips or fails under
// -short as Get does, and needs TestMain to call Main.
func GetFleet(t testing.TB) *Fleet {
	t.Helper()
	checkIntegration(t)
	sharedFleet.once.Do(func() {
		ctx, cancel := context.WithTimeoutCause(context.Background(), FleetStartTimeout,
			fmt.Errorf("fleet not ready after %s", FleetStartTimeout))
		defer cancel()
		sharedFleet.fl, sharedFleet.err = StartFleet(ctx, FleetContexts, Options{LocksOnly: true})
		if sharedFleet.err == nil && testing.Verbose() {
			fmt.Fprintf(os.Stderr, "testenv: fleet %v ready\n", FleetContexts)
		}
	})
	if sharedFleet.err != nil {
		t.Fatalf("testenv: %v", sharedFleet.err)
	}
	return sharedFleet.fl
}

// stopSharedFleet stops the shared fleet, if one started; keep keeps the
// component logs (tests failed).
func stopSharedFleet(keep bool) {
	fl := sharedFleet.fl
	if fl == nil {
		return
	}
	for _, e := range fl.Envs {
		e.keep = e.keep || keep
		if keep {
			fmt.Fprintf(os.Stderr, "testenv: tests failed; component logs kept in %s\n", e.Dir)
		}
	}
	fl.Stop()
}
