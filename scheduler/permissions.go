package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/lockctl/lockctl/preflight"
)

// JobPermissions are what a reconciler needs in the job namespace: the job
// records, the admission ledger and the cluster status are ConfigMaps. A dry
// run only reads.
func JobPermissions(namespace string, dryRun bool) []preflight.Permission {
	if dryRun {
		return preflight.Verbs("configmaps", namespace, "get", "list", "watch")
	}
	return preflight.Verbs("configmaps", namespace, "get", "list", "watch", "create", "update", "delete")
}

// PodPermissions are what a reconciler needs in a build cluster's pod
// namespace. A dry run only reads.
func PodPermissions(namespace string, dryRun bool) []preflight.Permission {
	if dryRun {
		return preflight.Verbs("pods", namespace, "get", "list", "watch")
	}
	return preflight.Verbs("pods", namespace, "get", "list", "watch", "create", "patch", "delete")
}

// Preflight finds, before anything is written, the permissions a
// reconciler lacks: in the job namespace of the jobs cluster, and in the pod
// namespace (podNamespace; empty means the job namespace) of every build
// cluster. It returns a *preflight.MissingError naming verb and resource, or
// the job API server's error if it can not be asked. A build cluster that
// does not answer is not an error here: the reconciler records it
// unreachable and drives the others.
func Preflight(ctx context.Context, jobs Clientset, namespace string, clusters map[string]Clientset, podNamespace string, dryRun bool) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if podNamespace == "" {
		podNamespace = namespace
	}
	if err := preflight.Check(ctx, jobs.AuthorizationV1(), "", JobPermissions(namespace, dryRun)); err != nil {
		return err
	}
	aliases := make([]string, 0, len(clusters))
	for a := range clusters {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	errs := make([]error, len(aliases))
	var wg sync.WaitGroup
	for i, alias := range aliases {
		wg.Go(func() {
			err := preflight.Check(ctx, clusters[alias].AuthorizationV1(), fmt.Sprintf("build cluster %q", alias), PodPermissions(podNamespace, dryRun))
			var missing *preflight.MissingError
			if errors.As(err, &missing) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
