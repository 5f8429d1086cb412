package cli

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// fleetFactory is a testFactory whose --contexts name fake clusters, one
// fake clientset each, by context.
type fleetFactory struct {
	*testFactory
	clusters map[string]*fake.Clientset
	errOut   *bytes.Buffer
	out      *bytes.Buffer
}

func newFleetFactory(t *testing.T, contexts ...string) *fleetFactory {
	t.Helper()
	ff := &fleetFactory{testFactory: newTestFactory(t), clusters: map[string]*fake.Clientset{}, errOut: &bytes.Buffer{}, out: &bytes.Buffer{}}
	for _, name := range contexts {
		ff.clusters[name] = fake.NewClientset()
	}
	ff.f.IOStreams.Out, ff.f.IOStreams.ErrOut = ff.out, ff.errOut
	ff.f.ContextClient = func(name string) (kube.Interface, clock.WithTicker, error) {
		cs, ok := ff.clusters[name]
		if !ok {
			return nil, nil, &cmdutil.UsageError{Err: &kube.UnknownContextError{Flag: "--contexts", Context: name}}
		}
		return kubetest.Clients(cs), ff.clock, nil
	}
	ff.f.ContextNamespace = func(name string) (string, error) { return "locks-" + name, nil }
	return ff
}

func TestNewSites(t *testing.T) {
	t.Parallel()
	ff := newFleetFactory(t, "us", "eu")
	s, err := NewSites(ff.f, &LockFlags{Contexts: []string{"us", "eu"}}, LockClientOptions{})
	require.NoError(t, err)
	require.True(t, s.Across())
	assert.Equal(t, []string{"us", "eu"}, s.Contexts(), "in the order given")
	assert.Equal(t, "locks-us", s.Of("us").Namespace(), "each context's own namespace")
	assert.Equal(t, "locks-eu", s.Of("eu").Namespace())
	assert.Nil(t, s.Of("ap"))

	s, err = NewSites(ff.f, &LockFlags{Contexts: []string{"us", "eu"}, LockNamespace: "locks"}, LockClientOptions{})
	require.NoError(t, err)
	assert.Equal(t, "locks", s.Of("eu").Namespace(), "--lock-namespace wins")

	parts := s.Parts(lock.Request{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}}, []string{"staging", "db"})
	require.Len(t, parts, 4)
	for _, p := range parts {
		assert.NotNil(t, p.Request.Callbacks.LookupUser, "each asks its own cluster for the user")
	}

	s, err = NewSites(ff.f, &LockFlags{}, LockClientOptions{})
	require.NoError(t, err)
	assert.False(t, s.Across(), "no --contexts: the current context alone")
	assert.Nil(t, s.Contexts())

	for _, tc := range []struct {
		contexts []string
		want     string
	}{
		{[]string{"us", "us"}, `invalid --contexts: context "us" is named twice`},
		{[]string{"us", ""}, `invalid --contexts "us,": an empty context name`},
		{[]string{"us", "mars"}, `context "mars"`},
	} {
		_, err := NewSites(ff.f, &LockFlags{Contexts: tc.contexts}, LockClientOptions{})
		require.Error(t, err, "%v", tc.contexts)
		assert.Contains(t, err.Error(), tc.want)
		assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "%v: a usage error", tc.contexts)
	}
}

func TestReleaseAcross(t *testing.T) {
	t.Parallel()
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	tests := []struct {
		name     string
		token    string
		down     string
		wantErr  string
		wantCode int
		wantOut  []string
	}{
		{name: "every cluster", wantOut: []string{`lock "us/staging" released`, `lock "eu/staging" released`}},
		{name: "one cluster's token", token: "12", wantErr: `--token "12" is one cluster's token`, wantCode: cmdutil.CodeUsage},
		{name: "a part missing", token: "us=12", wantErr: `--token has no token for context "eu"`, wantCode: cmdutil.CodeUsage},
		{
			name: "a cluster that does not answer", down: "eu",
			wantOut:  []string{`lock "us/staging" released`, `release lock "eu/staging"`},
			wantErr:  `locks ["staging"] not released in contexts ["eu"] (said above): each stays held until its expiry`,
			wantCode: cmdutil.CodeError,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ff := newFleetFactory(t, "us", "eu")
			// NOTE: the reactor is in place before the fake is used (the
			// lock's Events are written in the background), and answers
			// "down" once the cluster goes down.
			var down atomic.Bool
			if tt.down != "" {
				ff.clusters[tt.down].PrependReactor("*", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
					if !down.Load() {
						return false, nil, nil
					}
					return true, nil, apierrors.NewServiceUnavailable("down")
				})
			}
			s, err := NewSites(ff.f, &LockFlags{Contexts: []string{"us", "eu"}}, LockClientOptions{})
			require.NoError(t, err)
			// NOTE: the fakes keep no resourceVersion, so no token: the
			// release by the composite token is tested against real API
			// servers (reliability.TestIntegrationClustersEnforced).
			_, err = lock.AcquireAcross(t.Context(), s.Parts(lock.Request{Identity: id, TTL: time.Hour}, []string{"staging"}))
			require.NoError(t, err)
			down.Store(tt.down != "")
			err = ReleaseAcross(t.Context(), ff.f, s, []string{"staging"}, Releaser{Identity: id}, false, tt.token)
			for _, want := range tt.wantOut {
				assert.Contains(t, ff.errOut.String(), want)
			}
			if tt.wantErr == "" {
				require.NoError(t, err, ff.errOut.String())
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err))
		})
	}
}

