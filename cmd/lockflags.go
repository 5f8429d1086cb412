package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lockctl/lockctl/internal/cmdutil"
	"github.com/lockctl/lockctl/lock"
)

// lockFlags are the flags shared by the commands that touch locks.
type lockFlags struct {
	Owner, Repo, Branch, Build string
	Pod                        string
	LockNamespace              string

	// perProcess makes the local build lockctl's process ID instead of the
	// terminal session: lockctl run holds its lock for one process only,
	// and two runs from one shell must queue, not share the lock.
	perProcess bool
}

func (l *lockFlags) addIdentityFlags(fs *pflag.FlagSet) {
	fs.StringVar(&l.Owner, "owner", l.Owner, "repository owner of this build (default: from the CI environment, else USER@HOST)")
	fs.StringVar(&l.Repo, "repo", l.Repo, "repository of this build (default: from the CI environment, else the git checkout's origin, else \"local\")")
	fs.StringVar(&l.Branch, "branch", l.Branch, "branch of this build (default: from the CI environment, else the git checkout's branch, else \"local\")")
	fs.StringVar(&l.Build, "build", l.Build, "build number, growing with every build of the branch (default: from the CI environment, else this terminal session, served first come first served)")
	fs.StringVar(&l.Pod, "pod", l.Pod, "pod the holder runs in, as NAME or NAMESPACE/NAME (default: this pod, when lockctl runs in one)")
}

func (l *lockFlags) addLockNamespaceFlag(fs *pflag.FlagSet) {
	fs.StringVar(&l.LockNamespace, "lock-namespace", l.LockNamespace, "namespace holding the lock objects (default: -n, else this pod's namespace, else the context's)")
}

// lockNamespace resolves --lock-namespace: the flag, else -n, else the pod
// lockctl runs in, else the context's namespace.
func (l *lockFlags) lockNamespace(f *Factory) (string, error) {
	if l.LockNamespace != "" {
		return l.LockNamespace, nil
	}
	if f.ConfigFlags.Namespace != "" {
		return f.ConfigFlags.Namespace, nil
	}
	if ns, _, ok := f.InPod(); ok {
		return ns, nil
	}
	return f.Namespace()
}

// identity resolves the holder identity: flags win over the CI
// environment, which wins over the local defaults (lock.ResolveIdentity: user@host,
// the git checkout's repository and branch, the terminal session as build).
// unordered is true when the build only tells holders apart (a local or
// hashed build): such claims are served first come, first served. A field
// lock.Identity.Validate refuses is a *cmdutil.FlagError naming the flag or
// environment variable it came from.
func (l *lockFlags) identity(f *Factory) (id lock.Identity, unordered bool, err error) {
	flags := lock.Identity{Owner: l.Owner, Repo: l.Repo, Branch: l.Branch, Build: l.Build}
	id, src, unordered := lock.ResolveIdentity(flags, f.Getenv, f.LocalEnv, l.perProcess)
	if err := id.Validate(); err != nil {
		var ie *lock.IdentityError
		if !errors.As(err, &ie) {
			return id, unordered, cmdutil.FlagErrorf("invalid identity: %v", err)
		}
		return id, unordered, identityError(ie, src[ie.Field])
	}
	return id, unordered, l.validatePod()
}

// validatePod checks --pod, NAME or NAMESPACE/NAME, as the API server
// would check the names.
func (l *lockFlags) validatePod() error {
	if l.Pod == "" {
		return nil
	}
	ns, name, ok := strings.Cut(l.Pod, "/")
	if !ok {
		ns, name = "", l.Pod
	}
	if ns != "" || ok {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return cmdutil.FlagErrorf("invalid --pod %q: namespace: %s", l.Pod, errs[0])
		}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return cmdutil.FlagErrorf("invalid --pod %q: name: %s", l.Pod, errs[0])
	}
	return nil
}

// identityError says which identity field is wrong, where it came from and
// what to do: source is the flag ("--owner"), the environment variable
// ("$REPO_OWNER") or "" for a default.
func identityError(ie *lock.IdentityError, source string) error {
	flag := "--" + ie.Field
	want := fmt.Sprintf("printable text of at most %d bytes", lock.MaxIdentityFieldLen)
	if ie.Field == "build" {
		want = "a non-negative integer that grows with every build of the branch"
	}
	switch source {
	case flag:
		return cmdutil.FlagErrorf("invalid identity: %s: set %s to %s", ie.Describe(flag), flag, want)
	case "":
		return cmdutil.FlagErrorf("invalid identity: %s: set %s to %s", ie.Describe(ie.Field), flag, want)
	}
	return cmdutil.FlagErrorf("invalid identity: %s (from %s): fix the variable, or override it with %s set to %s", ie.Describe(ie.Field), source, flag, want)
}

// pod resolves --pod, defaulting to the pod lockctl runs in.
func (l *lockFlags) pod(f *Factory) *lock.PodRef {
	podNS, podName, inPod := f.InPod()
	switch {
	case l.Pod == "" && inPod:
		return &lock.PodRef{Namespace: podNS, Name: podName}
	case l.Pod == "":
		return nil
	}
	if ns, name, ok := strings.Cut(l.Pod, "/"); ok {
		return &lock.PodRef{Namespace: ns, Name: name}
	}
	ns := podNS
	if ns == "" {
		ns, _ = f.Namespace()
	}
	return &lock.PodRef{Namespace: ns, Name: l.Pod}
}
