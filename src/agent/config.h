// AgentConfig: everything the agent can be told, from defaults, then the YAML file (--config FILE),
// then command-line flags, in the Prometheus exporters' style (later sources override earlier ones).
// Parsing is strict: an unknown key or flag, a malformed duration or a wrong type is an error that
// names the key, never a silent default. Each option is described once, in src/agent/options.cc (YAML
// key, flag, help, validation); the defaults are the initial values below. To add an option: add its
// field here and its entry there.
//
// Thread-safety: plain data and pure functions.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

struct CollectorConfig {
  bool enabled = true;
  std::chrono::milliseconds interval{1000};
};

// One remote_write receiver with settings of its own (sinks.remote_write.endpoints in the YAML file):
// sites push to backends that take different credentials. The shared remote_write options (tenant,
// basic auth, bearer token, client certificate) apply only to the URLs of sinks.remote_write.urls, not
// to these.
struct RemoteWriteEndpointConfig {
  std::string url;                  // required
  std::string protocol;             // 1.0, 2.0 or auto; empty: sinks.remote_write.protocol
  std::string tenant;               // X-Scope-OrgID
  std::string basic_auth_username;  // with the password file
  std::string basic_auth_password_file;
  std::string bearer_token_file;
  std::string tls_ca_file;  // empty: sinks.tls_ca_file
  std::string tls_cert_file;
  std::string tls_key_file;
  std::vector<std::string> headers;  // Name=value

  bool operator==(const RemoteWriteEndpointConfig&) const = default;
};

struct AgentConfig {
  std::string config_file;
  std::string config_dir;  // *.yml/*.yaml applied after config_file in name order; empty: none

  // web
  std::string listen_address = ":9400";  // dcgm-exporter's port, so scrape configs need no change
  std::string telemetry_path = "/metrics";
  std::string web_config_file;  // Prometheus exporter-toolkit web config (TLS, basic auth)
  int max_connections = 64;

  // paths (roots, so that fixture trees work)
  std::string procfs = "/proc";
  std::string sysfs = "/sys";

  // nvml
  std::string nvml_library = "libnvidia-ml.so.1";
  std::chrono::milliseconds nvml_call_deadline{2000};

  // gpu
  std::string dcgm_compat = "3";  // "3": dcgm-exporter 3.x names and units; "4.9": 4.9's
  std::string hostname;           // empty: gethostname()

  // dcgm (optional backend of the gpu collector; docs/design/dcgm.md)
  std::string dcgm = "auto";                    // auto (when libdcgm loads), on, off
  std::string dcgm_library;                     // empty: libdcgm.so.4, then libdcgm.so.3
  std::string dcgm_mode = "auto";               // auto, embedded, hostengine
  std::string dcgm_address = "localhost:5555";  // nv-hostengine: host[:port], unix:/path or /path
  bool dcgm_prefer_profiling = false;           // DCGM's profiling fields where GPM has them too (Hopper+)
  std::string dcgm_health = "pcie,memory,inforom,thermal,power,nvlink";  // health watches; empty: none
  // The bearer token the profiling pause API requires when the web config has no basic auth.
  std::string profiling_token_file = "/etc/gpuscope/profiling.token";

  // attribution (tie GPU series to jobs)
  std::string hpc_job_mapping_dir;      // dcgm-exporter's --hpc-job-mapping-dir; empty: no mapping files
  std::string mapping_format = "auto";  // auto, dcgm, jobstats, amd (gpuscope's records are always read)
  bool hpc_job_label = true;            // hpc_job on GPU series (off: only the join series)
  bool attribution_proc = true;         // GPU processes -> /proc cgroup and environ -> job
  std::string device_map_file;          // for the prolog; default /run/gpuscope/devices with a mapping dir
  bool attribution_slurm = false;       // ask scontrol for what the node cannot know
  std::string scontrol = "scontrol";
  std::chrono::milliseconds slurm_interval{30000};
  std::chrono::milliseconds slurm_timeout{5000};

  // kubernetes: pod attribution from the kubelet and pod metadata from the API server (off by default)
  bool kubernetes = false;  // the pod-resources source, pod labels on GPU series, gpuscope_k8s_* series
  std::string kubernetes_pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string kubernetes_node_name;  // empty: $NODE_NAME, else the hostname

  // slurm scheduler collector (off by default: one node per cluster runs it)
  std::string slurm_bin_dir;  // where squeue/sinfo/sdiag/sshare are; empty: PATH
  std::chrono::milliseconds slurm_command_timeout{15000};
  bool slurm_include_user = true;  // user label on job counts and fairshare (cardinality)

  // kubernetes: pod metadata from the API server (with `kubernetes`)
  std::string kubernetes_api_server;  // empty: in-cluster from KUBERNETES_SERVICE_HOST/PORT; "off": none
  std::string kubernetes_token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string kubernetes_ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string kubernetes_pod_labels = "team";  // comma-separated allow-list for gpuscope_k8s_pod_info

  // training collector (off by default until the mixin uses it): the ranks' own timing
  std::string training_socket = "/run/gpuscope/training.sock";
  std::chrono::milliseconds training_hang_after{60000};
  std::string training_traces = "slow";  // slow, all, off: which steps become spans (with a traces sink)
  // ebpf collector and event source (docs/design/ebpf.md); `ebpf` switches the collector on
  bool ebpf = false;
  std::vector<std::string> ebpf_watch_dirs;      // checkpoint and dataset directories
  std::vector<std::string> ebpf_allow;           // connection allow-list rules (src/parsers/allow_list.h)
  std::vector<std::string> ebpf_cuda_libraries;  // libcuda.so files probed from the start
  std::string ebpf_programs = "cuda,connect,files";
  // textfile collector: *.prom files of site scripts (node_exporter's --collector.textfile.directory)
  std::string textfile_directory;  // empty: nothing read
  int textfile_max_file_kib = 4096;

