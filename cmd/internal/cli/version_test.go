package cli

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBuildVersion checks what `lockctl version` reports for each way of
// building it: linked-in values win; without them, the Go build information
// of `go install module@vX`, `go install module@main` and `go build` in a
// clone.
func TestBuildVersion(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name                string
		ver, commit, built  string
		info                *debug.BuildInfo
		wantVer, wantCommit string
		wantDate            string
	}{
		{
			name: "ldflags (make build, releases)", ver: "v0.2.0", commit: "abc1234", built: "2026-12-05T00:00:00Z",
			info:    &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			wantVer: "v0.2.0", wantCommit: "abc1234", wantDate: "2026-12-05T00:00:00Z",
		},
		{
			name: "ldflags without the v (a release tool's bare version): spelt as the tag", ver: "0.2.0", commit: "abc1234", built: "2026-12-05T00:00:00Z",
			info:    &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			wantVer: "v0.2.0", wantCommit: "abc1234", wantDate: "2026-12-05T00:00:00Z",
		},
		{
			name: "ldflags, a snapshot's bare version", ver: "0.2.1-next", commit: "abc1234", built: "2026-12-05T00:00:00Z",
			wantVer: "v0.2.1-next", wantCommit: "abc1234", wantDate: "2026-12-05T00:00:00Z",
		},
		{
			name: "ldflags, git describe's commit-only fallback is no version", ver: "abc1234", commit: "abc1234", built: "2026-12-05T00:00:00Z",
			wantVer: "abc1234", wantCommit: "abc1234", wantDate: "2026-12-05T00:00:00Z",
		},
		{
			name: "go install module@v0.2.0", ver: "dev", commit: "unknown", built: "unknown",
			info:    &debug.BuildInfo{Main: debug.Module{Path: "github.com/lockctl/lockctl", Version: "v0.2.0"}},
			wantVer: "v0.2.0", wantCommit: "unknown", wantDate: "unknown",
		},
		{
			name: "go install module@main", ver: "dev", commit: "unknown", built: "unknown",
			info:    &debug.BuildInfo{Main: debug.Module{Version: "v0.2.1-0.20261205004355-0123456789ab"}},
			wantVer: "v0.2.1-0.20261205004355-0123456789ab", wantCommit: "0123456789ab", wantDate: "2026-12-05T00:43:55Z",
		},
		{
			name: "go build in a modified clone", ver: "dev", commit: "unknown", built: "unknown",
			info: &debug.BuildInfo{
				Main:     debug.Module{Version: "v0.0.0-20261205004355-0123456789ab+dirty"},
				Settings: vcs("vcs", "git", "vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-12-05T00:43:55Z", "vcs.modified", "true"),
			},
			wantVer: "v0.0.0-20261205004355-0123456789ab+dirty", wantCommit: "0123456789ab", wantDate: "2026-12-05T00:43:55Z",
		},
		{
			name: "go build with VCS stamping, no module version", ver: "dev", commit: "unknown", built: "unknown",
			info: &debug.BuildInfo{
				Main:     debug.Module{Version: "(devel)"},
				Settings: vcs("vcs.revision", "fedcba9876543210", "vcs.time", "2026-12-04T10:00:00Z", "vcs.modified", "true"),
			},
			wantVer: "dev", wantCommit: "fedcba987654-dirty", wantDate: "2026-12-04T10:00:00Z",
		},
		{
			name: "no build information", ver: "dev", commit: "unknown", built: "unknown",
			wantVer: "dev", wantCommit: "unknown", wantDate: "unknown",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := BuildVersion(tt.ver, tt.commit, tt.built, tt.info)
			assert.Equal(t, tt.wantVer, got.Version, "version")
			assert.Equal(t, tt.wantCommit, got.Commit, "commit")
			assert.Equal(t, tt.wantDate, got.Date, "date")
		})
	}
}