func TestTokenToStamp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := clientcmdapi.NewConfig()
	for _, name := range []string{"us", "eu"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name}
	}
	cfg.CurrentContext = "us"
	path := dir + "/kubeconfig"
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	for _, tc := range []struct {
		name, token, context, want, wantErr string
	}{
		{name: "one cluster's token as it is", token: "12", want: "12"},
		{name: "--context picks its part", token: "eu=7,us=12", context: "eu", want: "7"},
		{name: "else the current context's", token: "eu=7,us=12", want: "12"},
		{name: "no part for it", token: "eu=7,us=12", context: "ap", wantErr: `the token has no part for context "ap", only for ["eu" "us"]`},
		{name: "not a composite token", token: "eu=7,12", wantErr: `invalid --token: invalid composite token`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tf := newTestFactory(t)
			tf.f.ConfigFlags = &kube.ConfigFlags{KubeConfig: path, Context: tc.context}
			got, err := TokenToStamp(tf.f, tc.token)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFreezeAcross(t *testing.T) {
	t.Parallel()
	ff := newFleetFactory(t, "us", "eu")
	s, err := NewSites(ff.f, &LockFlags{Contexts: []string{"us", "eu"}}, LockClientOptions{})
	require.NoError(t, err)
	ff.clusters["eu"].PrependReactor("*", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no"))
	})
	by := record.Identity{Owner: "acme", Repo: "ops", Branch: "main", Build: "1"}
	err = FreezeAcross(t.Context(), ff.f, s, record.FreezeRequest{Target: "prod", By: by, Reason: "party", Until: ff.clock.Now().Add(time.Hour)}, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `freeze lock "prod" done in contexts ["us"], not in ["eu"] (run the same command again to complete it)`)
	assert.Contains(t, ff.errOut.String(), `lock "us/prod" frozen until`)

	s, err = NewSites(ff.f, &LockFlags{Contexts: []string{"us"}}, LockClientOptions{})
	require.NoError(t, err)
	ff.errOut.Reset()
	require.NoError(t, UnfreezeAcross(t.Context(), ff.f, s, "prod"))
	assert.Contains(t, ff.errOut.String(), `lock "us/prod" unfrozen`)
}

func TestLocksToShowAcross(t *testing.T) {
	t.Parallel()
	ff := newFleetFactory(t, "us", "eu")
	s, err := NewSites(ff.f, &LockFlags{Contexts: []string{"us", "eu"}}, LockClientOptions{})
	require.NoError(t, err)
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	_, err = s.Of("eu").Acquire(t.Context(), lock.Request{Target: "staging", Identity: id, TTL: time.Hour})
	require.NoError(t, err)
	items, found, err := LocksToShowAcross(t.Context(), ff.f, s, "staging", false)
	require.NoError(t, err)
	assert.True(t, found)
	require.Len(t, items, 2, "one per context")
	assert.Equal(t, "us", items[0].Spec.Context)
	assert.Equal(t, lock.StateFree, items[0].Status.State)
	assert.Equal(t, "eu", items[1].Spec.Context)
	assert.Equal(t, lock.StateHeld, items[1].Status.State)
	assert.Contains(t, ff.errOut.String(), `lock "us/staging" is free`)

	var out bytes.Buffer
	flags := &printers.OutputFlags{Forms: printers.Forms{Table: true}}
	require.NoError(t, flags.Validate())
	p := printers.NewLockPrinter(&out, flags, printers.Options{Contexts: true, Clock: ff.clock})
	require.NoError(t, p.PrintAll(items, true))
	assert.Contains(t, out.String(), "CONTEXT")
	assert.Regexp(t, `(?m)^eu +staging +acme/web@main#1`, out.String())
}
