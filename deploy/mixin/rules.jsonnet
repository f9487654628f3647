// Prometheus recording rules of the gpuscope mixin (generated/prometheus/recording_rules.yaml).
local util = import 'lib/util.libsonnet';

function(overrides={})
  util.ruleFile((import 'lib/recording.libsonnet')(util.config(overrides)))
