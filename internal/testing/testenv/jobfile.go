package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// WriteJob writes the job file of job deploy-web (a postsubmit of
// acme/web@main) named name, in a directory the test removes, and returns
// its path. Its pod finishes with exitCode ([AnnotationExitCode]) 2s after
// it starts ([AnnotationDuration]); with exitCode "" it runs until it is
// deleted. The pod tolerates a node that is not ready, so tests that take
// the node down can still schedule it.
func WriteJob(t testing.TB, name, exitCode string) string {
	t.Helper()
	annotations := ""
	if exitCode != "" {
		annotations = fmt.Sprintf("\n  annotations: {%s: %q, %s: 2s}", AnnotationExitCode, exitCode, AnnotationDuration)
	}
	doc := fmt.Sprintf(`apiVersion: lockctl.dev/v1alpha1
kind: Job
metadata:
  name: %s%s
spec:
  job: deploy-web
  type: postsubmit
  refs: {org: acme, repo: web, baseRef: main}
  podSpec:
    containers: [{name: main, image: alpine, command: [sh, -c, "./deploy.sh"]}]
    tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoSchedule}]
`, name, annotations)
	path := filepath.Join(t.TempDir(), name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	return path
}
