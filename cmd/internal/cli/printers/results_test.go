package printers

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/scheduler"
)

func TestReleased(t *testing.T) {
	t.Parallel()
	me := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}
	other := record.Claim{Identity: record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "3"}, Since: metav1.NewMicroTime(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))}
	mine := record.Claim{Identity: me}
	tests := []struct {
		name  string
		res   lock.Released
		token string
		want  string
	}{
		{name: "released", res: lock.Released{Previous: &mine}, want: "lock \"staging\" released\n"},
		{name: "handed over", res: lock.Released{Previous: &mine, HandedTo: &other}, want: "lock \"staging\" released\nlock \"staging\" now held by " + other.Identity.String() + "\n"},
		{name: "by token", res: lock.Released{Previous: &other}, token: "812", want: "lock \"staging\" released (held by " + other.Identity.String() + " under fencing token 812)\n"},
		{name: "not held", res: lock.Released{}, want: "lock \"staging\" is not held; nothing to release\n"},
		{name: "left the queue", res: lock.Released{LeftQueue: true, Previous: &other}, want: "lock \"staging\" was not held by " + me.String() + "; left the queue\n"},
		{name: "forced", res: lock.Released{Forced: true, Previous: &other}, want: "broke lock \"staging\" held by " + other.Identity.String() + " since 2026-12-02T09:00:00Z\n"},
		{name: "corrupt", res: lock.Released{Invalid: errors.New("bad record")}, want: "deleted corrupt lock \"staging\": bad record\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			Released(&out, "staging", me, &tt.res, tt.token)
			assert.Equal(t, tt.want, out.String(), "release %+v", tt.res)
		})
	}
}

func TestPruned(t *testing.T) {
	t.Parallel()
	res := &scheduler.PruneResult{Deleted: []scheduler.Pruned{
		{Kind: "pod", Namespace: "ci", Name: "deploy-web-1", Reason: "finished 2d ago"},
		{Kind: "job", Namespace: "ci", Name: "deploy-web-1", Reason: "finished 8d ago"},
	}}
	for _, dry := range []bool{false, true} {
		var out, errOut bytes.Buffer
		Pruned(&out, &errOut, res, dry)
		verb := "deleted"
		if dry {
			verb = "would delete"
		}
		assert.Equal(t, verb+" "+res.Deleted[0].String()+"\n"+verb+" "+res.Deleted[1].String()+"\n", out.String(), "dry %v", dry)
		assert.Equal(t, verb+" 1 job records and 1 pods\n", errOut.String(), "dry %v", dry)
	}
	var out, errOut bytes.Buffer
	Pruned(&out, &errOut, &scheduler.PruneResult{}, false)
	assert.Empty(t, out.String(), "nothing deleted")
	assert.Equal(t, "nothing to prune\n", errOut.String())
}

func TestPass(t *testing.T) {
	t.Parallel()
	pruned := scheduler.Pruned{Kind: "job", Namespace: "ci", Name: "deploy-web-1", Reason: "finished 8d ago"}
	res := scheduler.OnceResult{Plan: []string{"start pod of job ci/deploy-web-2"}, Pruned: &scheduler.PruneResult{Deleted: []scheduler.Pruned{pruned}}}
	var out bytes.Buffer
	Pass(&out, res, true)
	assert.Equal(t, "start pod of job ci/deploy-web-2\nwould delete "+pruned.String()+"\n", out.String(), "a dry run: the plan, then the pruning")
	out.Reset()
	Pass(&out, scheduler.OnceResult{Pruned: res.Pruned}, false)
	assert.Empty(t, out.String(), "a real pass: pruning says what it deleted itself")
}

func TestInEffect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, wantOut, wantErr string
		err                    error
	}{
		{name: "in effect", wantOut: `lock "prod": the API server refuses writes from anyone but the holder` + "\n"},
		{name: "no namespace yet", err: enforce.ErrNoTargetNamespace, wantOut: `lock "prod": namespace "prod" does not exist yet; the policy applies to its writes once it is created` + "\n"},
		{name: "not checkable", err: errors.New("forbidden"), wantOut: `lock "prod": could not check that the policy is in effect: forbidden` + "\n"},
		{name: "not in time", err: enforce.ErrNotInEffect, wantErr: `lock "prod": ` + enforce.ErrNotInEffect.Error() + ` after 30s; it is installed and will apply, check with a write to "prod"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := InEffect(&out, "prod", tt.err, 30*time.Second)
			assert.Equal(t, tt.wantOut, out.String(), tt.name)
			if tt.wantErr == "" {
				assert.NoError(t, err, tt.name)
				return
			}
			assert.EqualError(t, err, tt.wantErr, tt.name)
		})
	}
}
