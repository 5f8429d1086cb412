package runjobs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeEncode(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "null"} {
		a, err := Decode(json.RawMessage(raw))
		require.NoError(t, err, "%q", raw)
		assert.Nil(t, a, "%q is no account", raw)
	}
	_, err := Decode(json.RawMessage(`{"pending":"ci"}`))
	assert.ErrorContains(t, err, "decode the account of run jobs", "a malformed account")

	empty, err := (&Account{Pending: []Mark{}, Swept: []string{}}).Encode()
	require.NoError(t, err)
	assert.Nil(t, empty, "an empty account is left out of the record")

	in := `{"pending":[{"namespace":"ci","session":"a1","job":"deploy-7"}],"swept":["dev"],"checked":"x"}`
	a, err := Decode(json.RawMessage(in))
	require.NoError(t, err)
	out, err := a.Encode()
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out), "a newer minor's fields kept, in the account and in a mark")
}

// TestKeeperTake is the rule of a run's take (or re-entrance), as ledger:
// what it stores, whether it must look, whether it marked.
func TestKeeperTake(t *testing.T) {
	t.Parallel()
	swept := `{"swept":["ci","dev"]}`
	tests := []struct {
		name      string
		keeper    Keeper
		cur       string
		kept      bool
		took      bool
		wantNext  string
		wantStore bool
		wantLook  bool
		wantMark  bool
	}{
		{name: "run --, new lock: marked until it has looked", keeper: Keeper{Namespace: "ci"}, took: true,
			wantNext: `{"pending":[{"namespace":"ci","session":"me"}]}`, wantStore: true, wantLook: true, wantMark: true},
		{name: "run --, vouched: no look, no mark, the account kept", keeper: Keeper{Namespace: "ci"}, cur: swept, kept: true, took: true,
			wantNext: swept, wantStore: true},
		{name: "run -f, vouched: no look, marked", keeper: Keeper{Namespace: "ci", SubmitsJob: true}, cur: swept, kept: true, took: true,
			wantNext: `{"pending":[{"namespace":"ci","session":"me"}],"swept":["dev"]}`, wantStore: true, wantMark: true},
		{name: "after a holder that did not keep it: a new account", keeper: Keeper{Namespace: "ci"}, cur: swept, took: true,
			wantNext: `{"pending":[{"namespace":"ci","session":"me"}]}`, wantStore: true, wantLook: true, wantMark: true},
		{name: "a dead run's mark: replaced by ours", keeper: Keeper{Namespace: "ci"}, cur: `{"pending":[{"namespace":"ci","session":"dead"}]}`, kept: true, took: true,
			wantNext: `{"pending":[{"namespace":"ci","session":"me"}]}`, wantStore: true, wantLook: true, wantMark: true},
		{name: "re-enters a kept hold with a job: marked beside", keeper: Keeper{Namespace: "ci", SubmitsJob: true}, cur: `{"pending":[{"namespace":"ci","session":"h"}]}`, kept: true,
			wantNext: `{"pending":[{"namespace":"ci","session":"h"},{"namespace":"ci","session":"me"}]}`, wantStore: true, wantLook: true, wantMark: true},
		{name: "re-enters a vouched hold: nothing stored", keeper: Keeper{Namespace: "ci"}, cur: swept, kept: true,
			wantNext: swept},
		{name: "re-enters a hold that does not keep it: looks, stores nothing", keeper: Keeper{Namespace: "ci", SubmitsJob: true}, cur: swept,
			wantNext: swept, wantLook: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var cur json.RawMessage
			if tt.cur != "" {
				cur = json.RawMessage(tt.cur)
			}
			next, store, look, marked, err := tt.keeper.Take(cur, tt.kept, tt.took, "me")
			require.NoError(t, err)
			assert.Equal(t, tt.wantStore, store, "store")
			assert.Equal(t, tt.wantLook, look, "must look")
			assert.Equal(t, tt.wantMark, marked, "marked")
			if tt.wantNext == "" {
				assert.Nil(t, next)
			} else {
				assert.JSONEq(t, tt.wantNext, string(next), "the account")
			}
		})
	}
	_, _, _, _, err := (&Keeper{Namespace: "ci"}).Take(json.RawMessage(`[]`), true, true, "me")
	assert.Error(t, err, "an account it cannot read")
}

// TestKeeperRelease: a run that is done removes its mark and names its
// namespace swept; one that is not leaves the account as it is.
func TestKeeperRelease(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		keeper     Keeper
		cur        string
		mark       string
		wantNext   string
		wantMarked bool
	}{
		{name: "done: the mark goes, swept", keeper: Keeper{Namespace: "ci", Done: true}, cur: `{"pending":[{"namespace":"ci","session":"me"}]}`, mark: "me",
			wantNext: `{"swept":["ci"]}`, wantMarked: true},
		{name: "not done: kept as it is", keeper: Keeper{Namespace: "ci"}, cur: `{"pending":[{"namespace":"ci","session":"me"}]}`, mark: "me",
			wantNext: `{"pending":[{"namespace":"ci","session":"me"}]}`},
		{name: "done, another's mark in ci: not swept", keeper: Keeper{Namespace: "ci", Done: true}, cur: `{"pending":[{"namespace":"ci","session":"me"},{"namespace":"ci","session":"x"}]}`, mark: "me",
			wantNext: `{"pending":[{"namespace":"ci","session":"x"}]}`, wantMarked: true},
		{name: "done without a mark (vouched): still swept", keeper: Keeper{Namespace: "ci", Done: true}, cur: `{"swept":["dev"]}`,
			wantNext: `{"swept":["dev","ci"]}`},
		{name: "at most MaxSwept, the oldest dropped", keeper: Keeper{Namespace: "q", Done: true},
			cur:      `{"swept":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p"]}`,
			wantNext: `{"swept":["b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			next, marked, err := tt.keeper.Release(json.RawMessage(tt.cur), tt.mark)
			require.NoError(t, err)
			assert.Equal(t, tt.wantMarked, marked, "marked")
			assert.JSONEq(t, tt.wantNext, string(next), "the account")
		})
	}
}
