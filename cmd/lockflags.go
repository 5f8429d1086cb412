package cmd

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/lock"
)

// lockFlags are the flags shared by the commands that touch locks.
type lockFlags struct {
	Owner, Repo, Branch, Build string
	Pod                        string
	LockNamespace              string
}

func (l *lockFlags) addIdentityFlags(fs *pflag.FlagSet) {
	fs.StringVar(&l.Owner, "owner", l.Owner, "repository owner of this build (default: from the CI environment)")
	fs.StringVar(&l.Repo, "repo", l.Repo, "repository of this build (default: from the CI environment)")
	fs.StringVar(&l.Branch, "branch", l.Branch, "branch of this build (default: from the CI environment)")
	fs.StringVar(&l.Build, "build", l.Build, "build number, growing with every build of the branch (default: from the CI environment)")
	fs.StringVar(&l.Pod, "pod", l.Pod, "pod the holder runs in, as NAME or NAMESPACE/NAME (default: this pod, when lockctl runs in one)")
}

func (l *lockFlags) addLockNamespaceFlag(fs *pflag.FlagSet) {
	fs.StringVar(&l.LockNamespace, "lock-namespace", l.LockNamespace, "namespace holding the lock objects (default: this pod's namespace, else -n, else the context's)")
}

// lockNamespace resolves --lock-namespace: the flag, else -n, else the pod
// lockctl runs in, else the context's namespace.
func (l *lockFlags) lockNamespace(f *Factory) (string, error) {
	if l.LockNamespace != "" {
		return l.LockNamespace, nil
	}
	if f.ConfigFlags.Namespace != nil && *f.ConfigFlags.Namespace != "" {
		return *f.ConfigFlags.Namespace, nil
	}
	if ns, _, ok := f.InPod(); ok {
		return ns, nil
	}
	return f.Namespace()
}

// identity resolves the holder identity: flags win over the CI
// environment, which wins over the local defaults (user, "local", host,
// the current Unix time as build number).
func (l *lockFlags) identity(f *Factory) (lock.Identity, error) {
	id := identityFromEnv(f.Getenv)
	for _, o := range []struct {
		flag string
		dst  *string
	}{
		{l.Owner, &id.Owner}, {l.Repo, &id.Repo}, {l.Branch, &id.Branch}, {l.Build, &id.Build},
	} {
		if o.flag != "" {
			*o.dst = o.flag
		}
	}
	if id.Owner == "" {
		id.Owner = localUser(f.Getenv)
	}
	if id.Repo == "" {
		id.Repo = "local"
	}
	if id.Branch == "" {
		id.Branch = "local"
	}
	if id.Build == "" {
		id.Build = strconv.FormatInt(f.Clock.Now().Unix(), 10)
	}
	if err := id.Validate(); err != nil {
		return id, flagErrorf("invalid identity: %v (set --owner, --repo, --branch and a numeric --build)", err)
	}
	return id, nil
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

// identityFromEnv reads the identity a CI system exposes. Prow and Jenkins
// X set REPO_OWNER, REPO_NAME, BRANCH_NAME and BUILD_NUMBER (Tekton tasks
// follow the same convention when their pipeline passes those
// parameters as environment); GitHub Actions and GitLab CI have their own.
func identityFromEnv(getenv func(string) string) lock.Identity {
	switch {
	case getenv("REPO_OWNER") != "" || getenv("REPO_NAME") != "":
		build := getenv("BUILD_NUMBER")
		if build == "" {
			build = getenv("BUILD_ID")
		}
		branch := getenv("BRANCH_NAME")
		if branch == "" {
			branch = getenv("PULL_BASE_REF")
		}
		return lock.Identity{Owner: getenv("REPO_OWNER"), Repo: getenv("REPO_NAME"), Branch: branch, Build: build}
	case getenv("GITHUB_ACTIONS") == "true":
		owner, repo, _ := strings.Cut(getenv("GITHUB_REPOSITORY"), "/")
		return lock.Identity{Owner: owner, Repo: repo, Branch: getenv("GITHUB_REF_NAME"), Build: getenv("GITHUB_RUN_NUMBER")}
	case getenv("GITLAB_CI") == "true":
		return lock.Identity{
			Owner: getenv("CI_PROJECT_NAMESPACE"), Repo: getenv("CI_PROJECT_NAME"),
			Branch: getenv("CI_COMMIT_REF_NAME"), Build: getenv("CI_PIPELINE_IID"),
		}
	}
	return lock.Identity{}
}

func localUser(getenv func(string) string) string {
	if u := getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "local"
}

// policyFlag is an enum flag for --policy.
type policyFlag struct{ p *lock.Policy }

func (f policyFlag) String() string { return string(*f.p) }
func (f policyFlag) Type() string   { return "newest|fifo" }
func (f policyFlag) Set(s string) error {
	p, err := lock.ParsePolicy(s)
	if err != nil {
		return err
	}
	*f.p = p
	return nil
}

// outputFlag is an enum flag for -o.
type outputFlag struct {
	v       *string
	allowed []string
}

func (f outputFlag) String() string { return *f.v }
func (f outputFlag) Type() string   { return strings.Join(f.allowed, "|") }
func (f outputFlag) Set(s string) error {
	for _, a := range f.allowed {
		if s == a {
			*f.v = s
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(f.allowed, ", "))
}

func addOutputFlag(fs *pflag.FlagSet, v *string, allowed ...string) {
	fs.VarP(outputFlag{v: v, allowed: allowed}, "output", "o", "output format: "+strings.Join(allowed, ", "))
}

// humanDuration renders d the way kubectl renders ages: 42s, 5m10s, 3h4m.
func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		s := d.Round(time.Second).String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		return s
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
