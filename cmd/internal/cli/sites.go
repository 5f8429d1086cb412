package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// AddContextsFlag binds --contexts: the kubeconfig contexts whose clusters
// the command's locks are in, one hold across them (docs/clusters.md).
func (l *LockFlags) AddContextsFlag(fs *pflag.FlagSet) {
	fs.StringSliceVar(&l.Contexts, "contexts", l.Contexts,
		"kubeconfig contexts, comma-separated, whose clusters the locks are in: all or nothing, context then namespace (default: the current context alone)")
}

// validateContexts checks --contexts: names, each once.
func (l *LockFlags) validateContexts() error {
	for i, name := range l.Contexts {
		switch {
		case strings.TrimSpace(name) == "":
			return cmdutil.FlagErrorf("invalid --contexts %q: an empty context name: give kubeconfig contexts separated by commas", strings.Join(l.Contexts, ","))
		case slices.Contains(l.Contexts[:i], name):
			return cmdutil.FlagErrorf("invalid --contexts: context %q is named twice", name)
		}
	}
	return nil
}

// Sites are the lock clients of a command, one per cluster: the current
// context's alone, or one per context of --contexts, each on its own
// cluster's client and API server clock and carrying its context
// (lock.Options.Context), in the order given.
type Sites struct {
	Locks []*lock.Client
	// users tell each cluster's Kubernetes user (Request.Callbacks.LookupUser).
	users []func(context.Context) record.User
}

// Across reports whether the locks are in clusters named by --contexts.
func (s Sites) Across() bool { return s.Locks[0].Context() != "" }

// Contexts returns the contexts of --contexts, in the order given; nil
// for the current context alone.
func (s Sites) Contexts() []string {
	if !s.Across() {
		return nil
	}
	out := make([]string, len(s.Locks))
	for i, c := range s.Locks {
		out[i] = c.Context()
	}
	return out
}

// Parts returns the locks of targets in every cluster, one hold
// (lock.PartsFor), each request asking its own cluster for the caller's
// user.
func (s Sites) Parts(base lock.Request, targets []string) []lock.Part {
	var parts []lock.Part
	for i, c := range s.Locks {
		req := base
		req.Callbacks.LookupUser = s.users[i]
		parts = append(parts, lock.PartsFor([]*lock.Client{c}, req, targets)...)
	}
	return parts
}

// Of returns the client of the cluster of context ("" for the current
// one), nil when there is none.
func (s Sites) Of(context string) *lock.Client {
	for _, c := range s.Locks {
		if c.Context() == context {
			return c
		}
	}
	return nil
}

// NewSites returns the lock clients of a command (Sites): with
// --contexts, one per context, each judging expiries on its own API
// server's clock, recording Events in its own cluster, in its lock
// namespace (--lock-namespace, else -n, else the pod's, else the
// context's); otherwise NewLockClient's alone.
func NewSites(f *Factory, l *LockFlags, o LockClientOptions) (Sites, error) {
	if err := l.validateContexts(); err != nil {
		return Sites{}, err
	}
	if len(l.Contexts) == 0 {
		c, err := NewLockClient(f, l, o)
		if err != nil {
			return Sites{}, err
		}
		return Sites{Locks: []*lock.Client{c}, users: []func(context.Context) record.User{KubeUser(f)}}, nil
	}
	var s Sites
	for _, name := range l.Contexts {
		cs, clk, err := f.ContextClient(name)
		if err != nil {
			return Sites{}, fmt.Errorf("context %q: %w", name, err)
		}
		ns, err := l.lockNamespaceIn(f, name, o.AllNamespaces)
		if err != nil {
			return Sites{}, err
		}
		events := o.Events
		if events == nil {
			events = f.EventRecorder(cs)
		}
		s.Locks = append(s.Locks, lock.New(cs.CoreV1(), cs.CoreV1(), ns, clk, lock.Options{
			Nodes: cs.CoreV1(), Log: f.Logger(), Events: events, Context: name,
		}))
		s.users = append(s.users, kubeUserOf(f, cs))
	}
	return s, nil
}

// lockNamespaceIn is the lock namespace in the cluster of context name:
// --lock-namespace, else -n, else the pod's, else the context's; "" (all)
// with all.
func (l *LockFlags) lockNamespaceIn(f *Factory, name string, all bool) (string, error) {
	switch {
	case all:
		return "", nil
	case l.LockNamespace != "":
		return l.LockNamespace, nil
	case f.ConfigFlags.Namespace != "":
		return f.ConfigFlags.Namespace, nil
	}
	if ns, _, ok := f.InPod(); ok {
		return ns, nil
	}
	return f.ContextNamespace(name)
}

