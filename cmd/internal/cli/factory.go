// Package cli is what lockctl's commands share below their flags, as helm's
// pkg/cli and kubectl's cmd/util are: the Factory of dependencies (streams,
// lazily built clients, clocks, the console), the kubeconfig, identity,
// lock-namespace and build-cluster flags and how they resolve, the enum
// flag types, and cobra argument checks that report usage errors. Package
// cmd keeps the commands.
package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"

	jxlog "github.com/jenkins-x/jx-logging/v3/pkg/log"
	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/identity"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/internal/base/lazy"
	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/servertime"
)

// IOStreams are the standard streams a command reads and writes.
type IOStreams struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

// Factory holds lockctl's dependencies. Clients are built lazily, so --help
// and flag parsing never read a kubeconfig; tests replace any field.
type Factory struct {
	IOStreams IOStreams
	// ConfigFlags are the kubeconfig flags: --kubeconfig, --context, -n.
	ConfigFlags *kube.ConfigFlags

	// Clientset returns the client of the current context.
	Clientset func() (kube.Interface, error)
	// ClientsetFor returns the client of a named kubeconfig context; ""
	// means the current one.
	ClientsetFor func(context string) (kube.Interface, error)
	// ContextClient returns the client of a kubeconfig context named by
	// --contexts (a lock held in several clusters) and the clock of that
	// context's API server, learnt from the client's answers
	// (servertime), on which its locks are judged; each is built once per
	// name. A context the kubeconfig lacks is a usage error naming those
	// it has.
	ContextClient func(context string) (kube.Interface, clock.WithTicker, error)
	// ContextNamespace returns the namespace a kubeconfig context sets,
	// "default" when none: the lock namespace there by default.
	ContextNamespace func(context string) (string, error)
	// EventsClientset returns a client of the current context with a
	// client-side rate limiter of its own, for the reconcile loop's Events;
	// nil means Clientset.
	EventsClientset func() (kube.Interface, error)
	// WhoAmI returns the caller's authenticated Kubernetes user, recorded
	// with its claims for an enforced lock (KubeUser); nil records none.
	WhoAmI func(ctx context.Context) (record.User, error)
	// Namespace returns -n, else the current context's namespace.
	Namespace func() (string, error)
	// InPod returns the namespace and name of the pod lockctl runs in, and
	// false outside a pod.
	InPod func() (namespace, name string, ok bool)

	// Clock is the time source; clock.RealClock outside tests.
	Clock clock.WithTicker
	// ServerClock follows the API server's clock, learnt from the answers
	// to the clients built here; locks judge expiries on it
	// (docs/adr/0015-lock-clock.md). nil means Clock.
	ServerClock *servertime.Clock
	// Getenv reads the environment (CI identity, LOCKCTL_* flags).
	Getenv func(string) string
	// LocalEnv describes the user, host, working directory and terminal
	// session, for holder identities outside CI.
	LocalEnv func() identity.LocalEnv
	// Log is the command's logger, writing to IOStreams.ErrOut: this
	// Factory's own (NewLogger), never a global one. The library packages
	// a command calls get it as a *slog.Logger (Logger, LibraryLog).
	Log *logrus.Entry
	// Verbosity is -v, set once flags are parsed.
	Verbosity int
	// IsTerminal reports whether ErrOut is a terminal, for live progress.
	IsTerminal func() bool
	// TerminalWidth returns the columns of the terminal ErrOut is; 0 (or
	// a nil TerminalWidth) means unknown.
	TerminalWidth func() int
	// Executable is the name lockctl was started as: "kubectl-lockctl"
	// makes help and usage read "kubectl lockctl ..." (a kubectl plugin).
	// Empty means "lockctl".
	Executable string
	// QPS and Burst are the client-side rate limit of the clients built
	// from now on: 0 means the CLI's (cliQPS, cliBurst), a negative QPS no
	// client-side limit. lockctl reconcile sets them from --kube-api-qps and
	// --kube-api-burst before it builds a client.
	QPS   float32
	Burst int
	// UserAgent is the User-Agent of the clients built; NewFactory sets
	// lockctl/VERSION, "" means client-go's.
	UserAgent string

	consoleOnce sync.Once
	cons        *term.Console
}

