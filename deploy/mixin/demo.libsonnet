// The demo's values of the mixin's site-specific settings: Alertmanager posts to the webhook receiver the
// demo starts on 127.0.0.1:9095, the runbook links are this repository's paths, Grafana's data source is
// the demo's Prometheus on 127.0.0.1:9090. Used by scripts/demo.sh (tests/integration/fleet.py) and, under
// fast_mixin.libsonnet, by the integration tests; `check_mixin.py site` refuses files generated with them.
{
  runbookUrlBase: 'docs/runbooks/',
  alertmanager: { webhookBaseUrl: 'http://127.0.0.1:9095/' },
  dashboards: { prometheusUrl: 'http://127.0.0.1:9090' },
}
