package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// TestIntegrationRestartAPIServer is not parallel: every test of the
// package loses the API server while it restarts.
func TestIntegrationRestartAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survivor"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	require.NoError(t, env.RestartAPIServer(ctx, time.Second))

	got, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
	require.NoError(t, err, "the API server answers after the restart")
	assert.Equal(t, cm.UID, got.UID, "objects survive in etcd")
	assert.Equal(t, cm.ResourceVersion, got.ResourceVersion, "resourceVersions survive")
}
