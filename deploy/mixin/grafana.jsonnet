// Grafana provisioning files for the gpuscope dashboards, written with
//   jsonnet -S -m generated/grafana/provisioning deploy/mixin/grafana.jsonnet
// (generate.sh does it): a file provider that loads generated/dashboards/*.json (copied to
// config.dashboards.dashboardsPath on the Grafana host) into one folder, and a Prometheus data source.
// The dashboards do not depend on the data source's name or uid: they pick one through their
// ${datasource} variable.
function(overrides={})
  local cfg = std.mergePatch(import 'config.libsonnet', overrides);
  local dash = (import 'dashboards/common.libsonnet')(cfg).dash;
  {
    'dashboards/gpuscope.yaml': std.manifestYamlDoc({
      apiVersion: 1,
      providers: [{
        name: 'gpuscope',
        orgId: 1,
        folder: dash.grafanaFolder,
        type: 'file',
        disableDeletion: false,
        allowUiUpdates: false,
        updateIntervalSeconds: 60,
        options: { path: dash.dashboardsPath, foldersFromFilesStructure: false },
      }],
    }, indent_array_in_object=true, quote_keys=false) + '\n',
    'datasources/prometheus.yaml': std.manifestYamlDoc({
      apiVersion: 1,
      datasources: [{
        name: 'Prometheus',
        type: 'prometheus',
        uid: 'prometheus',
        access: 'proxy',
        url: dash.prometheusUrl,
        isDefault: true,
        editable: false,
        jsonData: { httpMethod: 'POST', timeInterval: '15s' },
      }],
    }, indent_array_in_object=true, quote_keys=false) + '\n',
  }
