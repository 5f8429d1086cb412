// Package monitoring holds what lockctl ships for monitoring its locks:
// example alerting rules (rules.yaml, with promtool's unit tests in
// rules_test.yaml) and a Grafana dashboard (grafana-dashboard.json) on
// the metrics that lockctl reconcile and lockctl dashboard export
// (docs/statistics.md). Its Go files only test them with the real
// Prometheus: promtool checks the rules and runs their tests, and a
// Prometheus server scraping lockctl dashboard answers the dashboard's
// queries and the wait histogram's 90th percentile.
package monitoring
