// Small helpers shared by the rule, alert and Alertmanager generators.
{
  // The merged configuration: config.libsonnet with a site's overrides deep-merged over it.
  config(overrides):: std.mergePatch(import '../config.libsonnet', overrides),

  // 'a, b, c' for a `by (...)` / `on (...)` clause.
  by(labels):: std.join(', ', labels),

  // metric{selector} or metric{selector, extra}.
  sel(metric, selector, extra=''):: '%s{%s}' % [metric, std.join(', ', std.filter(function(s) s != '', [selector, extra]))],

  // Seconds of a Prometheus duration ('15m', '1h30m'; units s, m, h, d, w), for comparisons with time().
  seconds(d)::
    local units = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
    local step(acc, c) =
      if std.member('0123456789', c) then acc { n: acc.n * 10 + std.parseInt(c), digits: true }
      else
        assert std.objectHas(units, c) && acc.digits : 'duration %s: use whole s, m, h, d or w' % d;
        acc { total: acc.total + acc.n * units[c], n: 0, digits: false };
    local r = std.foldl(step, std.stringChars(d), { total: 0, n: 0, digits: false });
    assert !r.digits && std.length(std.findSubstr('ms', d)) == 0 : 'duration %s: use whole s, m, h, d or w' % d;
    r.total,

  // A number in an expression: '%d' for whole numbers (jsonnet 0.18's '%g' fails on 0), else '%g'.
  num(x):: if x == std.floor(x) then '%d' % x else '%g' % x,

  // Manifests a Prometheus rule file.
  ruleFile(groups):: (import 'yaml.libsonnet').manifest({ groups: groups }),
}
