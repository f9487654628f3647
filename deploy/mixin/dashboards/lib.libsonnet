// Small builders for Grafana dashboard JSON (schemaVersion 39): panels, targets, template variables,
// annotations and links. Every query goes through the ${datasource} template variable, so a dashboard
// works against any Prometheus-compatible data source the user picks. Panel ids and grid positions are
// assigned by dashboard() from the panels' order and sizes.
{
  datasource:: { type: 'prometheus', uid: '${datasource}' },

  // One Prometheus query of a panel.
  target(expr, legend='', instant=false, format='time_series'):: {
    datasource: $.datasource,
    expr: expr,
    legendFormat: legend,
    range: !instant,
    instant: instant,
    format: format,
    editorMode: 'code',
  },

  local base(type, title, description, targets, w, h) = {
    type: type,
    title: title,
    description: description,
    datasource: $.datasource,
    targets: [
      t { refId: std.char(std.codepoint('A') + i) }
      for i in std.range(0, std.length(targets) - 1)
      for t in [targets[i]]
    ],
    w:: w,
    h:: h,
  },

  local fieldDefaults(unit, min, max, thresholds) = {
    unit: unit,
    [if min != null then 'min']: min,
    [if max != null then 'max']: max,
    thresholds: {
      mode: 'absolute',
      steps: [{ color: 'green', value: null }] +
             [{ color: s[1], value: s[0] } for s in thresholds],
    },
  },

  // A line (or stacked bar) chart over time.
  timeseries(title,
             targets,
             unit='short',
             description='',
             w=12,
             h=8,
             stack=false,
             bars=false,
             min=null,
             max=null,
             thresholds=[],
             legendTable=false,
             negativeY=null,
             links=[]):: base('timeseries', title, description, targets, w, h) {
    fieldConfig: {
      defaults: fieldDefaults(unit, min, max, thresholds) {
        color: { mode: 'palette-classic' },
        custom: {
          drawStyle: if bars then 'bars' else 'line',
          fillOpacity: if bars || stack then 80 else 10,
          lineWidth: 1,
          showPoints: 'never',
          spanNulls: false,
          stacking: { mode: if stack then 'normal' else 'none', group: 'A' },
          thresholdsStyle: { mode: if thresholds == [] then 'off' else 'line' },
        },
        links: links,
      },
      // negativeY: a series name regex drawn below the axis (rx under tx).
      overrides: if negativeY == null then [] else [{
        matcher: { id: 'byRegexp', options: negativeY },
        properties: [{ id: 'custom.transform', value: 'negative-Y' }],
      }],
    },
    options: {
      legend: {
        displayMode: if legendTable then 'table' else 'list',
        placement: if legendTable then 'right' else 'bottom',
        showLegend: true,
        calcs: if legendTable then ['mean', 'max', 'lastNotNull'] else [],
      },
      tooltip: { mode: 'multi', sort: 'desc' },
    },
  },

  // One big number (instant query) with colour thresholds: [[value, colour], ...].
  stat(title, targets, unit='short', description='', w=4, h=4, thresholds=[], decimals=null, links=[]):: base('stat', title, description, [t { instant: true, range: false } for t in targets], w, h) {
    fieldConfig: {
      defaults: fieldDefaults(unit, null, null, thresholds) {
        color: { mode: 'thresholds' },
        [if decimals != null then 'decimals']: decimals,
        links: links,
      },
      overrides: [],
    },
    options: {
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      colorMode: 'background',
      graphMode: 'none',
      textMode: 'auto',
      justifyMode: 'auto',
      orientation: 'auto',
    },
  },

  // A horizontal bar gauge, one bar per series (instant query): scoreboards.
  bargauge(title, targets, unit='percentunit', description='', w=12, h=8, min=0, max=1, thresholds=[], links=[]):: base('bargauge', title, description, [t { instant: true, range: false } for t in targets], w, h) {
    fieldConfig: {
      defaults: fieldDefaults(unit, min, max, thresholds) {
        color: { mode: 'thresholds' },
        links: links,
      },
      overrides: [],
    },
    options: {
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      orientation: 'horizontal',
      displayMode: 'gradient',
      showUnfilled: true,
      minVizHeight: 10,
      minVizWidth: 0,
      valueMode: 'color',
      namePlacement: 'left',
    },
  },

  // A table of instant values, one row per series; columns are the series' labels and Value(s).
  // renames: {'Value #A': 'GPUs'} names the value columns; units and columnLinks use the final names;
  // columnLinks: {column: url} turns a column's cells into links (to the next level's dashboard).
  table(title, targets, description='', w=24, h=8, hide=['Time'], renames={}, units={}, columnLinks={}):: base('table', title, description, [t { instant: true, range: false, format: 'table' } for t in targets], w, h) {
    fieldConfig: {
      defaults: { custom: { align: 'auto', cellOptions: { type: 'auto' }, filterable: true } },
      overrides: [
        {
          matcher: { id: 'byName', options: field },
          properties: [{ id: 'links', value: [{ title: columnLinks[field], url: columnLinks[field] }] }],
        }
        for field in std.objectFields(columnLinks)
      ] + [
        { matcher: { id: 'byName', options: field }, properties: [{ id: 'unit', value: units[field] }] }
        for field in std.objectFields(units)
      ],
    },
    options: { showHeader: true, cellHeight: 'sm', footer: { show: false, reducer: ['sum'], fields: '' } },
    transformations: [
      { id: 'merge', options: {} },
      { id: 'organize', options: { excludeByName: { [f]: true for f in hide }, renameByName: renames } },
    ],
  },

  // A grid of states from one instant query: a row per value of the label `rowLabel`, a column per value of
  // `columnLabel` (Grafana's grouping-to-matrix), each cell the series' value shown as the text and colour
  // of its entry in `states` ([[value, text, colour], ...]); a cell without a series stays empty.
  statusMatrix(title, target, rowLabel, columnLabel, states, description='', w=12, h=8):: base('table', title, description, [target { instant: true, range: false, format: 'table' }], w, h) {
    fieldConfig: {
      defaults: {
        custom: { align: 'center', cellOptions: { type: 'color-background', mode: 'basic' }, filterable: false },
        color: { mode: 'thresholds' },
        thresholds: { mode: 'absolute', steps: [{ color: 'transparent', value: null }] },
        mappings: [{
          type: 'value',
          options: {
            [std.toString(states[i][0])]: { text: states[i][1], color: states[i][2], index: i }
            for i in std.range(0, std.length(states) - 1)
          },
        }],
      },
      // The first column holds the row names: plain text, not mapped to states.
      overrides: [{
        matcher: { id: 'byName', options: '%s\\%s' % [rowLabel, columnLabel] },
        properties: [
          { id: 'mappings', value: [] },
          { id: 'custom.cellOptions', value: { type: 'auto' } },
          { id: 'custom.align', value: 'left' },
        ],
      }],
    },
    options: { showHeader: true, cellHeight: 'sm', footer: { show: false, reducer: ['sum'], fields: '' } },
    transformations: [
      { id: 'groupingToMatrix', options: { rowField: rowLabel, columnField: columnLabel, valueField: 'Value' } },
    ],
  },

  // A heatmap. rows=true: every series is one row (GPU x node x time, the series' legend names the row);
  // rows=false: Grafana buckets the values of all series at each time (a distribution over the fleet).
  heatmap(title, targets, unit='percent', description='', w=24, h=10, rows=true, min=0, max=100):: base('heatmap', title, description, targets, w, h) {
    fieldConfig: { defaults: { custom: { scaleDistribution: { type: 'linear' } } }, overrides: [] },
    options: {
      calculate: !rows,
      [if !rows then 'calculation']: { yBuckets: { mode: 'count', value: '20', scale: { type: 'linear' } } },
      cellGap: 1,
      color: {
        mode: 'scheme',
        scheme: 'Turbo',
        scale: 'linear',
        exponent: 0.5,
        steps: 64,
        fill: 'dark-orange',
        reverse: false,
        min: min,
        max: max,
      },
      yAxis: { axisPlacement: 'left', reverse: false, unit: if rows then 'short' else unit },
      rowsFrame: { layout: 'auto' },
      legend: { show: true },
      tooltip: { mode: 'single', yHistogram: false, showColorScale: true },
      cellValues: { unit: unit },
      filterValues: { le: 1e-9 },
      showValue: 'never',
      exemplars: { color: 'rgba(255,0,255,0.7)' },
    },
  },

  // A collapsed-never row header that groups the panels after it.
  row(title):: { type: 'row', title: title, collapsed: false, panels: [], w:: 24, h:: 1 },

  // A free text panel (markdown).
  text(title, content, w=24, h=3):: {
    type: 'text',
    title: title,
    w:: w,
    h:: h,
    options: { mode: 'markdown', content: content },
  },

  // Template variables. Every query variable reads label values from the ${datasource} and offers All,
  // which becomes the regex '.*', so queries match with =~ whatever the selection.
  datasourceVariable:: {
    type: 'datasource',
    name: 'datasource',
    label: 'Data source',
    query: 'prometheus',
    current: {},
    hide: 0,
    refresh: 1,
    regex: '',
  },

  queryVariable(name, label, query, multi=true, includeAll=true, regex=''):: {
    type: 'query',
    name: name,
    label: label,
    datasource: $.datasource,
    definition: query,
    query: { query: query, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
    refresh: 2,
    sort: 1,
    multi: multi,
    includeAll: includeAll,
    allValue: '.*',
    current: if includeAll then { selected: true, text: ['All'], value: ['$__all'] } else {},
    regex: regex,
    hide: 0,
    options: [],
  },

  // A dashboard annotation from a PromQL query: a marker each time the expression returns a sample.
  annotation(name, expr, title, text='', color='red', step='60s'):: {
    name: name,
    datasource: $.datasource,
    enable: true,
    hide: false,
    iconColor: color,
    expr: expr,
    step: step,
    titleFormat: title,
    textFormat: text,
    useValueForTime: false,
  },

  // A dashboard link to another dashboard of the mixin by uid, carrying the time range and variables.
  link(title, uid, vars=[], tooltip=''):: {
    type: 'link',
    title: title,
    tooltip: tooltip,
    url: '/d/' + uid + '?${__url_time_range}' + std.join('', ['&var-%s=${%s}' % [v, v] for v in vars]),
    icon: 'dashboard',
    targetBlank: false,
    keepTime: false,
    includeVars: false,
    asDropdown: false,
    tags: [],
  },

  // Lays panels out left to right in a 24-column grid (a row header starts a new line) and numbers them.
  local layout(panels) =
    std.foldl(
      function(acc, p)
        local fits = acc.x + p.w <= 24 && p.type != 'row';
        local x = if fits then acc.x else 0;
        local y = if fits then acc.y else acc.y + acc.rowH;
        local placed = p { id: std.length(acc.out) + 1, gridPos: { x: x, y: y, w: p.w, h: p.h } };
        {
          out: acc.out + [placed],
          x: if p.type == 'row' then 24 else x + p.w,
          y: y,
          rowH: if fits then std.max(acc.rowH, p.h) else p.h,
        },
      panels,
      { out: [], x: 0, y: 0, rowH: 0 }
    ).out,

  dashboard(uid, title, description, tags, variables, panels, links=[], annotations=[], time='now-6h'):: {
    uid: uid,
    title: title,
    description: description,
    tags: ['gpuscope'] + tags,
    schemaVersion: 39,
    version: 1,
    editable: true,
    graphTooltip: 1,
    timezone: 'browser',
    refresh: '1m',
    time: { from: time, to: 'now' },
    timepicker: {},
    fiscalYearStartMonth: 0,
    liveNow: false,
    weekStart: '',
    links: links,
    annotations: { list: annotations },
    templating: { list: [$.datasourceVariable] + variables },
    panels: layout(panels),
  },
}
