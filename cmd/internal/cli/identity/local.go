package identity

import (
	"bufio"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/lock/record"
)

// LocalEnv is what lockctl knows about the machine and shell it runs in,
// for a holder identity outside CI.
type LocalEnv struct {
	// User is the login name; Host the host name.
	User, Host string
	// Dir is the working directory, where the git checkout is looked for.
	Dir string
	// TerminalSession is the terminal session (the Unix session ID of the shell
	// lockctl was started from): the same for every command of one shell,
	// different between two terminals.
	TerminalSession int
	// PID is lockctl's own process ID.
	PID int
}

// ReadLocalEnv reads the local environment of this process; getenv
// supplies $USER.
func ReadLocalEnv(getenv func(string) string) LocalEnv {
	env := LocalEnv{User: LocalUser(getenv), PID: os.Getpid(), TerminalSession: terminalSessionID()}
	env.Host, _ = os.Hostname()
	if env.Host == "" {
		env.Host = "localhost"
	}
	env.Host, _, _ = strings.Cut(env.Host, ".")
	env.Dir, _ = os.Getwd()
	return env
}

// Holder is who a command holds a lock as.
type Holder struct {
	record.Identity
	// Job is the CI job the command runs in, when the CI system says
	// (CI.Job); zero otherwise.
	Job record.CIJob
	// RunURL is the web page of the CI run lockctl runs in (CI.RunURL);
	// "" outside CI or when the CI system gives none.
	RunURL string
	// Unordered is true when the build only tells holders apart (a local
	// or hashed build): such claims are served first come, first served.
	Unordered bool
	// Source says where each field came from, by field name ("owner",
	// "sequence", "job"): "--owner" for a flag, "$VAR" for an environment
	// variable, "" for a default.
	Source map[string]string
}

// Resolve returns the holder identity: a field set in flags (the
// --owner, --repo, --branch and --build flags) wins over the CI environment
// read through getenv, which wins over the local defaults of local()
// (localIdentity), called only when a field is still empty. A --build
// drops the sequence the environment gives (the number is the flag's, not
// the CI system's counter). The identity is not validated.
func Resolve(flags record.Identity, getenv func(string) string, local func() LocalEnv, perProcess bool) Holder {
	id, src, ci := FromEnv(getenv)
	unordered := ci.Unordered
	for _, o := range []struct {
		name, flag string
		dst        *string
	}{
		{"owner", flags.Owner, &id.Owner}, {"repo", flags.Repo, &id.Repo}, {"branch", flags.Branch, &id.Branch}, {"build", flags.Build, &id.Build},
	} {
		if o.flag != "" {
			*o.dst = o.flag
			src[o.name] = "--" + o.name
		}
	}
	if flags.Build != "" {
		unordered = false
		id.Sequence = ""
		delete(src, "sequence")
	} else if id.Build == "" {
		unordered = true
	}
	if id.Owner == "" || id.Repo == "" || id.Branch == "" || id.Build == "" {
		localIdentity(&id, src, getenv, local(), perProcess)
	}
	return Holder{Identity: id, Job: ci.Job, RunURL: ci.RunURL, Unordered: unordered, Source: src}
}

// LocalUser is the login name: $USER, else the current user's, else
// "local".
func LocalUser(getenv func(string) string) string {
	if u := getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "local"
}

// localIdentity fills the fields of id that neither flags nor CI set, from
// the local environment: owner user@host, repository and branch from the
// git checkout around env.Dir ("local" outside one), and as build the
// terminal session, or with perProcess lockctl's process ID. Such a build
// only tells holders apart; claims with it are served first come, first
// served. src records where each field came from.
func localIdentity(id *record.Identity, src map[string]string, getenv func(string) string, env LocalEnv, perProcess bool) {
	if id.Owner == "" {
		user := env.User
		src["owner"] = ""
		if u := getenv("USER"); u != "" {
			user, src["owner"] = u, "$USER"
		}
		id.Owner = user + "@" + env.Host
	}
	repo, branch := gitCheckout(env.Dir)
	if id.Repo == "" {
		id.Repo, src["repo"] = orLocal(repo), ""
	}
	if id.Branch == "" {
		id.Branch, src["branch"] = orLocal(branch), ""
	}
	if id.Build == "" {
		n := env.TerminalSession
		if perProcess || n <= 0 {
			n = env.PID
		}
		id.Build, src["build"] = strconv.Itoa(n), ""
	}
}

// orLocal is s, or "local" when s is empty.
func orLocal(s string) string {
	if s == "" {
		return "local"
	}
	return s
}

// gitCheckout finds the git checkout holding dir and returns its
// repository name (from the origin remote's URL, else the checkout's
// directory name) and current branch (the short commit when detached).
// It reads .git/HEAD and the config itself, so no git binary is needed;
// outside a checkout both are "".
func gitCheckout(dir string) (repo, branch string) {
	if dir == "" {
		return "", ""
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		gitDir, ok := findGitDir(d)
		if ok {
			return gitRepo(gitDir, d), gitBranch(gitDir)
		}
		if parent := filepath.Dir(d); parent == d {
			return "", ""
		}
	}
}

// findGitDir returns the git directory of a checkout rooted at d: d/.git,
// or where a .git file ("gitdir: …", worktrees and submodules) points.
func findGitDir(d string) (string, bool) {
	p := filepath.Join(d, ".git")
	fi, err := os.Stat(p)
	if err != nil {
		return "", false
	}
	if fi.IsDir() {
		return p, true
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return "", false
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(d, target)
	}
	return target, true
}

func gitBranch(gitDir string) string {
	data, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	head := strings.TrimSpace(string(data))
	if ref, ok := strings.CutPrefix(head, "ref:"); ok {
		return strings.TrimPrefix(strings.TrimSpace(ref), "refs/heads/")
	}
	if len(head) > 12 {
		head = head[:12]
	}
	return head
}

// gitRepo names the repository from the origin remote's URL in the config
// (shared by worktrees through commondir), else the checkout directory.
func gitRepo(gitDir, root string) string {
	common := gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	if url := originURL(filepath.Join(common, "config")); url != "" {
		if _, repo := OwnerRepoFromURL(url); repo != "" {
			return repo
		}
	}
	return filepath.Base(root)
}

// originURL reads remote "origin"'s url from a git config file.
func originURL(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	inOrigin := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inOrigin = strings.ReplaceAll(line, " ", "") == `[remote"origin"]`
			continue
		}
		if !inOrigin {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "url" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
