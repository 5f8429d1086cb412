package cli

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"

	"github.com/lockctl/lockctl/lock/record"
)

// TestKubeUser: the user a SelfSubjectReview names, and "" with the reason
// logged at debug level when the review is refused, so that acquire goes
// on without it; asked once however often the lock asks.
func TestKubeUser(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		whoAmI  func(context.Context) (record.User, error)
		want    record.User
		wantLog string
	}{
		{name: "known", whoAmI: func(context.Context) (record.User, error) { return record.User{Name: "alice"}, nil }, want: record.User{Name: "alice"}},
		{
			name: "refused",
			whoAmI: func(context.Context) (record.User, error) {
				return record.User{}, errors.New(`selfsubjectreviews is forbidden`)
			},
			wantLog: "the Kubernetes user is not known",
		},
		{name: "no way to ask"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			l := logrus.New()
			l.SetOutput(&logs)
			l.SetLevel(logrus.DebugLevel)
			asked := 0
			f := &Factory{Log: logrus.NewEntry(l)}
			if tt.whoAmI != nil {
				f.WhoAmI = func(ctx context.Context) (record.User, error) { asked++; return tt.whoAmI(ctx) }
			}
			lookup := KubeUser(f)
			if tt.whoAmI == nil {
				assert.Nil(t, lookup)
				return
			}
			assert.Equal(t, tt.want, lookup(t.Context()))
			assert.Equal(t, tt.want, lookup(t.Context()))
			assert.Equal(t, 1, asked, "asked once")
			if tt.wantLog != "" {
				assert.Contains(t, logs.String(), tt.wantLog)
				assert.Contains(t, logs.String(), "selfsubjectreviews is forbidden")
			}
		})
	}
}
