#include "src/agent/options.h"

#include <algorithm>
#include <string>

#include "src/collectors/gpu/dcgm_backend.h"
#include "src/parsers/allow_list.h"
#include "src/parsers/text.h"

namespace gpuscope {
namespace {

// Allowed values of the options that take one of a few words. Where another module parses the word
// (ParseEventSeverity, ParseMappingFormatOption), tests/unit/agent/options_test.cc checks that both
// accept the same words.
constexpr std::string_view kDcgmCompat[] = {"3", "4.9"};
constexpr std::string_view kMappingFormats[] = {"auto", "dcgm", "jobstats", "amd"};
constexpr std::string_view kSeverities[] = {"debug", "info", "warning", "error", "critical"};
constexpr std::string_view kLokiFormats[] = {"protobuf", "json"};
constexpr std::string_view kRemoteWriteProtocols[] = {"1.0", "2.0", "auto"};
constexpr std::string_view kLogLevels[] = {"debug", "info", "warn", "error"};
constexpr std::string_view kLogFormats[] = {"auto", "logfmt", "json", "journal"};
constexpr std::string_view kTrainingTraces[] = {"slow", "all", "off"};
constexpr std::string_view kDcgm[] = {"auto", "on", "off"};
constexpr std::string_view kDcgmModes[] = {"auto", "embedded", "hostengine"};

constexpr std::string_view HostPort(std::string_view value) {
  return value.find(':') == std::string_view::npos ? "must be host:port or :port" : "";
}

constexpr std::string_view AbsolutePath(std::string_view value) {
  return value.starts_with('/') ? "" : "must start with /";
}

constexpr std::string_view HttpUrl(std::string_view value) {
  if (value.empty() || value.starts_with("http://") || value.starts_with("https://")) return "";
  return "must start with http:// or https://";
}

// --kubernetes.api-server: "off", empty (in-cluster) or an http(s) URL.
constexpr std::string_view ApiServer(std::string_view value) { return value == "off" ? "" : HttpUrl(value); }

// --ebpf.allow: one rule of src/parsers/allow_list.h.
std::string_view EbpfAllowRule(std::string_view value) {
  static thread_local std::string error;
  error = AllowRuleError(value);
  return error;
}

// --ebpf.programs: a non-empty comma-separated list of cuda, connect, files.
std::string_view EbpfProgramList(std::string_view value) {
  if (value.empty()) return "must name at least one of cuda, connect, files";
  for (const std::string_view word : text::Split(value, ',')) {
    if (word != "cuda" && word != "connect" && word != "files")
      return "must be cuda, connect, files separated by commas";
  }
  return "";
}

// --dcgm.health: DCGM health watch systems, comma-separated; empty: none.
std::string_view DcgmHealthList(std::string_view value) {
  if (value.empty()) return "";  // no health watches
  for (const std::string_view word : text::Split(value, ',')) {
    if (!ParseDcgmHealthSystem(word))
      return "must be pcie, memory, inforom, thermal, power, nvlink separated by commas";
  }
  return "";
}

// A comma-separated list without empty items (the whole may be empty).
constexpr std::string_view CommaList(std::string_view value) {
  if (value.empty()) return "";
  if (value.starts_with(',') || value.ends_with(',') || value.find(",,") != std::string_view::npos)
    return "must be names separated by single commas";
  return "";
}

constexpr std::string_view LabelPair(std::string_view value) {
  const size_t eq = value.find('=');
  if (eq == std::string_view::npos || eq == 0) return "must be name=value";
  const std::string_view name = value.substr(0, eq);
  if (name.starts_with("__")) return "must not name a reserved label (__...)";
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return "must have a label name [a-zA-Z_][a-zA-Z0-9_]*";
  }
  return "";
}

// Name=value for an HTTP header a push sink adds to its requests: the name an RFC 9110 token, the value
// without line breaks; not one of the headers the sinks set themselves.
std::string_view HeaderPair(std::string_view value) {
  const size_t eq = value.find('=');
  if (eq == std::string_view::npos || eq == 0) return "must be Name=value";
  const std::string_view name = value.substr(0, eq);
  for (const char c : name) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos)
      return "must have a header name of letters, digits and !#$%&'*+-.^_`|~";
  }
  if (value.substr(eq + 1).find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
    return "must not have a line break in the value";
  constexpr std::string_view kReserved[] = {
      "content-type", "content-encoding", "content-length", "transfer-encoding",
      "host",         "connection",       "expect"};
  for (std::string_view reserved : kReserved) {
    const bool same = name.size() == reserved.size() &&
                      std::equal(name.begin(), name.end(), reserved.begin(), [](char a, char b) {
                        return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b;
                      });
    if (same) return "must not name a header the sink sets itself";
  }
  return "";
}

