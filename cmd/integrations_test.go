package cmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

// TestCIIntegrations reads every file of integrations/ as its CI system
// would (YAML), finds its lockctl command lines, expands their variables as
// the CI system would with sample values, and runs each through lockctl's
// own command line: it must parse and validate (no usage error), with the
// identity coming from that CI system's environment. The GitHub Action runs
// lockctl from JavaScript; it, and running all of these for real, is
// tested in integrations/.
func TestCIIntegrations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		// env is what the CI system and the file set, by variable name.
		env map[string]string
		// want are the commands expected, after expansion.
		want []string
	}{
		{
			file: "gitlab/lockctl.gitlab-ci.yml",
			env: map[string]string{"GITLAB_CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web",
				"CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_IID": "7", "LOCKCTL_TARGET": "staging", "LOCKCTL_ACQUIRE_TIMEOUT": "30m", "LOCKCTL_ACQUIRE_TTL": "1h"},
			want: []string{"lockctl acquire staging --timeout 30m --ttl 1h", "lockctl release staging"},
		},
		{
			file: "gitlab/templates/lockctl.yml",
			env: map[string]string{"GITLAB_CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web",
				"CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_IID": "7", "LOCKCTL_TARGET": "staging", "LOCKCTL_ACQUIRE_TIMEOUT": "30m", "LOCKCTL_ACQUIRE_TTL": "1h"},
			want: []string{"lockctl acquire staging --timeout 30m --ttl 1h", "lockctl release staging"},
		},
		{
			file: "tekton/task.yaml",
			env: map[string]string{"REPO_OWNER": "acme", "REPO_NAME": "web", "BRANCH_NAME": "main", "BUILD_NUMBER": "7",
				"LOCKCTL_TARGET": "staging", "LOCKCTL_TIMEOUT": "30m", "LOCKCTL_TTL": "1h", "LOCKCTL_TOKEN": "12", "TOKEN_RESULT": "/tekton/results/token"},
			want: []string{"lockctl acquire staging --timeout 30m --ttl 1h > /tekton/results/token", "lockctl release staging --token 12"},
		},
		{
			file: "tekton/pipeline.yaml",
		},
		{
			file: "argo/workflow.yaml",
			env: map[string]string{"ARGO_WORKFLOW_NAME": "deploy-under-lock-x1", "REPO_OWNER": "acme", "REPO_NAME": "web", "BRANCH_NAME": "main", "BUILD_NUMBER": "7",
				"TARGET": "staging", "LOCKCTL_TOKEN": "12"},
			want: []string{"lockctl acquire staging --timeout 30m --ttl 1h > /tmp/token", "lockctl release staging --token 12"},
		},
		{
			file: "prow/postsubmit.yaml",
			env:  map[string]string{"REPO_OWNER": "acme", "REPO_NAME": "web", "PULL_BASE_REF": "main", "BUILD_ID": "7", "POD_NAME": "deploy-pod"},
			want: []string{"lockctl run --lock staging --timeout 30m -- ./deploy.sh staging"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.env["INPUT_COMMAND"], func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("..", "integrations", tt.file))
			require.NoError(t, err)
			// NOTE: a CI/CD component is its spec, ---, then the jobs.
			if _, jobs, ok := strings.Cut(string(data), "\n---\n"); ok {
				data = []byte(jobs)
			}
			var doc any
			require.NoError(t, yaml.Unmarshal(data, &doc), "%s is YAML", tt.file)
			var got [][]string
			for _, s := range yamlStrings(doc) {
				for _, line := range strings.Split(s, "\n") {
					line = strings.TrimSpace(line)
					// A command substitution's lockctl, and a command
					// line's first command (before || or &&).
					if m := substLockctl.FindStringSubmatch(line); m != nil {
						line = m[1]
					}
					line, _, _ = strings.Cut(line, " || ")
					line, _, _ = strings.Cut(line, " && ")
					if !strings.HasPrefix(line, "lockctl ") {
						continue
					}
					if words := shellWords(t, expand(line, tt.env)); len(words) > 0 && words[0] == "lockctl" {
						got = append(got, words)
					}
				}
			}
			var joined []string
			for _, w := range got {
				joined = append(joined, strings.Join(w, " "))
			}
			require.ElementsMatch(t, tt.want, joined, "lockctl command lines of %s", tt.file)
			for _, args := range got {
				if i := slices.Index(args, ">"); i >= 0 {
					args = args[:i]
				}
				assertParses(t, tt.env, args[1:])
			}
		})
	}
}

// substLockctl finds lockctl run in a command substitution, "$(lockctl …)".
var substLockctl = regexp.MustCompile(`\$\((lockctl [^()]*)\)`)

// assertParses runs lockctl with args on fakes, with a context that is
// already over: any error is fine but a usage error.
func assertParses(t *testing.T, env map[string]string, args []string) {
	t.Helper()
	te := newTestEnv(t)
	for k, v := range env {
		te.env[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	cancel()
	err := Run(ctx, te.f, args)
	var flagErr *cmdutil.FlagError
	assert.False(t, errors.As(err, &flagErr), "lockctl %v: flag error %v", args, err)
	assert.NotEqual(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "lockctl %v: usage error %v; stderr %s", args, err, te.errOut)
}

// yamlStrings returns every string value in a decoded YAML document.
func yamlStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, yamlStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, yamlStrings(e)...)
		}
		return out
	}
	return nil
}

// tektonParam is a Tekton parameter reference, $(params.NAME).
var tektonParam = regexp.MustCompile(`\$\((params\.[a-z-]+)\)`)

// expand replaces Tekton parameters and shell variables ($VAR, ${VAR}) by
// their values in env; unset ones become empty, as in a shell.
func expand(line string, env map[string]string) string {
	line = tektonParam.ReplaceAllStringFunc(line, func(m string) string {
		return env[tektonParam.FindStringSubmatch(m)[1]]
	})
	return os.Expand(line, func(k string) string { return env[k] })
}

// shellWords splits a command line into words as a POSIX shell does for
// plain words and single- and double-quoted strings; it stops at a comment.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var (
		words []string
		cur   strings.Builder
		quote rune
		word  bool
	)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, word = r, true
		case r == ' ' || r == '\t':
			if word {
				words = append(words, cur.String())
				cur.Reset()
				word = false
			}
		case r == '#' && !word:
			return words
		default:
			cur.WriteRune(r)
			word = true
		}
	}
	require.Zero(t, quote, "unterminated quote in %q", line)
	if word {
		words = append(words, cur.String())
	}
	return words
}