// Console returns where lockctl's own lines on stderr go, built on first
// use from IOStreams.ErrOut as it is then (before -q replaces it).
func (f *Factory) Console() *term.Console {
	f.consoleOnce.Do(func() {
		var structured logrus.Formatter
		if f.Log != nil {
			structured = f.Log.Logger.Formatter
		}
		f.cons = term.New(f.IOStreams.ErrOut, term.Options{
			Clock:      f.Clock,
			Terminal:   f.IsTerminal != nil && f.IsTerminal(),
			Width:      f.TerminalWidth,
			Getenv:     f.Getenv,
			Structured: structured,
		})
	})
	return f.cons
}

// LockClock is the clock locks judge expiries on: ServerClock, which the
// clients of the current context teach the API server's time, else Clock.
func (f *Factory) LockClock() clock.WithTicker {
	if f.ServerClock != nil {
		return f.ServerClock
	}
	return f.Clock
}

// Logger is the logger handed to the library packages (their
// Options.Log): a *slog.Logger whose entries f.Log writes, at its level, in
// its form, through its hooks.
func (f *Factory) Logger() *slog.Logger {
	return slog.New(newLogrusHandler(f.Log))
}

// LibraryLog is the logger handed to a library package whose info lines
// would repeat what the command's display shows: below -v 1 it passes only
// entries at level or more severe (lockctl run hands the scheduler warn,
// podwatch error); from -v 1 on, everything f.Log passes.
func (f *Factory) LibraryLog(level slog.Level) *slog.Logger {
	if f.Verbosity >= 1 {
		return f.Logger()
	}
	return logutil.AtLeast(f.Logger(), level)
}

// jxLogger is jx-logging's logger, made once: jxlog.Logger configures
// logrus's global logger from the environment (JX_LOG_FORMAT, JX_LOG_LEVEL,
// JX_LOG_FILE) on first use, without a lock, so factories made at once
// (parallel tests, a library caller's goroutines) would race on it.
var jxLoggerValue lazy.Value[*logrus.Entry]

func jxLogger() *logrus.Entry { return jxLoggerValue.Get(jxlog.Logger) }

// NewLogger returns a logger of its own writing to out, set up as
// jx-logging sets up its global one from the environment: its formatter,
// level and hooks (JX_LOG_FILE). Nothing global is changed, so every
// Factory has its own logger, which SetupLogging then adjusts for -v and -q
// and the commands hand down to the library (Options.Log).
func NewLogger(out io.Writer) *logrus.Entry {
	jx := jxLogger().Logger
	l := logrus.New()
	l.SetOutput(out)
	l.SetFormatter(jx.Formatter)
	l.SetLevel(jx.GetLevel())
	hooks := make(logrus.LevelHooks, len(jx.Hooks))
	for level, hs := range jx.Hooks {
		hooks[level] = append([]logrus.Hook(nil), hs...)
	}
	l.ReplaceHooks(hooks)
	return logrus.NewEntry(l)
}

