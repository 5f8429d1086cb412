package job

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", name))
	require.NoError(t, err, "read %s", name)
	return data
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		file  string
		check func(t *testing.T, j *Job)
	}{
		{
			name: "spec example",
			file: "valid-postsubmit.yaml",
			check: func(t *testing.T, j *Job) {
				assert.Equal(t, "deploy-web-42", j.Name)
				assert.Equal(t, Postsubmit, j.Spec.Type)
				assert.Equal(t, 1, j.Spec.MaxConcurrency)
				assert.Equal(t, "deploys", j.Spec.Queue)
				assert.Equal(t, &LockSpec{Namespace: "staging"}, j.Spec.Lock)
				assert.Equal(t, 7, j.PullNumber())
				assert.Equal(t, "alpine", j.Spec.PodSpec.Containers[0].Image)
			},
		},
		{
			name: "presubmit with generateName and defaults",
			file: "valid-presubmit.yaml",
			check: func(t *testing.T, j *Job) {
				assert.Equal(t, "pull-web-unit-", j.GenerateName)
				assert.Equal(t, DefaultCluster, j.Spec.Cluster, "cluster defaults")
				assert.Equal(t, map[string]string{"team": "web"}, j.Labels)
				assert.Len(t, j.Spec.PodSpec.InitContainers, 1)
			},
		},
		{
			name: "json document",
			file: "valid-periodic.json",
			check: func(t *testing.T, j *Job) {
				assert.Equal(t, "gpu", j.ClusterAlias())
				assert.Nil(t, j.Spec.Refs)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j, err := Parse(readTestdata(t, tt.file), tt.file)
			require.NoError(t, err, tt.file)
			assert.Equal(t, APIVersion, j.APIVersion)
			tt.check(t, j)
		})
	}
}

func TestParseInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		file   string
		syntax bool
		want   string
	}{
		{
			name: "unknown field",
			file: "invalid-unknown-field.yaml",
			want: "invalid job invalid-unknown-field.yaml:\n" +
				"  spec.maxConcurency: Forbidden: unknown field\n" +
				"  spec.podSpec.containers[0].comand: Forbidden: unknown field",
		},
		{
			name: "missing pod spec",
			file: "invalid-missing-podspec.yaml",
			want: "invalid job invalid-missing-podspec.yaml:\n  spec.podSpec: Required value: the pod to run",
		},
		{
			name: "containers without name or image",
			file: "invalid-no-containers.yaml",
			want: "invalid job invalid-no-containers.yaml:\n" +
				"  spec.podSpec.containers[0].image: Required value\n" +
				"  spec.podSpec.containers[1].name: Required value",
		},
		{
			name: "unsupported job type",
			file: "invalid-bad-type.yaml",
			want: "invalid job invalid-bad-type.yaml:\n" +
				`  spec.type: Unsupported value: "nightly": supported values: "periodic", "presubmit", "postsubmit", "batch"`,
		},
		{
			name: "value of the wrong type",
			file: "invalid-wrong-value-type.yaml",
			want: "invalid job invalid-wrong-value-type.yaml:\n" +
				"  spec.maxConcurrency: Invalid value: must be an integer, not string",
		},
		{
			name: "bad names",
			file: "invalid-bad-name.yaml",
			want: "invalid job invalid-bad-name.yaml:\n" +
				`  metadata.name: Invalid value: "Deploy_Web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')` + "\n" +
				`  spec.job: Invalid value: "deploy web": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		{
			name: "pull without a number",
			file: "invalid-pull-without-number.yaml",
			want: "invalid job invalid-pull-without-number.yaml:\n  spec.refs.pulls[0].number: Required value",
		},
		{
			name:   "yaml syntax error with its line",
			file:   "invalid-yaml-syntax.yaml",
			syntax: true,
			want:   "parse invalid-yaml-syntax.yaml: line 7: mapping values are not allowed in this context",
		},
		{
			name:   "json syntax error with line and column",
			file:   "invalid-json-syntax.json",
			syntax: true,
			want:   `parse invalid-json-syntax.json: line 7, column 5: invalid character '"' after object key:value pair`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j, err := Parse(readTestdata(t, tt.file), tt.file)
			require.Error(t, err, tt.file)
			assert.Nil(t, j)
			assert.Equal(t, tt.want, err.Error(), tt.file)
			assert.ErrorIs(t, err, ErrInvalid, tt.file)
			var se *SyntaxError
			assert.Equal(t, tt.syntax, errors.As(err, &se), "syntax error type for %s", tt.file)
		})
	}
}

func TestParseDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{name: "empty", doc: "  \n", want: "parse x: empty document"},
		{name: "only a comment", doc: "# nothing\n", want: "parse x: empty document"},
		{name: "yaml flow mapping", doc: "{apiVersion: v1}\n", want: "invalid job x:\n" +
			`  apiVersion: Unsupported value: "v1": supported values: "lockctl.dev/v1alpha1"` + "\n" +
			"  kind: Required value: must be Job\n" +
			"  metadata.name: Required value: name or generateName is required\n" +
			"  spec.job: Required value: the job name\n" +
			"  spec.type: Required value: one of periodic, presubmit, postsubmit, batch\n" +
			"  spec.podSpec: Required value: the pod to run"},
		{name: "a list", doc: "- a\n- b\n", want: "parse x: line 1: a job document must be a mapping"},
		{
			name: "duplicate key",
			doc:  "apiVersion: lockctl.dev/v1alpha1\nkind: Job\nkind: Job\n",
			want: `parse x: line 3: key "kind" already set in map`,
		},
		{
			name: "wrong kind and apiVersion",
			doc:  "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {job: a, type: periodic, podSpec: {containers: [{name: a, image: b}]}}\n",
			want: "invalid job x:\n" +
				`  apiVersion: Unsupported value: "v1": supported values: "lockctl.dev/v1alpha1"` + "\n" +
				`  kind: Unsupported value: "Pod": supported values: "Job"`,
		},
		{
			name: "refs rules and reserved labels",
			doc: "apiVersion: lockctl.dev/v1alpha1\nkind: Job\nmetadata: {labels: {lockctl.dev/job: x}}\n" +
				"spec: {job: a, type: batch, maxConcurrency: -1, lock: {}, refs: {pulls: [{number: -2}]}, podSpec: {containers: [{name: a, image: b}, {name: a, image: c}]}}\n",
			want: "invalid job x:\n" +
				"  metadata.name: Required value: name or generateName is required\n" +
				"  metadata.labels[lockctl.dev/job]: Forbidden: reserved for lockctl\n" +
				"  spec.refs.org: Required value\n" +
				"  spec.refs.repo: Required value\n" +
				"  spec.refs.pulls[0].number: Invalid value: -2: must be positive\n" +
				"  spec.maxConcurrency: Invalid value: -1: must be 0 (no limit) or more\n" +
				"  spec.lock.namespace: Required value: the namespace whose lock the job holds\n" +
				`  spec.podSpec.containers[1].name: Duplicate value: "a"`,
		},
		{
			name: "postsubmit without refs",
			doc:  "apiVersion: lockctl.dev/v1alpha1\nkind: Job\nmetadata: {generateName: a-}\nspec: {job: a, type: postsubmit, podSpec: {containers: [{name: a, image: b}]}}\n",
			want: "invalid job x:\n  spec.refs: Required value: a postsubmit job needs refs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.doc), "x")
			require.Error(t, err, tt.doc)
			assert.Equal(t, tt.want, err.Error(), tt.doc)
			assert.ErrorIs(t, err, ErrInvalid)
		})
	}
}

// validDoc is a minimal valid job document.
const validDoc = "apiVersion: lockctl.dev/v1alpha1\nkind: Job\nmetadata: {name: a}\n" +
	"spec: {job: a, type: periodic, podSpec: {containers: [{name: m, image: i}]}}\n"

// padTo pads doc with a trailing comment to exactly size bytes.
func padTo(doc string, size int) string {
	return doc + "#" + strings.Repeat("x", size-len(doc)-2) + "\n"
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		doc     string
		wantErr string // empty: the job parses
		tooBig  bool   // a *TooLargeError
	}{
		{name: "exactly the size limit", doc: padTo(validDoc, MaxFileSize)},
		{
			name:    "one byte over the size limit",
			doc:     padTo(validDoc, MaxFileSize+1),
			wantErr: "parse x: job file is 1.0 MiB (1048577 bytes), larger than 1 MiB (1048576 bytes), the most a job record (a ConfigMap) can hold: keep large scripts in the container image or in a ConfigMap the pod mounts",
			tooBig:  true,
		},
		{
			name:    "far over the size limit",
			doc:     strings.Replace(validDoc, "image: i", "image: i, command: ["+strings.Repeat("x", 3<<20)+"]", 1),
			wantErr: "parse x: job file is 3.0 MiB (3145881 bytes), larger than 1 MiB (1048576 bytes), the most a job record (a ConfigMap) can hold: keep large scripts in the container image or in a ConfigMap the pod mounts",
			tooBig:  true,
		},
		{
			name: "spec whose JSON outgrows the record",
			doc:  strings.Replace(validDoc, "image: i", `image: i, command: ["`+strings.Repeat("<", 200<<10)+`"]`, 1),
			wantErr: "invalid job x:\n  spec: Too long: stored as JSON it is 1.2 MiB (1228931 bytes), more than the 960 KiB (983040 bytes) " +
				"a job record (a ConfigMap) keeps for it: keep large scripts in the container image or in a ConfigMap the pod mounts",
		},
		{
			name:    "annotations larger than the API server allows",
			doc:     strings.Replace(validDoc, "{name: a}", "{name: a, annotations: {a: "+strings.Repeat("x", 256<<10)+"}}", 1),
			wantErr: "invalid job x:\n  metadata.annotations: Too long: may not be more than 262144 bytes",
		},
		{name: "leading document marker", doc: "---\n" + validDoc},
		{name: "trailing document marker", doc: validDoc + "---\n"},
		{name: "trailing empty documents", doc: validDoc + "---\n# nothing here\n---\n...\n"},
		{name: "trailing null document", doc: validDoc + "---\nnull\n"},
		{name: "comment before the document marker", doc: "# job\n---\n" + validDoc},
		{
			name:    "second document",
			doc:     validDoc + "---\n" + validDoc,
			wantErr: "parse x: job file holds 2 documents; one job per file: put each job in a file of its own",
		},
		{
			name:    "three documents with empty ones between",
			doc:     validDoc + "---\n---\n" + validDoc + "---\n" + validDoc + "---\n",
			wantErr: "parse x: job file holds 3 documents; one job per file: put each job in a file of its own",
		},
		{
			name:    "second document a scalar",
			doc:     validDoc + "--- |\n  echo hi\n",
			wantErr: "parse x: job file holds 2 documents; one job per file: put each job in a file of its own",
		},
		{
			name:    "json documents in a yaml stream",
			doc:     "{\"a\": 1}\n---\n{\"b\": 2}\n",
			wantErr: "parse x: job file holds 2 documents; one job per file: put each job in a file of its own",
		},
		{
			name:    "empty first document",
			doc:     "---\n---\n" + validDoc,
			wantErr: "parse x: the first document is empty: put the job first, with no empty document before it",
		},
		{
			name:    "syntax error in the second document",
			doc:     validDoc + "---\n{{{\n",
			wantErr: "parse x: line 6: did not find expected node content",
		},
		{
			name:    "alias bomb in the second document is not expanded",
			doc:     validDoc + "---\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
			wantErr: "parse x: job file holds 2 documents; one job per file: put each job in a file of its own",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j, err := Parse([]byte(tt.doc), "x")
			if tt.wantErr == "" {
				require.NoError(t, err, tt.name)
				assert.Equal(t, "a", j.Name)
				return
			}
			require.Error(t, err, tt.name)
			assert.Nil(t, j)
			assert.Equal(t, tt.wantErr, err.Error(), tt.name)
			assert.ErrorIs(t, err, ErrInvalid, "a job-file error (exit 2)")
			var tl *TooLargeError
			assert.Equal(t, tt.tooBig, errors.As(err, &tl), "*TooLargeError for %s", tt.name)
		})
	}
}

func TestTooLargeError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *TooLargeError
		want string
	}{
		{
			name: "size known",
			err:  &TooLargeError{Source: "job.yaml", Size: 5 << 20},
			want: "parse job.yaml: job file is 5 MiB (5242880 bytes), larger than 1 MiB (1048576 bytes), the most a job record (a ConfigMap) can hold: keep large scripts in the container image or in a ConfigMap the pod mounts",
		},
		{
			name: "stream read up to the limit",
			err:  &TooLargeError{Source: "<stdin>"},
			want: "parse <stdin>: job file is larger than 1 MiB (1048576 bytes), the most a job record (a ConfigMap) can hold: keep large scripts in the container image or in a ConfigMap the pod mounts",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, tt.err.Error())
			assert.ErrorIs(t, tt.err, ErrInvalid)
		})
	}
}
