// Package validate checks the Helm chart in packaging/helm/rdmarun and the
// plain manifests rendered from it, offline: helm lint, strict decoding of
// every rendered object into the Kubernetes and prometheus-operator types,
// the DaemonSet's security settings, the values schema, the rules and
// dashboards the chart carries, the exporter configuration it renders,
// and the fleet Job: its promises, the restricted Pod Security Standard,
// and a scenario that tests the nodes behind the headless Service with
// cases rdmarun accepts.
//
// It is a module of its own so that the Kubernetes, prometheus-operator
// and Grafana libraries stay out of the main module. Run it with
// `make helm-test`.
package validate