// NewFactory returns the real dependencies on the process's streams;
// version is lockctl's, sent in the clients' User-Agent.
func NewFactory(streams IOStreams, version string) *Factory {
	f := &Factory{
		IOStreams:   streams,
		UserAgent:   "lockctl/" + version,
		ConfigFlags: &kube.ConfigFlags{},
		Clock:       clock.RealClock{},
		ServerClock: servertime.New(clock.RealClock{}),
		Getenv:      os.Getenv,
	}
	f.LocalEnv = func() identity.LocalEnv { return identity.ReadLocalEnv(f.Getenv) }
	f.Log = NewLogger(streams.ErrOut)

	// The loader reads f's fields when it builds a client, not now: a
	// caller (a test) may set f.Getenv or f.ServerClock after NewFactory.
	kc := &kube.Loader{
		Flags:  f.ConfigFlags,
		Getenv: func(key string) string { return f.Getenv(key) },
		Tune:   f.tuneRESTConfig,
		WrapCurrent: func(rt http.RoundTripper) http.RoundTripper {
			if f.ServerClock == nil {
				return rt
			}
			return f.ServerClock.WrapTransport(rt)
		},
	}
	f.Clientset = func() (kube.Interface, error) {
		cs, err := kc.Clientset()
		if err != nil {
			return nil, cmdutil.KubeconfigError(usageIfUnknownContext(err))
		}
		return cs, nil
	}
	f.WhoAmI = func(ctx context.Context) (record.User, error) {
		cs, err := f.Clientset()
		if err != nil {
			return record.User{}, err
		}
		return enforce.WhoAmI(ctx, cs.AuthenticationV1())
	}
	f.EventsClientset = func() (kube.Interface, error) {
		cs, err := kc.SeparateClientset()
		if err != nil {
			return nil, cmdutil.KubeconfigError(usageIfUnknownContext(err))
		}
		return cs, nil
	}
	f.ClientsetFor = func(name string) (kube.Interface, error) {
		cs, err := kc.ClientsetFor(name)
		if err != nil && !errors.As(err, new(*kube.UnknownContextError)) {
			return nil, cmdutil.KubeconfigError(err)
		}
		return cs, err
	}
	var (
		ctxMu      sync.Mutex
		ctxClients = map[string]contextClient{}
	)
	f.ContextClient = func(name string) (kube.Interface, clock.WithTicker, error) {
		ctxMu.Lock()
		defer ctxMu.Unlock()
		if c, ok := ctxClients[name]; ok {
			return c.cs, c.clk, nil
		}
		clk := servertime.New(f.Clock)
		cs, err := kc.ClientsetOfContext(name, clk.WrapTransport)
		if err != nil {
			return nil, nil, cmdutil.KubeconfigError(usageIfUnknownContext(err))
		}
		ctxClients[name] = contextClient{cs: cs, clk: clk}
		return cs, clk, nil
	}
	f.ContextNamespace = func(name string) (string, error) {
		ns, err := kc.ContextNamespace(name)
		if err != nil {
			return "", cmdutil.KubeconfigError(usageIfUnknownContext(err))
		}
		return ns, nil
	}
	f.Namespace = func() (string, error) {
		if err := kube.CheckContext(f.ConfigFlags); err != nil {
			return "", usageIfUnknownContext(err)
		}
		ns, _, err := f.ConfigFlags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return "", cmdutil.KubeconfigError(err)
		}
		return ns, nil
	}
	f.InPod = func() (string, string, bool) { return kube.InPod(f.Getenv) }
	f.IsTerminal = func() bool { return term.IsTerminal(streams.ErrOut) }
	f.TerminalWidth = func() int { return term.Width(streams.ErrOut, f.Getenv) }
	return f
}

// contextClient is a client of a context of --contexts and its API
// server's clock.
type contextClient struct {
	cs  kube.Interface
	clk *servertime.Clock
}

// usageIfUnknownContext makes a --context or --contexts the kubeconfig
// lacks a *cmdutil.UsageError (exit 2).
func usageIfUnknownContext(err error) error {
	var uc *kube.UnknownContextError
	if errors.As(err, &uc) && (uc.Flag == "--context" || uc.Flag == "--contexts") {
		return &cmdutil.UsageError{Err: err}
	}
	return err
}

// The client-side rate limit of the CLI's commands: above client-go's
// default (5 QPS), which a command waiting on a busy lock could hit.
const (
	cliQPS   = 50
	cliBurst = 100
)

// tuneRESTConfig sets the client-side rate limit: f.QPS and f.Burst when
// set, else the CLI's; a negative QPS turns the limiter off.
func (f *Factory) tuneRESTConfig(cfg *rest.Config) {
	cfg.QPS, cfg.Burst = cliQPS, cliBurst
	if f.QPS != 0 {
		cfg.QPS, cfg.Burst = f.QPS, f.Burst
	}
	if f.UserAgent != "" {
		cfg.UserAgent = f.UserAgent
	}
}

// SetProgress makes the console live or plain as --progress says: auto
// keeps the console's own choice (live on a terminal outside CI). It
// returns the console.
func (f *Factory) SetProgress(progress string) *term.Console {
	switch progress {
	case "tty":
		f.Console().SetLive(true)
	case "plain":
		f.Console().SetLive(false)
	}
	return f.Console()
}
