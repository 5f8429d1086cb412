package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
)

func TestIntegrationCLILockLifecycle(t *testing.T) {
	t.Parallel()
	c := newCLI(t)

	o := c.run(t, append([]string{"acquire", "staging"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, "acquire: %s", o.stderr)
	assert.Regexp(t, `^\d+\n$`, o.stdout, "prints the fencing token")
	assert.Contains(t, o.stderr, `lock "staging" acquired by acme/web@main#1`)

	o = c.run(t, "status")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "TARGET")
	assert.Contains(t, o.stdout, "acme/web@main#1")

	o = c.run(t, "status", "staging", "-o", "json")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, `"kind": "Lock"`)

	o = c.run(t, append([]string{"release", "staging"}, id("web", 2)...)...)
	assert.Equal(t, 1, o.code, "another build cannot release it")
	assert.Contains(t, o.stderr, "error: release lock \"staging\": lock on \"staging\" is held by acme/web@main#1")
	assert.Contains(t, o.stderr, "hint: ")

	o = c.run(t, append([]string{"release", "staging"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	o = c.run(t, append([]string{"release", "staging"}, id("web", 1)...)...)
	assert.Equal(t, 0, o.code, "releasing twice is fine")
	assert.Contains(t, o.stderr, "not held")

	o = c.run(t, "status", "staging")
	assert.Equal(t, 0, o.code)
	assert.Contains(t, o.stderr, "is free")
}

func TestIntegrationCLIExitCodes(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	require.Equal(t, 0, c.run(t, append([]string{"acquire", "prod"}, id("web", 50)...)...).code)

	o := c.run(t, append([]string{"acquire", "prod"}, id("web", 49)...)...)
	assert.Equal(t, 3, o.code, "superseded by the newer holder: %s", o.stderr)
	assert.Contains(t, o.stderr, "superseded")

	o = c.run(t, append([]string{"acquire", "prod", "--timeout", "1s"}, id("api", 1)...)...)
	assert.Equal(t, 4, o.code, "timed out: %s", o.stderr)
	assert.Contains(t, o.stderr, "timed out")
	assert.Contains(t, o.stderr, "waiting for lock \"prod\": held by acme/web@main#50", "plain progress line")

	o = c.run(t, "acquire", "prod", "--build", "x", "--owner", "a", "--repo", "b", "--branch", "c")
	assert.Equal(t, 2, o.code, "bad identity is a usage error")

	o = c.run(t, "status", "--context", "no-such-context")
	assert.Equal(t, 2, o.code, "a context the kubeconfig lacks is a usage error")
	assert.Contains(t, o.stderr, "no-such-context")

	unreachable := c.command(t.Context(), "status", "--kubeconfig", writeUnreachableKubeconfig(t))
	o = c.runCmd(t, unreachable)
	assert.Equal(t, 1, o.code)
	assert.Contains(t, o.stderr, "error: cannot reach the API server at https://127.0.0.1:1")
	assert.Contains(t, o.stderr, "hint: check that the cluster runs")
}

// TestIntegrationCLIMutualExclusion runs 20 contenders as separate
// processes over 3 rounds. Each records the interval between its acquire
// exiting and its release starting, which lies inside its real hold; no two
// intervals may overlap.
func TestIntegrationCLIMutualExclusion(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	const contenders, rounds = 20, 3
	type hold struct {
		who        string
		start, end time.Time
	}
	var (
		mu    sync.Mutex
		holds []hold
		wg    sync.WaitGroup
	)
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				flags := id(fmt.Sprintf("repo-%02d", i), r+1)
				o := c.run(t, append([]string{"acquire", "shared", "--policy", "fifo", "-q"}, flags...)...)
				if o.code != 0 {
					t.Errorf("contender %d round %d: acquire exited %d: %s", i, r, o.code, o.stderr)
					return
				}
				start := time.Now()
				time.Sleep(20 * time.Millisecond) // the "deploy"
				end := time.Now()
				if o := c.run(t, append([]string{"release", "shared", "-q"}, flags...)...); o.code != 0 {
					t.Errorf("contender %d round %d: release exited %d: %s", i, r, o.code, o.stderr)
					return
				}
				mu.Lock()
				holds = append(holds, hold{fmt.Sprintf("%d/%d", i, r), start, end})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, holds, contenders*rounds, "every contender held the lock every round")
	sort.Slice(holds, func(a, b int) bool { return holds[a].start.Before(holds[b].start) })
	for i := 1; i < len(holds); i++ {
		assert.False(t, holds[i].start.Before(holds[i-1].end),
			"holds overlap: %s [%s, %s] and %s starting %s", holds[i-1].who,
			holds[i-1].start.Format(time.StampMicro), holds[i-1].end.Format(time.StampMicro),
			holds[i].who, holds[i].start.Format(time.StampMicro))
	}
}

// TestIntegrationCLIWaitingProgress checks what a person waiting sees in a
// CI log (no terminal): plain timestamped lines naming the holder.
func TestIntegrationCLIWaitingProgress(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	require.Equal(t, 0, c.run(t, append([]string{"acquire", "qa"}, id("web", 1)...)...).code)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	waiter := c.command(ctx, append([]string{"acquire", "qa"}, id("api", 7)...)...)
	stderr, err := waiter.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, waiter.Start())
	lines := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	first := <-lines
	assert.Regexp(t, `^\d\d:\d\d:\d\d waiting for lock "qa": held by acme/web@main#1 for \d+s; queue position 1; waited \d+s$`, first)

	require.Equal(t, 0, c.run(t, append([]string{"release", "qa"}, id("web", 1)...)...).code)
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	require.NoError(t, waiter.Wait())
	assert.Contains(t, strings.Join(rest, "\n"), `lock "qa" acquired by acme/api@main#7`)
	_, _ = io.Copy(io.Discard, stderr)
}

// TestIntegrationCLIStatusEscapesTamperedIdentity: a lock record whose
// holder carries terminal escapes (written by another client, or edited by
// hand) is shown escaped, never raw.
func TestIntegrationCLIStatusEscapesTamperedIdentity(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	require.Equal(t, 0, c.run(t, append([]string{"acquire", "staging"}, id("web", 1)...)...).code)
	cms := testenv.Get(t).Client.CoreV1().ConfigMaps(c.namespace)
	cm, err := cms.Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	rec := cm.Annotations[record.RecordAnnotation]
	require.Contains(t, rec, `"owner":"acme"`)
	cm.Annotations[record.RecordAnnotation] = strings.Replace(rec, `"owner":"acme"`, `"owner":"ac\u001b[2Jme"`, 1)
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)

	o := c.run(t, "status")
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stdout+o.stderr, "\x1b", "no raw escape reaches the terminal")
	assert.Contains(t, o.stdout, `"ac\x1b[2Jme"/web@main#1`)
}

