package cli

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/notify"
)

// NotifyFlags are lockctl reconcile's webhook notifications of the locks
// of its lock namespace (package notify): --notify-webhook,
// --notify-format, --notify-events and --notify-freeze-ahead.
type NotifyFlags struct {
	// Webhook is the URL called; "" sends nothing. Take it from
	// LOCKCTL_NOTIFY_WEBHOOK, set from a Secret, when it holds a secret.
	Webhook string
	// Format is notify.FormatCloudEvents or notify.FormatSlack.
	Format string
	// Events are the kinds sent (notify.Kinds).
	Events []string
	// FreezeAhead is how long before a freeze window starts it is told.
	FreezeAhead time.Duration
}

// NewNotifyFlags returns the group with its defaults: CloudEvents, every
// kind, a freeze told 15 minutes ahead.
func NewNotifyFlags() NotifyFlags {
	return NotifyFlags{Format: notify.FormatCloudEvents, Events: notify.Kinds(), FreezeAhead: notify.DefaultFreezeAhead}
}

// AddFlags binds the group.
func (n *NotifyFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&n.Webhook, "notify-webhook", n.Webhook, "call this URL (http or https) on the locks' changes: a turn, a release, a hold past its p90, a freeze window to come, break-glass; several replicas send each event once")
	fs.StringVar(&n.Format, "notify-format", n.Format, "body of the webhook calls: cloudevents (a CloudEvent, structured JSON) or slack ({\"text\": ...})")
	fs.StringSliceVar(&n.Events, "notify-events", n.Events, "the events to send: "+strings.Join(notify.Kinds(), ", "))
	fs.DurationVar(&n.FreezeAhead, "notify-freeze-ahead", n.FreezeAhead, "how long before a freeze window starts it is told")
}

// Validate checks the URL, the format and the events.
func (n *NotifyFlags) Validate() error {
	if n.Webhook == "" {
		return nil
	}
	if u, err := url.Parse(n.Webhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cmdutil.FlagErrorf("--notify-webhook must be an http or https URL")
	}
	if n.Format != notify.FormatCloudEvents && n.Format != notify.FormatSlack {
		return cmdutil.FlagErrorf("--notify-format must be cloudevents or slack, got %q", n.Format)
	}
	for _, e := range n.Events {
		if !slices.Contains(notify.Kinds(), e) {
			return cmdutil.FlagErrorf("--notify-events: unknown event %q: use %s", e, strings.Join(notify.Kinds(), ", "))
		}
	}
	if n.FreezeAhead <= 0 {
		return cmdutil.FlagErrorf("--notify-freeze-ahead must be positive, got %s", n.FreezeAhead)
	}
	return nil
}

// Notifier returns the notifier of locks' lock namespace the flags
// describe, nil without --notify-webhook. It names its replica by the
// pod's name (HOSTNAME), reads the freeze windows with locks and judges
// time on the lock clock.
func (n *NotifyFlags) Notifier(f *Factory, locks *lock.Client) (*notify.Notifier, error) {
	if n.Webhook == "" {
		return nil, nil
	}
	cs, err := f.Clientset()
	if err != nil {
		return nil, err
	}
	return notify.New(cs.CoreV1(), locks.Namespace(), notify.Options{
		URL: n.Webhook, Format: n.Format, Kinds: n.Events, FreezeAhead: n.FreezeAhead,
		Replica: f.Getenv("HOSTNAME"), Clock: f.LockClock(), Log: f.Logger(),
		Windows: func(ctx context.Context) ([]record.FreezeWindow, error) {
			if err := locks.LoadFreezeWindows(ctx); err != nil {
				return nil, err
			}
			return locks.FreezeWindows(), nil
		},
	}), nil
}
