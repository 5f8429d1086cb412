package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/preflight"
	"github.com/lockctl/lockctl/scheduler"
)

// Explain turns err into one line a person can act on, and a hint saying
// what to do. API and network errors lose their wrapping; lockctl's own
// errors keep their message.
func Explain(err error) (msg, hint string) {
	var (
		superseded     *lock.SupersededError
		cancelled      *lock.CancelRequestedError
		timeout        *lock.TimeoutError
		notHolder      *lock.NotHolderError
		tokenErr       *lock.TokenError
		held           *lock.HeldError
		queueFull      *lock.QueueFullError
		noJob          *JobNotFoundError
		noConfig       *kube.NoKubeconfigError
		untrusted      *kube.UntrustedServerError
		unknownContext *kube.UnknownContextError
		invalid        *record.InvalidError
		notALock       *record.NotALockError
		noNamespace    *lock.NamespaceError
		version        *record.VersionError
		flagErr        *FlagError
		status         apierrors.APIStatus
		urlErr         *url.Error
		away           *scheduler.UnreachableClustersError
		missing        *preflight.MissingError
		target         *enforce.TargetError
		userless       *enforce.UserlessHoldError
	)
	switch {
	case errors.As(err, &flagErr):
		return err.Error(), ""
	case errors.As(err, &missing):
		return err.Error(), "ask for those verbs on those resources in a Role bound to you (docs/rbac.md lists what lockctl needs); nothing was written"
	case errors.As(err, &away):
		return err.Error(), "the next pass drives their jobs once they answer; `lockctl get clusters` shows what each last answered"
	case errors.As(err, &superseded), errors.As(err, &cancelled):
		return err.Error(), "nothing to do: the newer build deploys instead of this one"
	case errors.As(err, &timeout) && timeout.Freeze.FromWindow():
		return err.Error(), "a recurring freeze window (ConfigMap " + record.FreezeWindowsName + "): wait for it to end, or in an emergency acquire with --ignore-freeze (recorded)"
	case errors.As(err, &timeout) && timeout.Freeze != nil:
		return err.Error(), fmt.Sprintf("wait for the freeze to end, lift it with `lockctl unfreeze %s`, or in an emergency acquire with --ignore-freeze (recorded)", timeout.Target)
	case errors.As(err, &timeout):
		return err.Error(), fmt.Sprintf("wait longer with --timeout, or see the queue with `lockctl status %s`", timeout.Target)
	case errors.As(err, &noJob):
		return err.Error(), fmt.Sprintf("list the jobs there with `lockctl get jobs -n %s`", noJob.Namespace)
	case errors.As(err, &queueFull):
		return err.Error(), fmt.Sprintf("see the queue with `lockctl status %s`; a queue this long is served one holder at a time, so fewer waiting builds (--policy newest keeps one per branch) or more locks suit it better", queueFull.Target)
	case errors.As(err, &held):
		return err.Error(), fmt.Sprintf("try again later, or wait for it: `lockctl acquire %s --timeout 10m`", held.Target)
	case errors.As(err, &tokenErr):
		return err.Error(), fmt.Sprintf("give the token `lockctl acquire` printed for this hold; to break the lock whoever holds it, run `%s`",
			forceReleaseCommand(tokenErr.Target, tokenErr.Namespace))
	case errors.As(err, &notHolder) && notHolder.OtherJob():
		return err.Error(), fmt.Sprintf("another job of a build releases its hold by the token acquire printed there: `lockctl release %s --token TOKEN`", notHolder.Target)
	case errors.As(err, &notHolder):
		return err.Error(), fmt.Sprintf("only its holder releases it; to break it, run `%s` (it says whose lock it broke)",
			forceReleaseCommand(notHolder.Target, notHolder.Namespace))
	case errors.As(err, &invalid):
		return err.Error(), fmt.Sprintf("inspect it with `kubectl get configmap -n %s %s -o yaml`; remove it with `%s`",
			invalid.Namespace, invalid.Name, forceReleaseCommand(invalid.Target, invalid.Namespace))
	case errors.As(err, &version):
		return err.Error(), fmt.Sprintf("upgrade lockctl to a release that reads record version %s; to remove the lock anyway, run `%s`",
			version.Found, forceReleaseCommand(version.Target, version.Namespace))
	case errors.As(err, &noNamespace):
		return err.Error(), fmt.Sprintf("create it with `kubectl create namespace %s`, or keep locks in another namespace with --lock-namespace", noNamespace.Namespace)
	case errors.As(err, &notALock):
		return err.Error(), "lockctl leaves it alone: rename or delete that configmap, or keep locks elsewhere with --lock-namespace"
	case errors.As(err, &target):
		return err.Error(), "enforce the namespaces your deploys write; the lock namespace keeps every target's lock"
	case errors.As(err, &userless):
		return err.Error(), fmt.Sprintf("see the hold with `lockctl status %s`; the next holder records its user", userless.Target)
	case errors.As(err, &status) && apierrors.IsForbidden(err) && strings.Contains(status.Status().Message, "lockctl refused"):
		return status.Status().Message, "the API server enforces this lock (lockctl enforce): docs/enforcement.md says what each refusal means and who may do what"
	case errors.As(err, &status) && apierrors.IsForbidden(err):
		return "permission denied: " + status.Status().Message,
			"ask for that verb on that resource in a Role bound to you (docs/rbac.md lists what lockctl needs)"
	case errors.As(err, &status) && apierrors.IsUnauthorized(err):
		return "the API server rejected the credentials: " + status.Status().Message,
			"log in again, or check the user of the current context in your kubeconfig"
	case errors.Is(err, context.DeadlineExceeded):
		// Not a wait (those are *lock.TimeoutError or ErrWaitTimeout): a
		// bounded step whose time ran out. Say which, not "context deadline
		// exceeded".
		return deadlineMessage(err), "the API server did not answer in time; check that it is healthy and try again"
	case errors.As(err, &noConfig):
		return noConfig.Error(), "point --kubeconfig or KUBECONFIG at a kubeconfig file, or run lockctl in a pod with a service account"
	case errors.As(err, &untrusted):
		return untrusted.Error(), fmt.Sprintf("check the certificate-authority (or certificate-authority-data) of the cluster of context %q in your kubeconfig "+
			"(`kubectl config view --minify --context %s`); lockctl offers no --insecure-skip-tls-verify", untrusted.Context, untrusted.Context)
	case errors.As(err, &urlErr) && isNetError(urlErr.Err):
		return fmt.Sprintf("cannot reach the API server at %s: %s", hostOf(urlErr.URL), kube.RootCause(urlErr.Err)),
			"check that the cluster runs and that --context/--kubeconfig point at it"
	case clientcmd.IsEmptyConfig(err):
		return "no kubeconfig found", "set KUBECONFIG or --kubeconfig, or run lockctl inside a pod"
	case errors.As(err, &unknownContext):
		return err.Error(), contextHint(unknownContext)
	case clientcmd.IsContextNotFound(err) || strings.Contains(err.Error(), "context was not found"):
		return err.Error(), "list contexts with `kubectl config get-contexts`"
	}
	return err.Error(), ""
}