// TestIntegrationCLIPriority: acquire --priority high queues ahead of a
// normal waiter, status shows the priorities, and the high waiter gets the
// lock first.
func TestIntegrationCLIPriority(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	require.Equal(t, 0, c.run(t, append([]string{"acquire", "prod"}, id("web", 1)...)...).code)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := func(args ...string) *exec.Cmd {
		cmd := c.command(ctx, append([]string{"acquire", "prod", "-q"}, args...)...)
		require.NoError(t, cmd.Start())
		return cmd
	}
	normal := start(id("api", 1)...)
	waitFor(t, c, "prod", "1:acme/api@main#1")
	high := start(append(id("hotfix", 1), "--priority", "high")...)
	waitFor(t, c, "prod", "1:acme/hotfix@main#1(high),2:acme/api@main#1")

	o := c.run(t, "status", "prod", "-o", "json")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, `"priority": "high"`)

	require.Equal(t, 0, c.run(t, append([]string{"release", "prod"}, id("web", 1)...)...).code)
	require.NoError(t, high.Wait(), "the high waiter gets the lock first")
	o = c.run(t, "status", "prod")
	assert.Contains(t, o.stdout, "acme/hotfix@main#1", "held by the hotfix")
	assert.Contains(t, o.stdout, "1:acme/api@main#1", "the normal waiter still waits")

	require.Equal(t, 0, c.run(t, append([]string{"release", "prod"}, id("hotfix", 1)...)...).code)
	require.NoError(t, normal.Wait(), "then the normal waiter")
	require.Equal(t, 0, c.run(t, append([]string{"release", "prod"}, id("api", 1)...)...).code)

	o = c.run(t, append([]string{"acquire", "prod", "--priority", "urgent"}, id("web", 2)...)...)
	assert.Equal(t, 2, o.code, "an unknown priority is a usage error: %s", o.stderr)
}