// THE TABLE. Adding an option is one entry here (plus its field in AgentConfig, src/agent/config.h):
// parsing from YAML and flags, --help, validation and the README's configuration section follow from
// it. Regenerate the README block afterwards (the test agent_config_docs_are_current says how). The
// static_asserts below reject a duplicate key or flag, or a key that is both a value and a section.
// Naming: YAML keys are snake_case under their section, flags kebab-case with the same dots, as
// Prometheus exporters spell them; a section that has an `enabled` key may be written as a bare
// boolean (`journal: true`).
constexpr OptionSpec kOptions[] = {
    {.yaml = "",
     .flag = "config",
     .field = &AgentConfig::config_file,
     .help = "YAML configuration file; flags given as well override its values."},
    {.yaml = "",
     .flag = "config.dir",
     .field = &AgentConfig::config_dir,
     .help =
         "Directory of more YAML configuration files (*.yml, *.yaml), applied after --config in name order, "
         "each overriding the keys it sets (a list is replaced whole); flags still override them all. "
         "One file per feature, as configuration management writes them.",
     .default_text = "none"},

    {.yaml = "web.listen_address",
     .flag = "web.listen-address",
     .field = &AgentConfig::listen_address,
     .help = "Address of the metrics endpoint, host:port or :port (dcgm-exporter's port by default).",
     .check = HostPort},
    {.yaml = "web.telemetry_path",
     .flag = "web.telemetry-path",
     .field = &AgentConfig::telemetry_path,
     .help = "Path of the metrics endpoint.",
     .check = AbsolutePath},
    {.yaml = "web.config_file",
     .flag = "web.config.file",
     .field = &AgentConfig::web_config_file,
     .help = "Prometheus exporter-toolkit web config file: tls_server_config, basic_auth_users (bcrypt).",
     .default_text = "none, plain HTTP"},
    {.yaml = "web.max_connections",
     .flag = "web.max-connections",
     .field = &AgentConfig::max_connections,
     .help = "Connections held at once. At the cap the one that has sent the least is closed for the new "
             "one (a stalled TLS hello, then an incomplete request header, then an idle keep-alive; oldest "
             "first), so slow clients cannot deny a scrape; 503 only when every held one is being answered.",
     .min = 1},

    {.yaml = "paths.procfs",
     .flag = "path.procfs",
     .field = &AgentConfig::procfs,
     .help = "procfs root (for containers and fixture trees)."},
    {.yaml = "paths.sysfs",
     .flag = "path.sysfs",
     .field = &AgentConfig::sysfs,
     .help = "sysfs root (for containers and fixture trees)."},

    {.yaml = "nvml.library",
     .flag = "nvml.library",
     .field = &AgentConfig::nvml_library,
     .help = "NVML library to load: the simulator's path in tests and demos."},
    {.yaml = "nvml.call_deadline",
     .flag = "nvml.call-deadline",
     .field = &AgentConfig::nvml_call_deadline,
     .help = "A GPU whose collection takes longer is reported gpuscope_gpu_up 0; the others keep reporting."},

    {.yaml = "gpu.dcgm_compat",
     .flag = "gpu.dcgm-compat",
     .field = &AgentConfig::dcgm_compat,
     .help = "3: dcgm-exporter 3.x names and units (Hostname label, violation counters in us, frame buffer "
             "help in MB); 4.9: dcgm-exporter 4.9's (hostname label, ns, MiB).",
     .choices = kDcgmCompat},
    {.yaml = "dcgm.enabled",
     .flag = "dcgm",
     .field = &AgentConfig::dcgm,
     .help =
         "DCGM as a second source of the gpu collector (docs/design/dcgm.md): the DCGM_FI_PROF_* fields "
         "on GPUs without GPM (Ampere and older, MIG instances too) and DCGM's health watches. auto: when "
         "libdcgm loads; on: also report gpuscope_dcgm_up 0 when it does not; off: NVML only.",
     .choices = kDcgm},
    {.yaml = "dcgm.library",
     .flag = "dcgm.library",
     .field = &AgentConfig::dcgm_library,
     .help = "DCGM library to load: the stand-in's path in tests and demos.",
     .default_text = "libdcgm.so.4, then libdcgm.so.3"},
    {.yaml = "dcgm.mode",
     .flag = "dcgm.mode",
     .field = &AgentConfig::dcgm_mode,
     .help =
         "hostengine: connect to nv-hostengine at --dcgm.address (sharing DCGM with dcgm-exporter and "
         "other clients); embedded: start DCGM inside the agent; auto: the host engine when one answers at "
         "the first connection, else embedded.",
     .choices = kDcgmModes},
    {.yaml = "dcgm.address",
     .flag = "dcgm.address",
     .field = &AgentConfig::dcgm_address,
     .help = "nv-hostengine's address: host[:port] (port 5555 by default), or its unix socket as unix:/path "
             "or /path."},
    {.yaml = "dcgm.prefer_profiling",
     .flag = "dcgm.prefer-profiling",
     .field = &AgentConfig::dcgm_prefer_profiling,
     .help = "Take the DCGM_FI_PROF_* fields from DCGM on Hopper and newer too, instead of NVML's GPM."},
    {.yaml = "dcgm.health",
     .flag = "dcgm.health",
     .field = &AgentConfig::dcgm_health,
     .help = "DCGM health watch systems, comma-separated (pcie, memory, inforom, thermal, power, nvlink); "
             "empty: none.",
     .check = DcgmHealthList},
    {.yaml = "profiling.token_file",
     .flag = "profiling.token-file",
     .field = &AgentConfig::profiling_token_file,
     .help = "File holding the bearer token that POST /api/v1/profiling/pause and /resume require when "
             "--web.config.file has no basic auth (gpuscope profile-pause sends it); without either, they "
             "answer 403."},
    {.yaml = "gpu.hostname",
     .flag = "gpu.hostname",
     .field = &AgentConfig::hostname,
     .help = "Value of the Hostname label.",
     .default_text = "this host's name"},

    {.yaml = "attribution.hpc_job_mapping_dir",
     .flag = "hpc-job-mapping-dir",
     .field = &AgentConfig::hpc_job_mapping_dir,
     .help = "Directory of the prolog's job mapping files (dcgm-exporter's option; formats: see "
             "attribution.mapping_format).",
     .default_text = "none"},
    {.yaml = "attribution.mapping_format",
     .flag = "attribution.mapping-format",
     .field = &AgentConfig::mapping_format,
     .help = "Format of the mapping directory's files: dcgm-exporter's, Princeton jobstats', AMD exporter's, "
             "or auto (each file by its name and content).",
     .choices = kMappingFormats},
    {.yaml = "attribution.hpc_job_label",
     .flag = "attribution.hpc-job-label",
     .field = &AgentConfig::hpc_job_label,
     .help =
         "hpc_job on every GPU series; false keeps only the join series gpuscope_job_info (cardinality)."},
    {.yaml = "attribution.proc",
     .flag = "attribution.proc",
     .field = &AgentConfig::attribution_proc,
     .help = "Attribute GPU processes to Slurm jobs through /proc/<pid>/cgroup and environ, and to "
             "Kubernetes pods through the pod UID in /proc/<pid>/cgroup."},
    {.yaml = "attribution.device_map_file",
     .flag = "attribution.device-map-file",
     .field = &AgentConfig::device_map_file,
     .help = "Where the agent writes the minor -> NVML index map the prolog reads.",
     .default_text = "/run/gpuscope/devices with a mapping dir, else none"},
    {.yaml = "attribution.slurm.enabled",
     .flag = "attribution.slurm",
     .field = &AgentConfig::attribution_slurm,
     .help = "Ask slurmctld (scontrol) for job details the node cannot know."},
    {.yaml = "attribution.slurm.scontrol",
     .flag = "attribution.slurm.scontrol",
     .field = &AgentConfig::scontrol,
     .help = "The scontrol command."},
    {.yaml = "attribution.slurm.interval",
     .flag = "attribution.slurm.interval",
     .field = &AgentConfig::slurm_interval,
     .help = "Refresh period of the job details while jobs are allocated (one query per period)."},
    {.yaml = "attribution.slurm.timeout",
     .flag = "attribution.slurm.timeout",
     .field = &AgentConfig::slurm_timeout,
     .help = "Hard limit for one scontrol run."},

    {.yaml = "kubernetes.enabled",
     .flag = "kubernetes",
     .field = &AgentConfig::kubernetes,
     .help = "Kubernetes: ask the kubelet's pod-resources API which pod holds which GPU (namespace, pod and "
             "container on every GPU series, the gpuscope_k8s_* series) and the API server for each pod's "
             "owner and labels."},
    {.yaml = "kubernetes.pod_resources_socket",
     .flag = "kubernetes.pod-resources-socket",
     .field = &AgentConfig::kubernetes_pod_resources_socket,
     .help = "The kubelet's pod-resources socket (gRPC), mounted from the host."},
    {.yaml = "kubernetes.node_name",
     .flag = "kubernetes.node-name",
     .field = &AgentConfig::kubernetes_node_name,
     .help = "The Kubernetes node this agent runs on (the DaemonSet sets NODE_NAME from the downward API).",
     .default_text = "$NODE_NAME, else this host's name"},
    {.yaml = "kubernetes.api_server",
     .flag = "kubernetes.api-server",
     .field = &AgentConfig::kubernetes_api_server,
     .help = "The API server asked for each pod's owner and labels (cached, rate-limited); off: no lookups.",
     .default_text = "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT in a pod, else off",
     .check = ApiServer},
    {.yaml = "kubernetes.token_file",
     .flag = "kubernetes.token-file",
     .field = &AgentConfig::kubernetes_token_file,
     .help = "Bearer token for the API server, read again when it changes (projected tokens rotate)."},
    {.yaml = "kubernetes.ca_file",
     .flag = "kubernetes.ca-file",
     .field = &AgentConfig::kubernetes_ca_file,
     .help = "CA certificates the API server's certificate is checked against."},
    {.yaml = "kubernetes.pod_labels",
     .flag = "kubernetes.pod-labels",
     .field = &AgentConfig::kubernetes_pod_labels,
     .help = "Comma-separated pod label names copied to gpuscope_k8s_pod_info as label_<name> "
             "(cardinality: allow few).",
     .check = CommaList},

    {.yaml = "slurm.bin_dir",
     .flag = "slurm.bin-dir",
     .field = &AgentConfig::slurm_bin_dir,
     .help = "Where the slurm collector finds squeue, sinfo, sdiag and sshare.",
     .default_text = "PATH"},
    {.yaml = "slurm.command_timeout",
     .flag = "slurm.command-timeout",
     .field = &AgentConfig::slurm_command_timeout,
     .help = "Hard limit for each of the slurm collector's commands."},
    {.yaml = "slurm.include_user",
     .flag = "slurm.include-user",
     .field = &AgentConfig::slurm_include_user,
     .help = "user label on the slurm collector's job counts and fairshare (cardinality)."},

    {.yaml = "training.socket",
     .flag = "training.socket",
     .field = &AgentConfig::training_socket,
     .help = "The training collector's unix datagram socket, where ranks (python/gpuscope, the NCCL plugin) "
             "send their timing; producers find it through GPUSCOPE_TRAINING_SOCKET."},
    {.yaml = "training.hang_after",
     .flag = "training.hang-after",
     .field = &AgentConfig::training_hang_after,
     .help = "A rank behind another on a communicator that has not advanced for this long is hung."},
    {.yaml = "training.traces",
     .flag = "training.traces",
     .field = &AgentConfig::training_traces,
     .help = "Which steps become OTLP spans (with sink.otlp.traces-url): slow (longer than 1.5x the rank's "
             "median of its last 20 steps), all, or off; at most 1000 spans a second.",
     .choices = kTrainingTraces},
    {.yaml = "ebpf.enabled",
     .flag = "ebpf",
     .field = &AgentConfig::ebpf,
     .help =
         "Load the eBPF programs (root; or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, and CAP_SYS_ADMIN for the "
         "cuda program's uprobes on kernels that require it; a kernel with BTF): CUDA memory per job, "
         "outbound connections of job processes, opens, reads and writes below --ebpf.watch-dir "
         "(docs/design/ebpf.md). Each program the kernel refuses is reported and skipped."},
    {.yaml = "ebpf.watch_dirs",
     .flag = "ebpf.watch-dir",
     .field = &AgentConfig::ebpf_watch_dirs,
     .help = "A checkpoint or dataset directory whose opens (by job, user and owner), reads and writes are "
             "counted; relative paths, symbolic links and bind mounts resolve to it (at most 64).",
     .default_text = "none",
     .check = AbsolutePath},
    {.yaml = "ebpf.allow",
     .flag = "ebpf.allow",
     .field = &AgentConfig::ebpf_allow,
     .help = "A destination job processes may connect to: CIDR, CIDR:PORT[-PORT], [CIDR6]:PORT or *:PORT. "
             "With none, connections are counted and none is unexpected.",
     .default_text = "none",
     .check = EbpfAllowRule},
    {.yaml = "ebpf.cuda_libraries",
     .flag = "ebpf.cuda-library",
     .field = &AgentConfig::ebpf_cuda_libraries,
     .help = "A libcuda.so to probe from the start, beside the driver's standard paths and the libraries "
             "found in processes' maps.",
     .default_text = "none",
     .check = AbsolutePath},
    {.yaml = "ebpf.programs",
     .flag = "ebpf.programs",
     .field = &AgentConfig::ebpf_programs,
     .help = "Which eBPF programs to load, comma-separated: cuda, connect, files (files only with an "
             "--ebpf.watch-dir: it hooks every syscall's entry and return on the node).",
     .check = EbpfProgramList},

    {.yaml = "textfile.directory",
     .flag = "collector.textfile.directory",
     .field = &AgentConfig::textfile_directory,
     .help = "Directory whose *.prom files (text format 0.0.4: counters, gauges, untyped, no timestamps) the "
             "textfile collector merges into the agent's metrics every cycle; replace files atomically.",
     .default_text = "none"},
    {.yaml = "textfile.max_file_kib",
     .flag = "collector.textfile.max-file-kib",
     .field = &AgentConfig::textfile_max_file_kib,
     .help = "A *.prom file larger than this is refused whole (gpuscope_textfile_files_refused_total).",
     .min = 1},

    {.yaml = "events.kmsg_path",
     .flag = "events.kmsg-path",
     .field = &AgentConfig::events_kmsg_path,
     .help = "Read kernel log events from this /dev/kmsg.",
     .default_text = "off"},
    {.yaml = "events.files",
     .flag = "events.file",
     .field = &AgentConfig::events_files,
     .help = "Follow the files this glob matches (through rotation) for events.",
     .default_text = "none"},
    {.yaml = "events.journal.enabled",
     .flag = "events.journal",
     .field = &AgentConfig::events_journal,
     .help = "Read events from the systemd journal."},
    {.yaml = "events.journal.directory",
     .flag = "events.journal.directory",
     .field = &AgentConfig::events_journal_directory,
     .help = "Journal directory to read.",
     .default_text = "the system journal"},
    {.yaml = "events.journal.matches",
     .flag = "events.journal.match",
     .field = &AgentConfig::events_journal_matches,
     .help = "Only journal entries with FIELD=value (several are OR-ed).",
     .default_text = "every entry"},
    {.yaml = "events.falco_files",
     .flag = "events.falco-file",
     .field = &AgentConfig::events_falco_files,
     .help = "Follow Falco's JSON output files this glob matches (json_output: true, file_output) for events "
             "of class falco.",
     .default_text = "none"},
    {.yaml = "events.tetragon_files",
     .flag = "events.tetragon-file",
     .field = &AgentConfig::events_tetragon_files,
     .help = "Follow Tetragon's JSON export files this glob matches (--export-filename) for events of class "
             "tetragon.",
     .default_text = "none"},
    {.yaml = "events.falco_http",
     .flag = "events.falco-http",
     .field = &AgentConfig::events_falco_http,
     .help = "Accept Falco's http_output at POST /api/v1/falco on the metrics listener (its TLS and basic "
             "auth apply)."},
    {.yaml = "events.state_dir",
     .flag = "events.state-dir",
     .field = &AgentConfig::events_state_dir,
     .help = "Checkpoints of the event sources and the push sinks' queue."},
    {.yaml = "events.ship_severity",
     .flag = "events.ship-severity",
     .field = &AgentConfig::events_ship_severity,
     .help = "Events below this severity are counted, not shipped.",
     .choices = kSeverities},
    {.yaml = "events.max_line_bytes",
     .flag = "events.max-line-bytes",
     .field = &AgentConfig::events_max_line_bytes,
     .help = "Longer lines are cut with a \" [truncated]\" marker and counted.",
     .min = 256},
    {.yaml = "events.poll_interval",
     .flag = "events.poll-interval",
     .field = &AgentConfig::events_poll_interval,
     .help = "How often the event sources are read."},

    {.yaml = "sinks.loki.url",
     .flag = "sink.loki.url",
     .field = &AgentConfig::loki_url,
     .help = "Push events to Loki's push API at this URL (e.g. http://loki:3100/loki/api/v1/push).",
     .default_text = "off",
     .check = HttpUrl},
    {.yaml = "sinks.loki.format",
     .flag = "sink.loki.format",
     .field = &AgentConfig::loki_format,
     .help = "Loki push body: protobuf (snappy) or json.",
     .choices = kLokiFormats},
    {.yaml = "sinks.loki.tenant",
     .flag = "sink.loki.tenant",
     .field = &AgentConfig::loki_tenant,
     .help = "X-Scope-OrgID for a multi-tenant Loki.",
     .default_text = "none"},
    {.yaml = "sinks.otlp.url",
     .flag = "sink.otlp.url",
     .field = &AgentConfig::otlp_url,
     .help = "Push events as OTLP/HTTP logs to this URL (e.g. http://collector:4318/v1/logs).",
     .default_text = "off",
     .check = HttpUrl},
    {.yaml = "sinks.otlp.metrics_url",
     .flag = "sink.otlp.metrics-url",
     .field = &AgentConfig::otlp_metrics_url,
     .help = "Push the metrics as OTLP/HTTP metrics to this URL, usually the collector of sink.otlp.url "
             "with /v1/metrics (e.g. http://collector:4318/v1/metrics).",
     .default_text = "off",
     .check = HttpUrl},
    {.yaml = "sinks.otlp.metrics_interval",
     .flag = "sink.otlp.metrics-interval",
     .field = &AgentConfig::otlp_metrics_interval,
     .help = "How often the current metrics are queued for OTLP."},
    {.yaml = "sinks.otlp.traces_url",
     .flag = "sink.otlp.traces-url",
     .field = &AgentConfig::otlp_traces_url,
     .help = "Push the training collector's spans (training.traces) as OTLP/HTTP traces to this URL, usually "
             "the collector of sink.otlp.url with /v1/traces (e.g. http://collector:4318/v1/traces).",
     .default_text = "off",
     .check = HttpUrl},
    {.yaml = "sinks.otlp.headers",
     .flag = "sink.otlp.header",
     .field = &AgentConfig::otlp_headers,
     .help = "Name=value of a header sent with every OTLP request, logs, metrics and traces (an API key, a "
             "tenant); repeatable. OTEL_EXPORTER_OTLP_HEADERS is not read: the agent's flags and file say it "
             "all.",
     .default_text = "none",
     .check = HeaderPair},
    {.yaml = "sinks.otlp.basic_auth.username",
     .flag = "sink.otlp.basic-auth.username",
     .field = &AgentConfig::otlp_basic_auth_username,
     .help = "HTTP basic auth user for OTLP logs, metrics and traces (with the password file).",
     .default_text = "none"},
    {.yaml = "sinks.otlp.basic_auth.password_file",
     .flag = "sink.otlp.basic-auth.password-file",
     .field = &AgentConfig::otlp_basic_auth_password_file,
     .help = "File holding the OTLP basic auth password, read at start (trailing newline ignored).",
     .default_text = "none"},
    {.yaml = "sinks.otlp.bearer_token_file",
     .flag = "sink.otlp.bearer-token-file",
     .field = &AgentConfig::otlp_bearer_token_file,
     .help = "File holding a bearer token for OTLP logs, metrics and traces, read again for every request.",
     .default_text = "none"},
    {.yaml = "sinks.otlp.tls.cert_file",
     .flag = "sink.otlp.tls.cert-file",
     .field = &AgentConfig::otlp_tls_cert_file,
     .help = "PEM client certificate for https OTLP (CAs: sink.tls.ca-file).",
     .default_text = "none"},
    {.yaml = "sinks.otlp.tls.key_file",
     .flag = "sink.otlp.tls.key-file",
     .field = &AgentConfig::otlp_tls_key_file,
     .help = "PEM key of that client certificate.",
     .default_text = "none"},
    {.yaml = "sinks.tls_ca_file",
     .flag = "sink.tls.ca-file",
     .field = &AgentConfig::sink_tls_ca_file,
     .help = "PEM file of the CAs the push sinks trust for https.",
     .default_text = "the system store"},
    {.yaml = "sinks.queue.directory",
     .flag = "sink.queue.directory",
     .field = &AgentConfig::queue_dir,
     .help = "The push sinks' durable queue (remote_write's, OTLP metrics' and OTLP traces' in their "
             "remote_write, otlp_metrics and otlp_traces subdirectories).",
     .default_text = "<events.state_dir>/queue"},
    {.yaml = "sinks.queue.max_mib",
     .flag = "sink.queue.max-mib",
     .field = &AgentConfig::queue_max_mib,
     .help = "Bound on the queue's disk use in MiB (the events', remote_write's, OTLP metrics' and OTLP "
             "traces' each); the oldest records go first.",
     .min = 1},
    {.yaml = "sinks.remote_write.urls",
     .flag = "sink.remote-write.url",
     .field = &AgentConfig::remote_write_urls,
     .help = "Push the metrics by Prometheus remote_write to this URL (e.g. "
             "http://prometheus:9090/api/v1/write); repeatable, each URL reads the queue at its own pace.",
     .default_text = "off",
     .check = HttpUrl},
    {.yaml = "sinks.remote_write.interval",
     .flag = "sink.remote-write.interval",
     .field = &AgentConfig::remote_write_interval,
     .help = "How often the current metrics are queued for remote_write."},
    {.yaml = "sinks.remote_write.protocol",
     .flag = "sink.remote-write.protocol",
     .field = &AgentConfig::remote_write_protocol,
     .help = "remote_write 1.0, 2.0, or auto (2.0 first, 1.0 for a URL that does not confirm it).",
     .choices = kRemoteWriteProtocols},
    {.yaml = "sinks.remote_write.external_labels",
     .flag = "sink.remote-write.external-label",
     .field = &AgentConfig::remote_write_external_labels,
     .help = "name=value added to every pushed series that lacks that label; repeatable.",
     .default_text = "none",
     .check = LabelPair},
    {.yaml = "sinks.remote_write.tenant",
     .flag = "sink.remote-write.tenant",
     .field = &AgentConfig::remote_write_tenant,
     .help = "X-Scope-OrgID for a multi-tenant receiver (Mimir, Cortex).",
     .default_text = "none"},
    {.yaml = "sinks.remote_write.basic_auth.username",
     .flag = "sink.remote-write.basic-auth.username",
     .field = &AgentConfig::remote_write_basic_auth_username,
     .help = "HTTP basic auth user for the remote_write URLs (with the password file).",
     .default_text = "none"},
    {.yaml = "sinks.remote_write.basic_auth.password_file",
     .flag = "sink.remote-write.basic-auth.password-file",
     .field = &AgentConfig::remote_write_basic_auth_password_file,
     .help = "File holding the basic auth password, read at start (trailing newline ignored).",
     .default_text = "none"},
    {.yaml = "sinks.remote_write.bearer_token_file",
     .flag = "sink.remote-write.bearer-token-file",
     .field = &AgentConfig::remote_write_bearer_token_file,
     .help = "File holding a bearer token sent as Authorization: Bearer, read again for every request.",
     .default_text = "none"},
    {.yaml = "sinks.remote_write.tls.cert_file",
     .flag = "sink.remote-write.tls.cert-file",
     .field = &AgentConfig::remote_write_tls_cert_file,
     .help = "PEM client certificate for https remote_write (CAs: sink.tls.ca-file).",
     .default_text = "none"},
    {.yaml = "sinks.remote_write.tls.key_file",
     .flag = "sink.remote-write.tls.key-file",
     .field = &AgentConfig::remote_write_tls_key_file,
     .help = "PEM key of that client certificate.",
     .default_text = "none"},
    {.yaml = "sinks.remote_write.endpoints",
     .flag = "",
     .field = &AgentConfig::remote_write_endpoints,
     .help = "More remote_write receivers, each with settings of its own (the tenant, basic auth, bearer "
             "token and client certificate options above apply only to the urls): a list of {url, "
             "protocol, tenant, basic_auth: {username, password_file}, bearer_token_file, tls: {ca_file, "
             "cert_file, key_file}, headers: [Name=value]}; url is required, protocol defaults to "
             "sinks.remote_write.protocol and tls.ca_file to sinks.tls_ca_file.",
     .default_text = "none"},

    {.yaml = "log.level",
     .flag = "log.level",
     .field = &AgentConfig::log_level,
     .help = "Lowest level logged.",
     .choices = kLogLevels},
    {.yaml = "log.format",
     .flag = "log.format",
     .field = &AgentConfig::log_format,
     .help = "Log format: logfmt or json lines on stderr (json for log shippers), journal (the systemd "
             "journal's native protocol: each field a journal field), or auto (journal when stderr is the "
             "journal, as under systemd; else logfmt).",
     .choices = kLogFormats},

    {.yaml = "",
     .flag = "once",
     .field = &AgentConfig::once,
     .help = "Collect once, print the exposition to stdout and exit."},
    {.yaml = "",
     .flag = "print-metrics-docs",
     .field = &AgentConfig::print_metrics_docs,
     .help = "Print the metrics reference (docs/metrics.md) and exit."},
    {.yaml = "",
     .flag = "print-config-docs",
     .field = &AgentConfig::print_config_docs,
     .help = "Print the configuration reference (README.md's Configuration section) and exit."},
    {.yaml = "",
     .flag = "print-config-file",
     .field = &AgentConfig::print_config_file,
     .help = "Print a commented YAML configuration file of every key and exit: the keys that --config, "
             "--config.dir and the other flags set are written with their values, the others commented out "
             "at their defaults."},
    {.yaml = "",
     .flag = "version",
     .field = &AgentConfig::show_version,
     .help = "Print the version and exit."},
    {.yaml = "", .flag = "help", .field = &AgentConfig::show_help, .help = "Print this help and exit."},
};

