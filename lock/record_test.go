package lock

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
)

func TestIdentityValidate(t *testing.T) {
	t.Parallel()
	valid := record.Identity{Owner: "acme", Repo: "web", Branch: "feature/ünïcode", Build: "42"}
	with := func(f func(*record.Identity)) record.Identity {
		id := valid
		f(&id)
		return id
	}
	tests := []struct {
		name    string
		id      record.Identity
		wantErr string
		field   string
	}{
		{name: "valid", id: valid},
		{name: "at the length limit", id: with(func(id *record.Identity) { id.Branch = strings.Repeat("b", record.MaxIdentityFieldLen) })},
		{name: "empty owner", id: with(func(id *record.Identity) { id.Owner = "" }), wantErr: "owner is empty", field: "owner"},
		{name: "blank repo", id: with(func(id *record.Identity) { id.Repo = " \t" }), wantErr: "repo is empty", field: "repo"},
		{
			name:    "over the length limit",
			id:      with(func(id *record.Identity) { id.Branch = strings.Repeat("b", record.MaxIdentityFieldLen+1) }),
			wantErr: "branch is 254 bytes long, more than the 253 allowed", field: "branch",
		},
		{
			name:    "huge owner is not echoed",
			id:      with(func(id *record.Identity) { id.Owner = strings.Repeat("o", 100<<10) }),
			wantErr: "owner is 102400 bytes long, more than the 253 allowed", field: "owner",
		},
		{
			name:    "terminal escape",
			id:      with(func(id *record.Identity) { id.Owner = "acme\x1b[2J" }),
			wantErr: `owner "acme\x1b[2J" contains control characters`, field: "owner",
		},
		{
			name:    "newline",
			id:      with(func(id *record.Identity) { id.Branch = "main\nfake line" }),
			wantErr: `branch "main\nfake line" contains control characters`, field: "branch",
		},
		{
			name:    "C1 control character",
			id:      with(func(id *record.Identity) { id.Repo = "web\u009b31m" }),
			wantErr: `repo "web\u009b31m" contains control characters`, field: "repo",
		},
		{
			name:    "invalid UTF-8",
			id:      with(func(id *record.Identity) { id.Repo = "web\xff" }),
			wantErr: `repo "web\xff" is not valid UTF-8`, field: "repo",
		},
		{
			name:    "build not a number",
			id:      with(func(id *record.Identity) { id.Build = "1e9" }),
			wantErr: `build "1e9" is not a non-negative integer`, field: "build",
		},
		{
			name:    "negative build",
			id:      with(func(id *record.Identity) { id.Build = "-1" }),
			wantErr: `build "-1" is not a non-negative integer`, field: "build",
		},
		{
			name:    "build with a control character",
			id:      with(func(id *record.Identity) { id.Build = "1\r" }),
			wantErr: `build "1\r" contains control characters`, field: "build",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.id.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err, "%+v", tt.id)
				return
			}
			require.Error(t, err, tt.name)
			assert.Equal(t, tt.wantErr, err.Error(), tt.name)
			var ie *record.IdentityError
			require.True(t, errors.As(err, &ie), "an *IdentityError: %T", err)
			assert.Equal(t, tt.field, ie.Field)
			assert.NotContains(t, err.Error(), "\x1b", "no control characters in the message")
			assert.Less(t, len(err.Error()), 1024, "a readable message, not the whole value")
		})
	}
}

func TestIdentityErrorDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *record.IdentityError
		as   string
		want string
	}{
		{name: "with the value", err: &record.IdentityError{Field: "owner", Value: "a\x07", Reason: "contains control characters"}, as: "--owner", want: `--owner "a\a" contains control characters`},
		{name: "without the value", err: &record.IdentityError{Field: "repo", Reason: "is empty"}, as: "$REPO_NAME", want: "$REPO_NAME is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, tt.err.Describe(tt.as))
		})
	}
}

func TestClaimRefusesInvalidIdentity(t *testing.T) {
	t.Parallel()
	c := New(nil, nil, "locks", clock.RealClock{}, Options{})
	_, err := c.claim(t.Context(), Request{Target: "staging", Identity: record.Identity{Owner: "acme\x1b", Repo: "web", Branch: "main", Build: "1"}})
	require.Error(t, err)
	assert.Equal(t, `invalid holder identity: owner "acme\x1b" contains control characters`, err.Error())
}

func TestIdentityStringEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   record.Identity
		want string
	}{
		{record.Identity{Owner: "acme", Repo: "web", Branch: "feature/ü", Build: "7"}, "acme/web@feature/ü#7"},
		{record.Identity{Owner: "acme\x1b[2J", Repo: "web", Branch: "main\nfake", Build: "7"}, `"acme\x1b[2J"/web@"main\nfake"#7`},
		{record.Identity{Owner: "a\xff", Repo: "web", Branch: "main", Build: "7"}, `"a\xff"/web@main#7`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.id.String())
	}
}
