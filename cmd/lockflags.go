package cmd

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

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
// the current Unix time as build number). A field lock.Identity.Validate
// refuses is a *FlagError naming the flag or environment variable it came
// from.
func (l *lockFlags) identity(f *Factory) (lock.Identity, error) {
	id, src := identityFromEnv(f.Getenv)
	for _, o := range []struct {
		name, flag string
		dst        *string
	}{
		{"owner", l.Owner, &id.Owner}, {"repo", l.Repo, &id.Repo}, {"branch", l.Branch, &id.Branch}, {"build", l.Build, &id.Build},
	} {
		if o.flag != "" {
			*o.dst = o.flag
			src[o.name] = "--" + o.name
		}
	}
	if id.Owner == "" {
		id.Owner, src["owner"] = localUser(f.Getenv), ""
		if f.Getenv("USER") != "" {
			src["owner"] = "$USER"
		}
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
		var ie *lock.IdentityError
		if !errors.As(err, &ie) {
			return id, flagErrorf("invalid identity: %v", err)
		}
		return id, identityError(ie, src[ie.Field])
	}
	return id, l.validatePod()
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
			return flagErrorf("invalid --pod %q: namespace: %s", l.Pod, errs[0])
		}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return flagErrorf("invalid --pod %q: name: %s", l.Pod, errs[0])
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
		return flagErrorf("invalid identity: %s: set %s to %s", ie.Describe(flag), flag, want)
	case "":
		return flagErrorf("invalid identity: %s: set %s to %s", ie.Describe(ie.Field), flag, want)
	}
	return flagErrorf("invalid identity: %s (from %s): fix the variable, or override it with %s set to %s", ie.Describe(ie.Field), source, flag, want)
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

// identityFromEnv reads the identity a CI system exposes, and names the
// environment variable each field came from ("$REPO_OWNER"). Prow and Jenkins
// X set REPO_OWNER, REPO_NAME, BRANCH_NAME and BUILD_NUMBER (Tekton tasks
// follow the same convention when their pipeline passes those
// parameters as environment); GitHub Actions and GitLab CI have their own.
func identityFromEnv(getenv func(string) string) (lock.Identity, map[string]string) {
	var id lock.Identity
	src := map[string]string{}
	// set sets *dst from the first of vars that is set.
	set := func(field string, dst *string, vars ...string) {
		for _, v := range vars {
			if val := getenv(v); val != "" {
				*dst, src[field] = val, "$"+v
				return
			}
		}
	}
	switch {
	case getenv("REPO_OWNER") != "" || getenv("REPO_NAME") != "":
		set("owner", &id.Owner, "REPO_OWNER")
		set("repo", &id.Repo, "REPO_NAME")
		set("branch", &id.Branch, "BRANCH_NAME", "PULL_BASE_REF")
		set("build", &id.Build, "BUILD_NUMBER", "BUILD_ID")
	case getenv("GITHUB_ACTIONS") == "true":
		id.Owner, id.Repo, _ = strings.Cut(getenv("GITHUB_REPOSITORY"), "/")
		src["owner"], src["repo"] = "$GITHUB_REPOSITORY", "$GITHUB_REPOSITORY"
		set("branch", &id.Branch, "GITHUB_REF_NAME")
		set("build", &id.Build, "GITHUB_RUN_NUMBER")
	case getenv("GITLAB_CI") == "true":
		set("owner", &id.Owner, "CI_PROJECT_NAMESPACE")
		set("repo", &id.Repo, "CI_PROJECT_NAME")
		set("branch", &id.Branch, "CI_COMMIT_REF_NAME")
		set("build", &id.Build, "CI_PIPELINE_IID")
	}
	return id, src
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