// waitFor runs status until its table shows want.
func waitFor(t *testing.T, c *cli, target, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		o := c.run(t, "status", target)
		if strings.Contains(o.stdout, want) || time.Now().After(deadline) {
			require.Contains(t, o.stdout, want, "status of %q", target)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestIntegrationCLIFreeze: freeze, a deploy that times out naming the
// freeze (exit 4), status showing it, an emergency --ignore-freeze, unfreeze.
func TestIntegrationCLIFreeze(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, "freeze", "prod", "--for", "1h")
	assert.Equal(t, 2, o.code, "a freeze needs a reason: %s", o.stderr)

	o = c.run(t, append([]string{"freeze", "prod", "--for", "1h", "--reason", "release party"}, id("ops", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, `lock "prod" frozen until `)

	o = c.run(t, append([]string{"acquire", "prod", "--timeout", "2s"}, id("web", 1)...)...)
	assert.Equal(t, 4, o.code, "frozen: timed out: %s", o.stderr)
	assert.Contains(t, o.stderr, `by acme/ops@main#1: "release party"`, "the wait and the error name the freeze")
	assert.Contains(t, o.stderr, "lockctl unfreeze prod", "the hint says how to lift it")

	o = c.run(t, "status", "prod")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, `frozen until`)
	assert.Contains(t, o.stdout, `"release party"`)

	o = c.run(t, append([]string{"acquire", "prod", "--ignore-freeze"}, id("hotfix", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "--ignore-freeze", "warns that it ignored the freeze")
	o = c.run(t, "status", "prod", "-o", "yaml")
	assert.Contains(t, o.stdout, "overrides:", "the freeze records who ignored it")
	require.Equal(t, 0, c.run(t, append([]string{"release", "prod"}, id("hotfix", 1)...)...).code)
	o = c.run(t, "history", "prod")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "in spite of a freeze", "the history keeps who ignored the freeze")
	events, err := testenv.Get(t).Client.CoreV1().Events(c.namespace).List(t.Context(),
		metav1.ListOptions{FieldSelector: "reason=FreezeIgnored"})
	require.NoError(t, err)
	require.Len(t, events.Items, 1, "one FreezeIgnored Event")
	assert.Contains(t, events.Items[0].Message, "acme/hotfix@main#1 took the lock with --ignore-freeze")

	o = c.run(t, "unfreeze", "prod")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "unfrozen")
	o = c.run(t, append([]string{"acquire", "prod", "--timeout", "30s"}, id("web", 2)...)...)
	require.Equal(t, 0, o.code, "unfrozen: acquired: %s", o.stderr)
	require.Equal(t, 0, c.run(t, append([]string{"release", "prod"}, id("web", 2)...)...).code)
	o = c.run(t, "unfreeze", "prod")
	assert.Equal(t, 0, o.code)
	assert.Contains(t, o.stderr, "not frozen")
}

// TestIntegrationCLISeveralLocks: acquire two locks (a token line each, in
// name order), a contender with --no-wait gives back what it took, release
// both together.
func TestIntegrationCLISeveralLocks(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, append([]string{"acquire", "staging", "db-migrations"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	require.Len(t, lines, 2, o.stdout)
	assert.True(t, strings.HasPrefix(lines[0], "db-migrations "), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "staging "), lines[1])

	o = c.run(t, append([]string{"acquire", "aaa", "staging", "--no-wait"}, id("api", 1)...)...)
	assert.Equal(t, 4, o.code, "staging is held: %s", o.stderr)
	assert.Contains(t, o.stderr, `lock "staging" (2 of 2; the 1 taken before it given back)`)
	o = c.run(t, "status", "aaa")
	assert.Contains(t, o.stderr, `lock "aaa" is free`, "aaa was given back")

	o = c.run(t, append([]string{"release", "staging", "db-migrations"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, `lock "staging" released`)
	assert.Contains(t, o.stderr, `lock "db-migrations" released`)
}
