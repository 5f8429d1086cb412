package lock

import (
	"context"

	"github.com/lockctl/lockctl/lock/record"
)

// Names the package's external tests (package lock_test) use that the
// package does not export: its front door holds only what other packages
// use (ADR 0095).
type (
	// windowError is windowError.
	WindowError = record.WindowError
)

// errUnconfirmed is errUnconfirmed.
var ErrUnconfirmed = errUnconfirmed

// AcquireAll is Client.acquireAll, for the external tests.
func AcquireAll(c *Client, ctx context.Context, reqs []Request) ([]*Held, error) {
	return c.acquireAll(ctx, reqs)
}