// JobNotFoundError is a job named on the command line that does not exist.
type JobNotFoundError struct{ Name, Namespace string }

func (e *JobNotFoundError) Error() string {
	return fmt.Sprintf("job %q not found in namespace %q", e.Name, e.Namespace)
}

// Is matches job.ErrNotFound.
func (e *JobNotFoundError) Is(target error) bool { return target == job.ErrNotFound }

// JobsNotFound is the error of the jobs named on the command line that do
// not exist in namespace ns: nil for none, a *JobNotFoundError for one.
func JobsNotFound(missing []string, ns string) error {
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return &JobNotFoundError{Name: missing[0], Namespace: ns}
	}
	q := make([]string, len(missing))
	for i, n := range missing {
		q[i] = strconv.Quote(n)
	}
	return fmt.Errorf("jobs %s not found in namespace %q", strings.Join(q, ", "), ns)
}

// JobLookupError makes a job.ErrNotFound for the job called name in
// namespace ns a *JobNotFoundError; other errors pass unchanged.
func JobLookupError(err error, name, ns string) error {
	if errors.Is(err, job.ErrNotFound) {
		return &JobNotFoundError{Name: name, Namespace: ns}
	}
	return err
}

// deadlineMessage is err's message with the request that ran out of time
// named by its server, and "context deadline exceeded" said plainly.
func deadlineMessage(err error) string {
	msg := err.Error()
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		msg = strings.Replace(msg, urlErr.Error(), "no answer in time from the API server at "+hostOf(urlErr.URL), 1)
	}
	return strings.ReplaceAll(msg, context.DeadlineExceeded.Error(), "timed out")
}

// forceReleaseCommand is the command that breaks target's lock in the lock
// namespace ns; TARGET stands in for a target that is not known.
func forceReleaseCommand(target, ns string) string {
	if target == "" {
		target = "TARGET"
	}
	return fmt.Sprintf("lockctl release %s --lock-namespace %s --force", target, ns)
}

func isNetError(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &netErr) || errors.As(err, &opErr) || errors.As(err, &dnsErr)
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}

// contextHint says what to do about a context the kubeconfig lacks.
func contextHint(e *kube.UnknownContextError) string {
	if e.Flag == "--context" {
		return "give --context one of the contexts listed, or leave it out for the current context"
	}
	return "fix the ALIAS=CONTEXT of --build-cluster (or buildClusters in --config); `kubectl config get-contexts` lists the contexts"
}

// KubeconfigError keeps kubeconfig problems recognisable by Explain. A
// *UsageError (a --context that is not there) already says what is wrong
// and passes unchanged.
func KubeconfigError(err error) error {
	var usage *UsageError
	if errors.As(err, &usage) {
		return err
	}
	return fmt.Errorf("load kubeconfig: %w", err)
}

// UsageIfInvalid turns a bad job or config file into a usage error (exit 2).
func UsageIfInvalid(err error) error {
	if errors.Is(err, job.ErrInvalid) || errors.Is(err, scheduler.ErrConfig) {
		return &UsageError{Err: err}
	}
	return err
}
