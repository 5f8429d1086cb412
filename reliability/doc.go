// Package reliability proves that lockctl keeps its promises under faults,
// against the real control plane of internal/testing/testenv: holders that crash,
// an API server that restarts, holders cut off from it by a frozen proxy
// (beside client-go's leaderelection in the same partition), API errors
// injected at the client, hostile input, a ServiceAccount bound only to the
// documented minimal Role (docs/rbac.md), and a soak of all of it at once
// (TestIntegrationSoak: 60s in the suite, LOCKCTL_SOAK=10m in make soak).
//
// The tests are TestIntegration* so they run in `make test` and CI, each
// bounded to about a minute on 2 cores. Heavier variants (more rounds, more
// contenders, higher fault rates) run with LOCKCTL_RELIABILITY_HEAVY=1;
// docs/reliability.md lists what each test checks and its last results.
package reliability