  // events: sources (all off unless set), checkpoints, what is shipped
  std::string events_kmsg_path;                        // /dev/kmsg on a node
  std::vector<std::string> events_files;               // globs; --events.file is repeatable
  bool events_journal = false;                         // the systemd journal
  std::string events_journal_directory;                // empty: the system journal
  std::vector<std::string> events_journal_matches;     // "FIELD=value", OR-ed; empty: every entry
  std::vector<std::string> events_falco_files;         // Falco's JSON output files (globs)
  std::vector<std::string> events_tetragon_files;      // Tetragon's JSON export files (globs)
  bool events_falco_http = false;                      // POST /api/v1/falco on the metrics listener
  std::string events_state_dir = "/var/lib/gpuscope";  // checkpoints and the sinks' queue
  std::string events_ship_severity = "info";           // debug, info, warning, error, critical
  int events_max_line_bytes = 64 * 1024;
  std::chrono::milliseconds events_poll_interval{250};

  // push sinks (events); both share one durable queue under <state dir>/queue
  std::string loki_url;                  // e.g. http://loki:3100/loki/api/v1/push
  std::string loki_format = "protobuf";  // protobuf (snappy) or json
  std::string loki_tenant;               // X-Scope-OrgID
  std::string otlp_url;                  // e.g. http://collector:4318/v1/logs
  // OTLP logs and metrics alike: extra headers, credentials and client certificate
  std::vector<std::string> otlp_headers;  // Name=value, repeatable
  std::string otlp_basic_auth_username;
  std::string otlp_basic_auth_password_file;
  std::string otlp_bearer_token_file;
  std::string otlp_tls_cert_file;
  std::string otlp_tls_key_file;
  // OTLP metrics: every interval the current snapshot is queued under <queue>/otlp_metrics and sent.
  std::string otlp_metrics_url;  // e.g. http://collector:4318/v1/metrics; empty: off
  std::chrono::milliseconds otlp_metrics_interval{15000};
  // OTLP traces: the training collector's spans are queued under <queue>/otlp_traces and sent.
  std::string otlp_traces_url;   // e.g. http://collector:4318/v1/traces; empty: off
  std::string sink_tls_ca_file;  // https: CAs to trust instead of the system store
  std::string queue_dir;         // empty: <events state dir>/queue
  int queue_max_mib = 256;

  // remote_write (metrics): every interval the current snapshot is queued under <queue>/remote_write and
  // sent to each URL by a consumer of its own
  std::vector<std::string> remote_write_urls;              // repeatable; empty: off
  std::chrono::milliseconds remote_write_interval{15000};  // how often a batch is queued
  std::string remote_write_protocol = "1.0";               // 1.0, 2.0 or auto
  std::vector<std::string> remote_write_external_labels;   // name=value, repeatable
  std::string remote_write_tenant;                         // X-Scope-OrgID
  std::string remote_write_basic_auth_username;            // with the password file
  std::string remote_write_basic_auth_password_file;
  std::string remote_write_bearer_token_file;                     // Authorization: Bearer <file's content>
  std::string remote_write_tls_cert_file;                         // https client certificate (PEM)
  std::string remote_write_tls_key_file;                          // and its key
  std::vector<RemoteWriteEndpointConfig> remote_write_endpoints;  // YAML only; each with its own settings

  // Keyed by collector name; filled with every registered collector's defaults before parsing.
  std::map<std::string, CollectorConfig, std::less<>> collectors;

  // log
  std::string log_level = "info";
  std::string log_format = "auto";  // auto (journal under systemd, else logfmt), logfmt, json, journal

  // modes
  bool once = false;                // collect once, print the exposition to stdout, exit
  bool print_metrics_docs = false;  // print docs/metrics.md to stdout, exit
  bool print_config_docs = false;   // print README.md's configuration section to stdout, exit
  bool print_config_file = false;   // print a commented YAML file of the effective configuration, exit
  bool show_version = false;
  bool show_help = false;
};

// Overlays the YAML document on `config`. Collector names must already be present in
// config->collectors (the registry's defaults); unknown ones are errors.
Status ApplyConfigYaml(std::string_view yaml, AgentConfig* config);

// Overlays flags (argv without the program name) on `config`. Accepts --flag=value and --flag value.
Status ApplyFlags(const std::vector<std::string>& args, AgentConfig* config);

// Defaults -> file named by --config (if any) -> flags. Reads the file; the only I/O here.
Status LoadConfig(const std::vector<std::string>& args, AgentConfig* config);

// Checks each option's value against its description (allowed words, lowest integer, positive
// durations, URL and address shapes) and what no single option can (a queue directory for the sinks).
// The first problem found is returned, naming the option's key and flag.
Status ValidateConfig(const AgentConfig& config);

// --help: every flag with its help, default and allowed values, then the collectors' switches.
// `defaults` is a default AgentConfig with the registry's collectors filled in.
std::string FlagsHelp(const AgentConfig& defaults);

// --print-config-file: a commented YAML configuration file of every key, each under its help text. The
// keys whose value in `config` differs from `defaults` are written with that value; the others are
// commented out at their defaults (the package's /etc/gpuscope/agent.yml is made this way).
std::string CommentedConfigFile(const AgentConfig& defaults, const AgentConfig& config);

// --print-config-docs: the markdown between the config-docs markers of README.md's Configuration
// section: the flag table and a YAML file of every key at its default.
std::string ConfigDocs(const AgentConfig& defaults);

}  // namespace gpuscope
