package cli

import (
	"runtime"
	"runtime/debug"
	"time"

	"github.com/lockctl/lockctl/internal/base/lazy"
)

// VersionInfo is what `lockctl version -o json|yaml` prints.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// bareSemver matches a semantic version without its v (0.2.0, 0.2.1-rc.1).
var bareSemver = lazy.Regexp{Expr: `^\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?$`}

// tagSpelling spells a semantic version as its Git tag: v0.2.0 for 0.2.0;
// anything else (dev, v0.2.0, a commit) is returned as it is.
func tagSpelling(ver string) string {
	if bareSemver.Get().MatchString(ver) {
		return "v" + ver
	}
	return ver
}

// pseudoVersion matches the end of a Go pseudo-version
// (v0.0.0-20261205004355-abcdef123456, v0.1.1-0.20261205004355-abcdef123456,
// possibly +dirty): the commit time and the 12-hex-digit revision.
var pseudoVersion = lazy.Regexp{Expr: `[.-](\d{14})-([0-9a-f]{12})(\+[0-9A-Za-z.-]+)?$`}

// BuildVersion is what `lockctl version` reports: the values linked in with
// -ldflags where they were set, otherwise those of the Go build information
// info (nil when the binary has none). `go install module@v0.2.0` records
// the module version only; `go install module@main` a pseudo-version that
// names the commit and its time; `go build` in a clone also the VCS
// revision, commit time and whether the tree was modified.
//
// A release's version is spelt as its tag, v0.2.0, however it was linked
// in: `go install …@v0.2.0` records the tag, a release tool's version
// template gives 0.2.0; a bare semantic version gets its v back (tagSpelling).
func BuildVersion(ver, com, built string, info *debug.BuildInfo) VersionInfo {
	v := VersionInfo{Version: tagSpelling(ver), Commit: com, Date: built, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info == nil {
		return v
	}
	if v.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v.Version = info.Main.Version
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if m := pseudoVersion.Get().FindStringSubmatch(info.Main.Version); m != nil {
		if v.Commit == "unknown" {
			v.Commit = m[2]
		}
		if t, err := time.Parse("20060102150405", m[1]); err == nil && v.Date == "unknown" {
			v.Date = t.UTC().Format(time.RFC3339)
		}
	}
	if rev := settings["vcs.revision"]; rev != "" && v.Commit == "unknown" {
		v.Commit = rev[:min(len(rev), 12)]
		if settings["vcs.modified"] == "true" {
			v.Commit += "-dirty"
		}
	}
	if t := settings["vcs.time"]; t != "" && v.Date == "unknown" {
		v.Date = t
	}
	return v
}