// --- Checks of the table, at compile time ---------------------------------------------------------------

constexpr bool EveryOptionIsReachable() {
  for (const OptionSpec& option : kOptions) {
    if (option.yaml.empty() && option.flag.empty()) return false;
    if (option.help.empty()) return false;
  }
  return true;
}

constexpr bool NoTwoOptionsShareAKeyAFlagOrAField() {
  for (size_t i = 0; i < std::size(kOptions); ++i) {
    for (size_t j = i + 1; j < std::size(kOptions); ++j) {
      if (!kOptions[i].yaml.empty() && kOptions[i].yaml == kOptions[j].yaml) return false;
      if (!kOptions[i].flag.empty() && kOptions[i].flag == kOptions[j].flag) return false;
      if (kOptions[i].field == kOptions[j].field) return false;
    }
  }
  return true;
}

// "events.journal" cannot be a value and also the section of "events.journal.directory": the value is
// then "events.journal.enabled". "collectors" belongs to the collector registry.
constexpr bool NoKeyIsAlsoASection() {
  for (const OptionSpec& option : kOptions) {
    if (option.yaml == "collectors" || option.yaml.starts_with("collectors.")) return false;
    for (const OptionSpec& other : kOptions) {
      if (option.yaml.empty() || other.yaml.size() <= option.yaml.size()) continue;
      if (other.yaml.starts_with(option.yaml) && other.yaml[option.yaml.size()] == '.') return false;
    }
  }
  return true;
}

