#include "src/agent/registry.h"

#include <cstdlib>

#include "src/agent/training_hang_event.h"
#include "src/attribution/attributed_collector.h"
#include "src/attribution/proc_resolver.h"
#include "src/collectors/ebpf/ebpf_collector.h"
#include "src/collectors/gpu/gpu_collector.h"
#include "src/collectors/host/host_collector.h"
#include "src/collectors/infiniband/infiniband_collector.h"
#include "src/collectors/process/process_collector.h"
#include "src/collectors/slurm/slurm_scheduler_collector.h"
#include "src/collectors/textfile/textfile_collector.h"
#include "src/collectors/training/training_collector.h"
#include "src/events/sources/posted_source.h"
#include "src/node/node_state.h"
#include "src/parsers/allow_list.h"
#include "src/parsers/text.h"
#include "src/platform/dcgm/dcgm_library.h"

namespace gpuscope {

void CollectorRegistry::FillDefaults(AgentConfig* config) const {
  for (const CollectorEntry& entry : entries()) {
    config->collectors[entry.name] = CollectorConfig{entry.enabled_by_default, entry.default_interval};
  }
}

namespace {

// A DCGM health incident as a dcgm_health event: warning for WARN, critical for FAIL.
PostedEvent DcgmHealthEvent(const DcgmIncident& incident) {
  PostedEvent posted;
  const std::string system(DcgmHealthSystemName(incident.system));
  posted.event.event_class = "dcgm_health";
  posted.event.severity = incident.failure ? EventSeverity::kCritical : EventSeverity::kWarning;
  posted.event.summary = "DCGM health " + std::string(incident.failure ? "failure" : "warning") + " (" +
                         system + ") on GPU " + incident.uuid + ": " + incident.message;
  // UUID: the event path ties the event to its GPU (gpu) and that GPU's job (hpc_job) by it.
  posted.event.fields = {{"UUID", incident.uuid},
                         {"system", system},
                         {"result", incident.failure ? "fail" : "warn"},
                         {"code", std::to_string(incident.code)},
                         {"detail", incident.message}};
  posted.line = posted.event.summary;
  posted.origin = "dcgm";
  return posted;
}

CollectorRegistry MakeBuiltins() {
  CollectorRegistry registry;
  Status status = registry.Register(
      {"gpu", "NVIDIA GPUs through NVML: dcgm-exporter's fields and more", true, std::chrono::seconds(1),
       [](const AgentConfig& config, const CollectorContext& context) -> std::unique_ptr<Collector> {
         GpuCollectorOptions options;
         options.nvml_library = config.nvml_library;
         options.nvml = context.nvml;
         options.call_deadline = config.nvml_call_deadline;
         options.node_state = context.node;
         if (!config.hostname.empty()) options.hostname = config.hostname;
         options.dcgm_compat = config.dcgm_compat == "4.9" ? DcgmCompat::kDcgm49 : DcgmCompat::kDcgm3;
         // DCGM, optional (docs/design/dcgm.md); seams that bind NVML per simulated node leave it off.
         options.dcgm = config.dcgm == "off" || context.nvml != nullptr ? GpuCollectorOptions::Dcgm::kOff
                        : config.dcgm == "on"                           ? GpuCollectorOptions::Dcgm::kOn
                                                                        : GpuCollectorOptions::Dcgm::kAuto;
         options.dcgm_options.libraries = config.dcgm_library.empty() ? DcgmLibrary::DefaultCandidates()
                                                                      : std::vector{config.dcgm_library};
         options.dcgm_options.mode = config.dcgm_mode == "embedded"     ? DcgmMode::kEmbedded
                                     : config.dcgm_mode == "hostengine" ? DcgmMode::kHostengine
                                                                        : DcgmMode::kAuto;
         options.dcgm_options.address = config.dcgm_address;
         if (auto gpu = config.collectors.find("gpu"); gpu != config.collectors.end()) {
           options.dcgm_options.interval = gpu->second.interval;
         }
         for (const std::string_view word : text::Split(config.dcgm_health, ',')) {  // validated
           if (auto system = ParseDcgmHealthSystem(word)) {
             options.dcgm_options.health[static_cast<size_t>(*system)] = true;
           }
         }
         options.prefer_dcgm_profiling = config.dcgm_prefer_profiling;
         if (PostedEvents* events = context.gpu_events) {
           options.on_dcgm_incident = [events](const DcgmIncident& incident) {
             events->Post(DcgmHealthEvent(incident));
           };
         }
         // Every GPU series is tied to its job by the attribution layer wrapped around the collector.
         std::unique_ptr<ProcResolver> resolver;
         if (config.attribution_proc) resolver = std::make_unique<ProcResolver>(config.procfs);
         AttributionOptions attribution;
         attribution.hpc_job_label = config.hpc_job_label;
         attribution.kubernetes = config.kubernetes;
         return std::make_unique<AttributedCollector>(std::make_unique<GpuCollector>(options), context.node,
                                                      std::move(resolver), attribution);
       }});
  if (status.ok()) {
    status = registry.Register(
        {"process", "the agent's own CPU, memory and file descriptors", true, std::chrono::seconds(5),
         [](const AgentConfig&, const CollectorContext&) -> std::unique_ptr<Collector> {
           return std::make_unique<ProcessCollector>();
         }});
  }
  if (status.ok()) {
    status = registry.Register(
        {"infiniband",
         "InfiniBand and RoCE ports from sysfs: counters, driver hw_counters, link, GPU affinity", true,
         std::chrono::seconds(15),
         [](const AgentConfig& config, const CollectorContext&) -> std::unique_ptr<Collector> {
           InfinibandCollectorOptions options;
           options.sysfs = config.sysfs;
           return std::make_unique<InfinibandCollector>(options);
         }});
  }
  if (status.ok()) {
    status = registry.Register(
        {"host",
         "Host topology for GPU work: NUMA and PCIe links of each GPU, misplaced pinning, memory pressure",
         true, std::chrono::seconds(15),
         [](const AgentConfig& config, const CollectorContext& context) -> std::unique_ptr<Collector> {
           HostCollectorOptions options;
           options.sysfs = config.sysfs;
           options.procfs = config.procfs;
           options.gpu_processes = &context.node->gpu_processes();
           return std::make_unique<HostCollector>(options);
         }});
  }
  if (status.ok()) {
    status = registry.Register(
        {"slurm",
         "The Slurm scheduler: jobs, pending reasons, GPUs per partition and node, node states, sdiag, "
         "fairshare (enable on one node per cluster)",
         false, std::chrono::seconds(30),
         [](const AgentConfig& config, const CollectorContext&) -> std::unique_ptr<Collector> {
           SlurmSchedulerOptions options;
           if (!config.slurm_bin_dir.empty()) {
             options.squeue_path = config.slurm_bin_dir + "/squeue";
             options.sinfo_path = config.slurm_bin_dir + "/sinfo";
             options.sdiag_path = config.slurm_bin_dir + "/sdiag";
             options.sshare_path = config.slurm_bin_dir + "/sshare";
           }
           options.timeout = config.slurm_command_timeout;
           options.include_user = config.slurm_include_user;
           return std::make_unique<SlurmSchedulerCollector>(options);
         }});
  }
  if (status.ok()) {
    status = registry.Register(
        {"training",
         "Training telemetry: each rank's steps, collectives and marks from the training socket, straggler "
         "scores and hung ranks (docs/design/training.md)",
         false, std::chrono::seconds(5),
         [](const AgentConfig& config, const CollectorContext& context) -> std::unique_ptr<Collector> {
           TrainingCollectorOptions options;
           options.socket_path = config.training_socket;
           options.procfs = config.procfs;
           options.node = context.node;
           options.hostname = config.hostname;
           options.state.hang_after_ns =
               std::chrono::duration_cast<std::chrono::nanoseconds>(config.training_hang_after).count();
           options.spans = context.spans;
           options.traces.traces =
               ParseTrainingTraces(config.training_traces).value_or(TrainingTraces::kSlow);
           if (PostedEvents* events = context.training_events) {
             options.on_hang = [events](const TrainingHang& hang, const std::string& hostname,
                                        int64_t now_ns) {
               events->Post(TrainingHangEvent(hang, hostname, now_ns));
             };
           }
           return std::make_unique<TrainingCollector>(options);
         }});
  }
  if (status.ok()) {
    status = registry.Register(
        {"ebpf",
         "eBPF without instrumenting the job: CUDA memory per job (uprobes on libcuda), outbound connections "
         "of job processes against --ebpf.allow, opens, reads and writes below --ebpf.watch-dir "
         "(docs/design/ebpf.md); on with --ebpf",
         false, std::chrono::seconds(1),
         [](const AgentConfig& config, const CollectorContext& context) -> std::unique_ptr<Collector> {
           EbpfCollectorOptions options;
           options.programs.cuda = options.programs.connect = options.programs.files = false;
           for (const std::string_view word : text::Split(config.ebpf_programs, ',')) {  // validated
             if (word == "cuda") options.programs.cuda = true;
             if (word == "connect") options.programs.connect = true;
             // The files program hooks every syscall's entry and return on the node (bench/results/
             // ebpf_overhead.md): without a directory to watch it would cost and count nothing.
             if (word == "files") options.programs.files = !config.ebpf_watch_dirs.empty();
           }
           options.programs.watch_dirs = config.ebpf_watch_dirs;
           for (const std::string& rule : config.ebpf_allow) {
             if (std::optional<AllowRule> parsed = ParseAllowRule(rule)) options.allow.push_back(*parsed);
           }
           options.cuda_libraries = config.ebpf_cuda_libraries;
           options.procfs = config.procfs;
           options.node = context.node;
           if (PostedEvents* events = context.ebpf_events) {
             options.post = [events](EbpfNotice notice) {
               PostedEvent posted;
               posted.event.event_class = std::move(notice.event_class);
               posted.event.severity = EventSeverity::kWarning;
               posted.event.summary = notice.summary;
               posted.event.fields = std::move(notice.fields);
               posted.line = std::move(notice.summary);
               posted.origin = "ebpf";
               posted.time_unix_ns = notice.time_unix_ns;
               events->Post(std::move(posted));
             };
           }
           return std::make_unique<EbpfCollector>(options);
         }});
  }
  if (status.ok()) {
    status = registry.Register(
        {"textfile",
         "Metrics site scripts write as *.prom files (text format 0.0.4) into "
         "--collector.textfile.directory, as node_exporter's textfile collector reads them",
         true, std::chrono::seconds(15),
         [](const AgentConfig& config, const CollectorContext&) -> std::unique_ptr<Collector> {
           TextfileCollectorOptions options;
           options.directory = config.textfile_directory;
           options.max_file_bytes = static_cast<size_t>(config.textfile_max_file_kib) * 1024;
           return std::make_unique<TextfileCollector>(options);
         }});
  }
  if (!status.ok()) std::abort();  // duplicate built-in names are a programming error
  return registry;
}

}  // namespace

const CollectorRegistry& BuiltinCollectors() {
  static const CollectorRegistry registry = MakeBuiltins();
  return registry;
}

}  // namespace gpuscope
