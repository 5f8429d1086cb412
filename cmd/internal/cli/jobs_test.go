package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/job"
)

func TestJobsToShow(t *testing.T) {
	t.Parallel()
	tf := newTestFactory(t)
	var errOut bytes.Buffer
	tf.f.IOStreams.ErrOut = &errOut

	store, jobs, err := JobsToShow(t.Context(), tf.f, nil, job.ListOptions{Selector: "a=b"}, false)
	require.NoError(t, err)
	assert.Equal(t, "default", store.Namespace())
	assert.NotNil(t, jobs, "an empty list, not nothing to show")
	assert.Empty(t, jobs)
	assert.Equal(t, "no jobs matching \"a=b\" in namespace \"default\"\n", errOut.String())

	errOut.Reset()
	_, jobs, err = JobsToShow(t.Context(), tf.f, []string{"nope"}, job.ListOptions{}, false)
	assert.Nil(t, jobs, "nothing to show")
	assert.EqualError(t, err, `job "nope" not found in namespace "default"`)
	assert.Empty(t, errOut.String(), "a name that does not exist is the error, not a message")

	store, _, err = JobsToShow(t.Context(), tf.f, nil, job.ListOptions{}, true)
	require.NoError(t, err)
	assert.Empty(t, store.Namespace(), "-A reads every namespace")
	assert.Equal(t, "no jobs in any namespace\n", errOut.String())
}

func TestClusterStatus(t *testing.T) {
	t.Parallel()
	tf := newTestFactory(t)
	var errOut bytes.Buffer
	tf.f.IOStreams.ErrOut = &errOut
	st, err := ClusterStatus(t.Context(), tf.f)
	require.NoError(t, err)
	assert.Empty(t, st)
	assert.Equal(t, "no cluster status recorded in namespace \"default\": lockctl reconcile records it\n", errOut.String())
}