// "--no-X" negates a switch and "--collector.NAME" belongs to the collector registry.
// The derived flags are --no-X, --collector.NAME and --collector.NAME.interval; a collector's own option
// may be --collector.NAME.OPTION (node_exporter's --collector.textfile.directory).
constexpr bool NoFlagCollidesWithDerivedFlags() {
  for (const OptionSpec& option : kOptions) {
    if (option.flag.starts_with("no-")) return false;
    if (!option.flag.starts_with("collector.")) continue;
    const std::string_view rest = option.flag.substr(std::string_view("collector.").size());
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos || dot == 0 || rest.substr(dot + 1) == "interval") return false;
  }
  return true;
}

constexpr bool ValidationFitsTheType() {
  for (const OptionSpec& option : kOptions) {
    bool is_string = std::holds_alternative<std::string AgentConfig::*>(option.field);
    bool is_int = std::holds_alternative<int AgentConfig::*>(option.field);
    bool is_list = std::holds_alternative<std::vector<std::string> AgentConfig::*>(option.field);
    if (!option.choices.empty() && !is_string) return false;
    if (option.check != nullptr && !is_string && !is_list) return false;
    if (option.min != 0 && !is_int) return false;
  }
  return true;
}

static_assert(EveryOptionIsReachable(), "an option needs a YAML key or a flag, and a help text");
static_assert(NoTwoOptionsShareAKeyAFlagOrAField(), "two options share a YAML key, a flag or a field");
static_assert(NoKeyIsAlsoASection(), "a YAML key is also the section of another key (use KEY.enabled)");
static_assert(NoFlagCollidesWithDerivedFlags(),
              "flags --no-X, --collector.NAME and --collector.NAME.interval are reserved");
static_assert(ValidationFitsTheType(),
              "choices are for strings, check for strings and lists, min for integers");

}  // namespace

std::span<const OptionSpec> AgentOptions() { return kOptions; }

std::string_view CheckHttpUrl(std::string_view value) { return HttpUrl(value); }
std::string_view CheckHeaderPair(std::string_view value) { return HeaderPair(value); }
std::span<const std::string_view> RemoteWriteProtocolChoices() { return kRemoteWriteProtocols; }

std::string OptionName(const OptionSpec& option) {
  if (option.yaml.empty()) return "--" + std::string(option.flag);
  if (option.flag.empty()) return std::string(option.yaml);
  return std::string(option.yaml) + " (--" + std::string(option.flag) + ")";
}

}  // namespace gpuscope
