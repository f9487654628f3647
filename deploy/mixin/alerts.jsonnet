// Prometheus alerting rules of the gpuscope mixin (generated/prometheus/alerting_rules.yaml).
local util = import 'lib/util.libsonnet';

function(overrides={})
  util.ruleFile((import 'lib/alerts.libsonnet')(util.config(overrides)))
