// Alertmanager configuration: routes by team, then severity (jobs' owners and namespaces' teams get
// their own routes; the security team has one receiver for pages and tickets),
// webhook receivers, and the inhibitions:
//  - no utilisation alerts on draining or drained nodes (GpuNodeDraining, by node);
//  - no utilisation or event-path alerts while the node's agent is down (GpuscopeAgentDown, by instance);
//  - GPU-level alerts inhibited by node-level hardware or agent ones (page/ticket) on the same agent: the
//    node's GPUs are gone or unmonitored. Node-level event alerts (an OOM kill, an NCCL timeout) hold
//    back nothing.
// Security alerts (category security) are held back by none of them: a connection, a file access or a
// Falco event already seen stays worth a look whether or not the node's agent or GPUs are still up.
function(cfg)
  local am = cfg.alertmanager;
  local l = cfg.labels;
  local url(name) = if std.objectHas(am.receiverUrls, name) then am.receiverUrls[name] else am.webhookBaseUrl + name;
  local receiver(name) = { name: name, webhook_configs: [{ url: url(name), send_resolved: true }] };
  local bySeverity(prefix) = [
    { receiver: prefix + '-page', matchers: ['severity="page"'], repeat_interval: am.repeatInterval.page },
    { receiver: prefix + '-ticket', matchers: ['severity="ticket"'], repeat_interval: am.repeatInterval.ticket },
    { receiver: 'info', matchers: ['severity="info"'], repeat_interval: am.repeatInterval.info },
  ];
  local receivers = ['infra-page', 'infra-ticket', 'ml-platform-page', 'ml-platform-ticket', 'job-owner', 'namespace-team', 'service-page', 'service-ticket', 'security', 'info'];
  {
    global: { resolve_timeout: am.resolveTimeout },
    route: {
      receiver: 'infra-ticket',
      group_by: am.groupBy,
      group_wait: am.groupWait,
      group_interval: am.groupInterval,
      repeat_interval: am.repeatInterval.ticket,
      routes: [
        {
          matchers: ['team="%s"' % cfg.teams.infra],
          receiver: 'infra-ticket',
          routes: bySeverity('infra'),
        },
        {
          matchers: ['team="%s"' % cfg.teams.mlPlatform],
          receiver: 'ml-platform-ticket',
          routes: [
            {
              // Alerts about a job's GPUs go to the job's owner (the webhook maps owner to a person).
              receiver: 'job-owner',
              matchers: ['owner=~".+"', 'severity=~"page|ticket"'],
              group_by: am.groupBy + ['owner', l.job],
              repeat_interval: am.repeatInterval.ticket,
            },
          ] + bySeverity('ml-platform'),
        },
        {
          // Security alerts (connections outside the allow-list, other users reading a job's files, Falco,
          // the eBPF probes) go to the security team's one receiver, grouped per job; a page repeats as
          // often as the others' pages.
          matchers: ['team="%s"' % cfg.teams.security],
          receiver: 'security',
          group_by: am.groupBy + [l.job],
          routes: [
            { receiver: 'security', matchers: ['severity="page"'], repeat_interval: am.repeatInterval.page },
            { receiver: 'info', matchers: ['severity="info"'], repeat_interval: am.repeatInterval.info },
          ],
        },
        {
          // Alerts about a namespace's pods or quota (label tenant: the namespace) go to the namespace's
          // team (the webhook maps team to its people), one group per team and namespace.
          receiver: 'namespace-team',
          matchers: ['tenant=~".+"', 'severity=~"page|ticket"', 'team!~"%s|%s"' % [cfg.teams.infra, cfg.teams.mlPlatform]],
          group_by: am.groupBy + ['team', 'tenant'],
          repeat_interval: am.repeatInterval.ticket,
        },
        {
          // Every other team is an owning service (inference SLOs): one group per team.
          matchers: ['team!~"%s|%s"' % [cfg.teams.infra, cfg.teams.mlPlatform]],
          receiver: 'service-ticket',
          group_by: am.groupBy + ['team'],
          routes: bySeverity('service'),
        },
      ],
    },
    inhibit_rules: [
      {
        source_matchers: ['alertname="GpuNodeDraining"'],
        target_matchers: ['category="utilisation"'],
        equal: l.clusterLabels + [l.node],
      },
      {
        source_matchers: ['alertname="GpuscopeAgentDown"'],
        target_matchers: ['category=~"utilisation|events"'],
        equal: l.clusterLabels + ['instance'],
      },
      {
        source_matchers: ['scope="node"', 'category=~"hardware|agent"', 'severity=~"page|ticket"'],
        target_matchers: ['scope="gpu"'],
        equal: l.clusterLabels + ['instance'],
      },
    ],
    receivers: [receiver(r) for r in receivers],
  }
