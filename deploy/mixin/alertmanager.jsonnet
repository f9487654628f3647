// Alertmanager configuration of the gpuscope mixin (generated/alertmanager/alertmanager.yml).
local util = import 'lib/util.libsonnet';

function(overrides={})
  (import 'lib/yaml.libsonnet').manifest((import 'lib/alertmanager.libsonnet')(util.config(overrides)))
