// A YAML writer for the generated rule and Alertmanager files. std.manifestYamlDoc of jsonnet 0.18
// escapes strings one character at a time in jsonnet code, which took most of a minute for the alerting
// rules; this one escapes with the native std.strReplace. It also writes the keys in the order people
// read Prometheus rules in (alert/record, expr, for, labels, annotations), the others sorted.
// Strings: multi-line ones as literal blocks (|), others double-quoted with \, ", newline and tab escaped
// (the generators put no other control characters in strings).
local order = [
  'name',
  'interval',
  'alert',
  'record',
  'expr',
  'for',
  'labels',
  'annotations',
  'rules',
  'severity',
  'team',
  'category',
  'scope',
  'summary',
  'description',
  'runbook_url',
];
local keys(o) =
  [k for k in order if std.objectHas(o, k)] + std.sort([k for k in std.objectFields(o) if !std.member(order, k)]);
local esc(s) = std.strReplace(std.strReplace(std.strReplace(std.strReplace(s, '\\', '\\\\'), '"', '\\"'), '\n', '\\n'), '\t', '\\t');
local multiLine(s) = std.strReplace(s, '\n', '') != s;
local isBlock(v) = (std.isObject(v) && std.length(std.objectFields(v)) > 0) || (std.isArray(v) && std.length(v) > 0);

// v at indentation ind (the column its first line starts at is the caller's business; later lines and
// block contents are indented with ind).
local render(v, ind) =
  if std.isString(v) then
    if multiLine(v) then
      // A literal block infers its indentation from the first line and clips to one final newline.
      assert !std.startsWith(v, ' ') && !std.endsWith(v, '\n\n') : 'yaml.libsonnet: cannot write as a block: ' + v;
      local clip = std.endsWith(v, '\n');
      local body = if clip then std.substr(v, 0, std.length(v) - 1) else v;
      (if clip then '|' else '|-') + '\n' + ind + std.strReplace(body, '\n', '\n' + ind)
    else '"' + esc(v) + '"'
  else if std.isBoolean(v) then (if v then 'true' else 'false')
  else if v == null then 'null'
  else if std.isNumber(v) then std.toString(v)
  else if std.isArray(v) then
    if std.length(v) == 0 then '[]'
    else std.join('\n' + ind, ['- ' + render(e, ind + '  ') for e in v])
  else if std.length(std.objectFields(v)) == 0 then '{}'
  else std.join('\n' + ind, [
    k + ':' + (if isBlock(v[k]) then '\n' + ind + '  ' + render(v[k], ind + '  ') else ' ' + render(v[k], ind + '  '))
    for k in keys(v)
  ]);

{
  // The YAML document of v (an object), ending with a newline.
  manifest(v):: render(v, '') + '\n',
}
