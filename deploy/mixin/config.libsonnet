// The one configuration object of the gpuscope monitoring mixin: selectors, thresholds, every `for:`
// duration and range window, routing and receivers. Every generated file is a function of this object.
//
// Override without editing: each top-level file (rules.jsonnet, alerts.jsonnet, alertmanager.jsonnet,
// dashboards.jsonnet) takes a top-level argument `overrides`, deep-merged over this object with
// std.mergePatch, e.g.
//   jsonnet -S --tla-code-file overrides=my-site.libsonnet deploy/mixin/alerts.jsonnet
// where my-site.libsonnet is `{ thresholds: { gpuTempCelsius: 80 }, for: { gpuTempHigh: '5m' } }`.
// See deploy/mixin/README.md.
//
// Site-specific values (the receivers' URLs, runbookUrlBase, dashboards.prometheusUrl) are placeholders on
// the reserved domain example.invalid, which never resolves: a site sets them in its overrides, and
// `deploy/mixin/tests/check_mixin.py site DIR` refuses generated files that still carry a placeholder or
// the demo's values (demo.libsonnet).
{
  // Label selectors, without braces. The agent is scraped as job="gpuscope"; the Slurm collector runs in
  // one of those agents (one per cluster); vLLM and Triton are scraped by the site under their own jobs.
  selectors: {
    gpuscope: 'job="gpuscope"',
    slurm: 'job="gpuscope"',
    vllm: 'job=~".*vllm.*"',
    triton: 'job=~".*triton.*"',
    // kube-state-metrics (kube_pod_*, kube_node_status_allocatable, kube_resourcequota), for the
    // Kubernetes rules and alerts.
    kubeStateMetrics: 'job="kube-state-metrics"',
  },

  // Label names. GPU series name their node with Hostname (dcgm-exporter's label); Slurm series name it
  // with node; clusterLabels are the labels aggregations keep (external labels or relabelling add them,
  // absent labels are harmless).
  labels: {
    node: 'Hostname',
    slurmNode: 'node',
    job: 'hpc_job',
    clusterLabels: ['cluster'],
    // The labels that identify one GPU (kept by every GPU-level alert).
    gpu: ['instance', 'Hostname', 'gpu', 'UUID', 'pci_bus_id', 'modelName'],
    // Inference alerts keep these (vLLM: model_name; Triton: model, version).
    vllmService: ['job', 'model_name'],
    tritonService: ['job', 'model', 'version'],
  },

  thresholds: {
    // Utilisation (0..1) under which an allocated GPU counts as idle.
    idleUtilisation: 0.05,
    gpuTempCelsius: 85,
    // Single-bit ECC errors within windows.eccSbe.
    eccSbeErrors: 10,
    // Share of time (0..1) the clocks were held down by the power or thermal policy.
    powerThrottleRatio: 0.2,
    thermalThrottleRatio: 0.05,
    // NVLink CRC/replay/recovery errors per second on one link.
    nvlinkErrorsPerSecond: 0.1,
    // Share of the cluster's or a partition's GPUs allocated.
    allocationRatio: 0.95,
    // Straggler: a GPU of a job below this share of the job's median utilisation, while the median is at
    // least stragglerMinMedian and the job holds at least stragglerMinGpus GPUs.
    stragglerRatio: 0.5,
    stragglerMinMedian: 0.3,
    stragglerMinGpus: 2,
    // Straggler from training telemetry (jobs whose ranks report to the agent's training socket): a rank
    // whose relative score (the job's fastest rank's median time outside collectives divided by its own,
    // rank:training_relative_score:ratio) stays below this. Such jobs leave the utilisation comparison.
    trainingScore: 0.8,
    // Hang: a rank whose collective sequence number on a communicator is behind another rank's of the same
    // job and communicator and has not advanced for this many seconds (NCCL's and PyTorch's own timeouts
    // are 10-30 minutes).
    trainingHangSeconds: 60,
    // Likely causes the straggler alert looks for on the rank's GPU and node: data-loader wait above this
    // share of the step time.
    trainingLoaderWaitRatio: 0.2,
    // Inference: p99 end-to-end latency (seconds), and the throughput drop (0..1) against the baseline.
    vllmP99LatencySeconds: 10,
    tritonP99LatencySeconds: 1,
    throughputDropRatio: 0.2,
    // The baseline must be at least this (tokens/s for vLLM, inferences/s for Triton) to judge a drop.
    vllmMinBaselineTokensPerSecond: 1,
    tritonMinBaselineInferencesPerSecond: 1,
    // Event path (gpuscope_events_total and the sinks' counters): how many events within the alert's
    // window it takes (more than this many).
    collectiveErrorEvents: 0,
    oomEvents: 0,
    eventsLost: 0,
    // Kubernetes: a GPU pod pending longer than this many minutes (from kube_pod_created).
    podPendingMinutes: 15,
    // Noisy neighbour on a shared GPU (time-slicing or MPS): the GPU's memory is saturated (memory
    // interface busy at least noisyDramActive of the time, DCGM_FI_PROF_DRAM_ACTIVE, or
    // DCGM_FI_DEV_MEM_COPY_UTIL / 100 where the GPU has no profiling metrics; or framebuffer used at least
    // noisyFbUsedRatio of used + free) while one of the pods sharing it holds at least
    // noisyMemoryShare of the framebuffer its pods' processes use.
    noisyDramActive: 0.8,
    noisyFbUsedRatio: 0.95,
    noisyMemoryShare: 0.6,
    // Share (0..1) of the agent's API-server lookups that fail (any result but ok and not_found) within
    // windows.rate for GpuscopeKubernetesApiFailing (which also fires while gpuscope_k8s_api_up is 0).
    k8sApiFailureRatio: 0.5,
  },

  // Event classes of gpuscope_events_total (README.md, "Events") the event alerts count, and the event
  // severities of the sxid class that page (the others open a ticket). `queue` is the durable queue the
  // push sinks read (its consumers are named after the sinks).
  events: {
    collectiveClasses: ['nccl_watchdog', 'ib_completion'],
    oomClasses: ['oom', 'cuda_oom'],
    sxidClass: 'sxid',
    sxidPageSeverities: ['critical'],
    queue: 'events',
  },

  // Security (the agent's --ebpf families, gpuscope_ebpf_*, and Falco/Tetragon, gpuscope_security_events_total;
  // docs/design/ebpf.md): the Falco priorities that page the security team (the agent writes Falco's
  // priority in lower case; matched without regard to case all the same), and the users whose opens of other users' files below a watched
  // directory are expected (a backup or indexing service's account; the `user` label of
  // gpuscope_ebpf_file_foreign_opens_total): their opens raise no GpuJobCheckpointForeignAccess.
  security: {
    falcoCriticalPriorities: ['critical', 'alert', 'emergency'],
    // Tetragon's events carry the agent's severity word as priority: `critical` is a policy's enforcing
    // action (SIGKILL, override, signal): TetragonPolicyEnforced.
    tetragonEnforcedPriorities: ['critical'],
    foreignOpenIgnoredUsers: [],
  },

  // XID catalog actions (the action label of gpuscope_xid_errors_total): which page infra, which go to
  // the job's owner as application errors; the rest (ignore) raise nothing.
  xid: {
    pageActions: ['reset_gpu', 'reboot', 'contact_support'],
    applicationActions: ['restart_app'],
  },

  // `for:` of every alert.
  'for': {
    eccDbe: '0m',
    eccSbe: '0m',
    rowRemapFailure: '0m',
    rowRemapPending: '5m',
    xidCritical: '0m',
    xidApplication: '0m',
    gpuTempHigh: '10m',
    powerThrottling: '30m',
    thermalThrottling: '15m',
    gpuLost: '1m',
    gpusMissing: '5m',
    agentDown: '5m',
    nodeDraining: '0m',
    nvlinkErrors: '10m',
    pcieDegraded: '10m',
    allocatedIdle: '30m',
    allocationHigh: '30m',
    straggler: '15m',
    trainingStraggler: '5m',
    trainingHang: '0m',
    inferenceLatency: '5m',
    throughputDrop: '15m',
    collectiveErrors: '0m',
    oomKills: '0m',
    sxidFatal: '0m',
    sxid: '0m',
    // The shipping alert's duration is its window (windows.eventShipping); this only debounces it.
    eventShipping: '0m',
    eventsLost: '0m',
    podAllocatedIdle: '30m',
    // The pending age is in the expression (thresholds.podPendingMinutes); this only debounces it.
    podPending: '1m',
    namespaceQuota: '15m',
    noisyNeighbour: '10m',
    podResourcesDown: '5m',
    apiServerFailing: '10m',
    // Security: a connection outside the allow-list, another user's open below a watched directory and a
    // critical Falco event are each one event (the counters' increase is the alert); a probe that is not
    // loaded is waited on a little (the agent retries attaching to libraries that appear later).
    unexpectedConnection: '0m',
    foreignFileAccess: '0m',
    falcoCritical: '0m',
    tetragonEnforced: '0m',
    ebpfProgramNotLoaded: '10m',
    // DCGM (the agent's optional backend: profiling fields where GPM is missing, health checks): a failing
    // health system pages after a minute, a warning opens a ticket when it stays; a connection the agent
    // had and lost opens a ticket; a profiling pause (gpuscope profile-pause) longer than this is noted.
    dcgmHealthFailure: '1m',
    dcgmHealthWarning: '15m',
    dcgmDown: '10m',
    profilingPausedTooLong: '2h',
  },

  // Range windows of rates and increases.
  windows: {
    rate: '5m',
    eccDbe: '10m',
    eccSbe: '1h',
    xid: '10m',
    throttle: '10m',
    nvlink: '10m',
    // How far back the GPU count of a node is remembered (GpuNodeGpusMissing).
    gpuCountMemory: '1h',
    inferenceLatency: '5m',
    throughput: '10m',
    // Baseline of the throughput-drop alerts: the same window, this far back.
    throughputBaselineOffset: '1h',
    energy: '1h',
    idleHours: '1h',
    collectiveErrors: '15m',
    oomKills: '15m',
    sxid: '10m',
    eventsLost: '15m',
    // A sink retrying (backoff > 0) throughout this window, or without a delivery for this long while
    // records wait in the queue, is failing; an agent younger than this is not judged.
    eventShipping: '15m',
    // Security events (unexpected connections, foreign opens, Falco): how long an alert stays after the
    // last event.
    security: '15m',
  },

  // Kubernetes (the agent's --kubernetes series, gpuscope_k8s_*, and kube-state-metrics'): which team a
  // namespace belongs to where its pods carry no team label, and the cost of a GPU-hour per GPU model.
  kubernetes: {
    // The pod label that names a team: gpuscope_k8s_pod_info's (the agent's --kubernetes.pod-labels) and
    // kube_pod_labels' (kube-state-metrics' --metric-labels-allowlist=pods=[team]) label_<name>.
    teamLabel: 'label_team',
    // namespace -> team, for pods without the team label (and for a namespace's quota alert, before its
    // pods' labels). Example entries; a site lists its own (an override replaces this object key by key).
    namespaceTeams: {
      'kube-system': 'infra',
      'gpu-operator': 'infra',
    },
    // The team of a pod whose label and namespace name none.
    defaultTeam: 'ml-platform',
    // Cost of one whole GPU for one hour, per modelName (the GPU's NVML name, as in gpuscope_gpu_info),
    // in costCurrency, like a dim_gpu_sku_cost table; models not listed cost defaultCostPerGpuHour.
    // Illustrative figures: a site sets its own (amortised purchase, power and hosting, or its cloud
    // price). Idle GPU-hours are priced with it; MIG instances are not priced (a share of a GPU).
    costCurrency: 'USD',
    costPerGpuHour: {
      'NVIDIA H200': 4.5,
      'NVIDIA H100 80GB HBM3': 4.0,
      'NVIDIA A100-SXM4-80GB': 2.0,
      'NVIDIA A100-SXM4-40GB': 1.6,
    },
    defaultCostPerGpuHour: 2.0,
  },

  // Evaluation interval of the recording-rule groups.
  recordingIntervalSeconds: 30,

  // runbook_url = runbookUrlBase + <AlertName> + '.md'. A placeholder: a site sets the absolute URL under
  // which it publishes docs/runbooks/ (e.g. its Git web view of the folder).
  runbookUrlBase: 'https://runbooks.example.invalid/gpuscope/',

  // Team labels: hardware and the agent go to infra; utilisation and capacity to ml-platform; security to
  // security; inference SLOs to the owning service: the series' own `team` label if the site relabels one in, else this default.
  teams: {
    infra: 'infra',
    mlPlatform: 'ml-platform',
    serviceDefault: 'inference',
    // The security alerts (connections outside the allow-list, other users' opens of a job's files,
    // Falco, the eBPF probes' health) go to this team's receiver, `security`.
    security: 'security',
  },

  alertmanager: {
    // Each receiver is one webhook: webhookBaseUrl + the receiver's name, or its URL in receiverUrls. A
    // placeholder: a site points them at its PagerDuty/Slack/ticket bridges (the demo at its local
    // webhook receiver, demo.libsonnet).
    webhookBaseUrl: 'https://alert-receiver.example.invalid/gpuscope/',
    receiverUrls: {},  // receiver name -> URL, overriding webhookBaseUrl + name
    groupBy: ['alertname', 'cluster', 'Hostname'],
    groupWait: '30s',
    groupInterval: '5m',
    repeatInterval: {
      page: '1h',
      ticket: '24h',
      info: '72h',
    },
    resolveTimeout: '5m',
  },

  // Dashboards (deploy/mixin/dashboards/): default time range and refresh, the Grafana folder, and what the
  // provisioning files point at (where the dashboard JSON lies on the Grafana host, and the URL of the
  // Prometheus its data source queries: a placeholder a site sets).
  dashboards: {
    timeFrom: 'now-6h',
    refresh: '1m',
    grafanaFolder: 'gpuscope',
    dashboardsPath: '/var/lib/grafana/dashboards/gpuscope',
    prometheusUrl: 'https://prometheus.example.invalid',
  },
}
