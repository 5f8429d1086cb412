package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/identity"
	"github.com/lockctl/lockctl/lock/record"
)

// LockFlags are the flags shared by the commands that touch locks: the
// holder identity, --pod and --lock-namespace.
type LockFlags struct {
	Owner, Repo, Branch, Build string
	Pod                        string
	LockNamespace              string
	// Contexts are the kubeconfig contexts of --contexts, whose clusters
	// the locks are in (NewSites); nil means the current context alone.
	Contexts []string

	// PerProcess (not a flag) makes the local build lockctl's process ID instead of the
	// terminal session: lockctl run holds its lock for one process only,
	// and two runs from one shell must queue, not share the lock.
	PerProcess bool
}

// AddIdentityFlags binds --owner, --repo, --branch, --build and --pod.
func (l *LockFlags) AddIdentityFlags(fs *pflag.FlagSet) {
	fs.StringVar(&l.Owner, "owner", l.Owner, "repository owner of this build (default: from the CI environment, else USER@HOST)")
	fs.StringVar(&l.Repo, "repo", l.Repo, "repository of this build (default: from the CI environment, else the git checkout's origin, else \"local\")")
	fs.StringVar(&l.Branch, "branch", l.Branch, "branch of this build (default: from the CI environment, else the git checkout's branch, else \"local\")")
	fs.StringVar(&l.Build, "build", l.Build, "build number, growing with every build of the branch (default: from the CI environment, else this terminal session, served first come first served)")
	fs.StringVar(&l.Pod, "pod", l.Pod, "pod the holder runs in, as NAME or NAMESPACE/NAME (default: this pod, when lockctl runs in one)")
}

// AddLockNamespaceFlag binds --lock-namespace.
func (l *LockFlags) AddLockNamespaceFlag(fs *pflag.FlagSet) {
	fs.StringVar(&l.LockNamespace, "lock-namespace", l.LockNamespace, "namespace holding the lock objects (default: -n, else this pod's namespace, else the context's)")
}

// ResolveLockNamespace resolves --lock-namespace: the flag, else -n, else
// the pod lockctl runs in, else the context's namespace.
func (l *LockFlags) ResolveLockNamespace(f *Factory) (string, error) {
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

// Identity resolves the holder identity: flags win over the CI
// environment, which wins over the local defaults (identity.Resolve: user@host,
// the git checkout's repository and branch, the terminal session as build),
// with the CI job the command runs in when the CI system says. A field
// lock.Identity.Validate or lock.CIJob.ValidateJob refuses is a
// *cmdutil.FlagError naming the flag or environment variable it came from.
func (l *LockFlags) Identity(f *Factory) (identity.Holder, error) {
	flags := record.Identity{Owner: l.Owner, Repo: l.Repo, Branch: l.Branch, Build: l.Build}
	h := identity.Resolve(flags, f.Getenv, f.LocalEnv, l.PerProcess)
	err := h.Identity.Validate()
	if err == nil {
		err = h.Job.ValidateJob()
	}
	if err != nil {
		var ie *record.IdentityError
		if !errors.As(err, &ie) {
			return h, cmdutil.FlagErrorf("invalid identity: %v", err)
		}
		return h, identityError(ie, h.Source[ie.Field])
	}
	return h, l.validatePod()
}

// validatePod checks --pod, NAME or NAMESPACE/NAME (lock.ParsePodRef).
func (l *LockFlags) validatePod() error {
	if l.Pod == "" {
		return nil
	}
	if _, err := record.ParsePodRef(l.Pod); err != nil {
		return cmdutil.FlagErrorf("invalid --pod %q: %v", l.Pod, err)
	}
	return nil
}

// identityError says which identity field is wrong, where it came from and
// what to do: source is the flag ("--owner"), the environment variable
// ("$REPO_OWNER") or "" for a default.
func identityError(ie *record.IdentityError, source string) error {
	flag := "--" + ie.Field
	want := fmt.Sprintf("printable text of at most %d bytes", record.MaxIdentityFieldLen)
	if ie.Field == "build" {
		want = "a non-negative integer that grows with every build of the branch"
	}
	switch ie.Field {
	case "sequence", "job", "jobID":
		// NOTE: no flag sets these: they come from the CI system alone.
		return cmdutil.FlagErrorf("invalid identity: %s (from %s): fix the variable", ie.Describe(ie.Field), source)
	}
	switch source {
	case flag:
		return cmdutil.FlagErrorf("invalid identity: %s: set %s to %s", ie.Describe(flag), flag, want)
	case "":
		return cmdutil.FlagErrorf("invalid identity: %s: set %s to %s", ie.Describe(ie.Field), flag, want)
	}
	return cmdutil.FlagErrorf("invalid identity: %s (from %s): fix the variable, or override it with %s set to %s", ie.Describe(ie.Field), source, flag, want)
}

// PodRef resolves --pod, defaulting to the pod lockctl runs in; a bare
// NAME is in that pod's namespace, else the context's. Identity has
// checked --pod.
func (l *LockFlags) PodRef(f *Factory) *record.PodRef {
	podNS, podName, inPod := f.InPod()
	switch {
	case l.Pod == "" && inPod:
		return &record.PodRef{Namespace: podNS, Name: podName}
	case l.Pod == "":
		return nil
	}
	ref, _ := record.ParsePodRef(l.Pod)
	if ref.Namespace != "" {
		return &ref
	}
	ref.Namespace = podNS
	if ref.Namespace == "" {
		ref.Namespace, _ = f.Namespace()
	}
	return &ref
}