// kubeUserOf is KubeUser for the cluster of cs.
func kubeUserOf(f *Factory, cs kube.Interface) func(context.Context) record.User {
	return askedOnce(f, func(ctx context.Context) (record.User, error) { return enforce.WhoAmI(ctx, cs.AuthenticationV1()) })
}

// EachSite calls fn for the client of every cluster of s at once, and
// returns their errors, each naming its context, joined: one cluster that
// does not answer keeps no other waiting.
func EachSite(s Sites, fn func(c *lock.Client) error) error {
	errs := make([]error, len(s.Locks))
	var wg sync.WaitGroup
	for i, c := range s.Locks {
		wg.Go(func() {
			if err := fn(c); err != nil && c.Context() != "" {
				errs[i] = fmt.Errorf("context %q: %w", c.Context(), err)
			} else {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ReleaseAcross releases the locks of targets in every cluster of s for
// r, as release does in one (lock.Client.ReleaseAll), the clusters at
// once, and says on f's ErrOut what became of each. token, when set, is
// the composite token acquire printed (lock.Tokens): each cluster's lock
// is released by its own part. A cluster that cannot be reached does not
// keep the others from being released: its locks are named, with what
// becomes of them, and the error names them all.
func ReleaseAcross(ctx context.Context, f *Factory, s Sites, targets []string, r Releaser, force bool, token string) error {
	var tokens lock.Tokens
	if token != "" {
		var err error
		if tokens, err = parseTokensFor(token, s.Contexts()); err != nil {
			return err
		}
	}
	results := make([][]*lock.Released, len(s.Locks))
	failed := make([]error, len(s.Locks))
	var wg sync.WaitGroup
	for i, c := range s.Locks {
		wg.Go(func() {
			o := lock.ReleaseOptions{Force: force, By: r.Breaker, Token: tokens[c.Context()], Job: r.Job}
			results[i], failed[i] = c.ReleaseAll(ctx, targets, r.Identity, o)
		})
	}
	wg.Wait()
	var unreached []string
	for i, c := range s.Locks {
		for j, res := range results[i] {
			if res != nil {
				printers.Released(f.IOStreams.ErrOut, lock.Where(c.Context(), targets[j]), r.Identity, res, tokens[c.Context()])
			}
		}
		if failed[i] != nil {
			unreached = append(unreached, c.Context())
			fmt.Fprintf(f.IOStreams.ErrOut, "%v\n", failed[i])
		}
	}
	if len(unreached) == 0 {
		return nil
	}
	return fmt.Errorf("locks %q not released in contexts %q (said above): each stays held until its expiry (acquire's --ttl), "+
		"or until released again with lockctl release %s --contexts %s", targets, unreached, strings.Join(targets, " "), strings.Join(unreached, ","))
}

// parseTokensFor reads token, the composite token of a hold in the
// clusters of contexts; a token without a part for one of them is a
// usage error.
func parseTokensFor(token string, contexts []string) (lock.Tokens, error) {
	if !lock.IsComposite(token) {
		return nil, cmdutil.FlagErrorf("--token %q is one cluster's token: with --contexts give the composite token acquire printed (CONTEXT=TOKEN,...)", token)
	}
	tokens, err := lock.ParseTokens(token)
	if err != nil {
		return nil, cmdutil.FlagErrorf("invalid --token: %v", err)
	}
	for _, name := range contexts {
		if _, ok := tokens.For(name); !ok {
			return nil, cmdutil.FlagErrorf("--token has no token for context %q: give the composite token acquire printed for --contexts %s", name, strings.Join(contexts, ","))
		}
	}
	return tokens, nil
}

// TokenToStamp returns the fencing token lockctl stamp writes for token:
// token itself, or, for a composite token (a hold across clusters,
// lock.Tokens), the part of the cluster the manifests go to: --context,
// else the kubeconfig's current context. A composite token without that
// part is a usage error naming the contexts it has.
func TokenToStamp(f *Factory, token string) (string, error) {
	if !lock.IsComposite(token) {
		return token, nil
	}
	tokens, err := lock.ParseTokens(token)
	if err != nil {
		return "", cmdutil.FlagErrorf("invalid --token: %v", err)
	}
	name := f.ConfigFlags.Context
	if name == "" {
		if raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig(); err == nil {
			name = raw.CurrentContext
		}
	}
	if tok, ok := tokens.For(name); ok {
		return tok, nil
	}
	have := slices.Sorted(maps.Keys(tokens))
	if name == "" {
		return "", cmdutil.FlagErrorf("the token is a hold's across contexts %q: name the cluster the manifests go to with --context", have)
	}
	return "", cmdutil.FlagErrorf("the token has no part for context %q, only for %q: name the cluster the manifests go to with --context", name, have)
}
