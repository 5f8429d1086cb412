package cli

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/cmd/internal/cli/identity"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/kube"
)

// testFactory is a Factory on fakes, with the environment and the local
// machine it reads.
type testFactory struct {
	f     *Factory
	cs    *fake.Clientset
	clock *testingclock.FakeClock
	env   map[string]string
	// local is the machine and shell outside CI: no git checkout.
	local identity.LocalEnv
}

func newTestFactory(t *testing.T) *testFactory {
	t.Helper()
	tf := &testFactory{
		cs:    fake.NewClientset(),
		clock: testingclock.NewFakeClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)),
		env:   map[string]string{},
		local: identity.LocalEnv{User: "dev", Host: "laptop", TerminalSession: 4242, PID: 5151},
	}
	logger := logrus.New()
	logger.Out = io.Discard
	tf.f = &Factory{
		IOStreams:    discardStreams(),
		ConfigFlags:  &kube.ConfigFlags{},
		Clientset:    func() (kube.Interface, error) { return kubetest.Clients(tf.cs), nil },
		ClientsetFor: func(string) (kube.Interface, error) { return kubetest.Clients(tf.cs), nil },
		Namespace:    func() (string, error) { return "default", nil },
		InPod:        func() (string, string, bool) { return "", "", false },
		Clock:        tf.clock,
		Getenv:       func(k string) string { return tf.env[k] },
		LocalEnv:     func() identity.LocalEnv { return tf.local },
		Log:          logrus.NewEntry(logger),
		IsTerminal:   func() bool { return false },
	}
	return tf
}

// discardStreams are streams that read nothing and write nowhere.
func discardStreams() IOStreams {
	return IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
}
