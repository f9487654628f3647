#include "src/cli/check_findings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "src/core/metric.h"
#include "src/parsers/pci.h"
#include "src/parsers/prom_text.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxErrorChars = 200;

// One GPU as gpuscope_gpu_info names it.
struct GpuIdentity {
  std::string index;  // NVML index ("5")
  std::string uuid;
  std::string pci_bus_id;  // NVML's spelling
  std::string driver;
};

std::string LabelOf(const Sample& sample, std::string_view name) {
  for (const auto& [key, value] : sample.labels) {
    if (key == name) return value;
  }
  return "";
}

std::string FormatCount(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", value);
  return text;
}

// The exposition's families by name, and the GPUs it names.
class AgentMetrics {
 public:
  explicit AgentMetrics(std::vector<MetricFamily> families) : families_(std::move(families)) {
    for (const MetricFamily& family : families_) by_name_[family.name] = &family;
    for (const Sample& s : Samples("gpuscope_gpu_info")) {
      GpuIdentity gpu{LabelOf(s, "gpu"), LabelOf(s, "UUID"), NormalBusId(LabelOf(s, "pci_bus_id")),
                      LabelOf(s, "DCGM_FI_DRIVER_VERSION")};
      if (gpu.uuid.empty() || !seen_.insert(gpu.uuid).second) continue;
      gpus_.push_back(gpu);
    }
    std::sort(gpus_.begin(), gpus_.end(), [](const GpuIdentity& a, const GpuIdentity& b) {
      return std::make_pair(a.index.size(), a.index) < std::make_pair(b.index.size(), b.index);
    });
  }

  AgentMetrics(const AgentMetrics&) = delete;  // by_name_ points into families_
  AgentMetrics& operator=(const AgentMetrics&) = delete;

  bool Has(const std::string& name) const { return by_name_.count(name) != 0; }

  const std::vector<Sample>& Samples(const std::string& name) const {
    static const std::vector<Sample> kNone;
    auto it = by_name_.find(name);
    return it == by_name_.end() ? kNone : it->second->samples;
  }

  const std::vector<GpuIdentity>& gpus() const { return gpus_; }

  // "GPU 5 (GPU-...)" for a GPU series' gpu and UUID labels.
  static std::string GpuSubject(const Sample& s) {
    std::string subject = "GPU " + LabelOf(s, "gpu");
    const std::string uuid = LabelOf(s, "UUID");
    if (!uuid.empty()) subject += " (" + uuid + ")";
    return subject;
  }

  // The subject of a series that only carries pci_bus_id (host collector).
  std::string SubjectOfBusId(const std::string& bus_id) const {
    const std::string normal = NormalBusId(bus_id);
    for (const GpuIdentity& gpu : gpus_) {
      if (gpu.pci_bus_id == normal) return "GPU " + gpu.index + " (" + gpu.uuid + ")";
    }
    return "GPU at " + bus_id;
  }

  static std::string NormalBusId(const std::string& text) {
    std::optional<std::string> normal = CanonicalPciBusId(text);
    return normal ? *normal : text;
  }

 private:
  std::vector<MetricFamily> families_;
  std::map<std::string, const MetricFamily*> by_name_;
  std::vector<GpuIdentity> gpus_;
  std::set<std::string> seen_;
};

class Evaluator {
 public:
  Evaluator(const AgentMetrics& metrics, const CheckOptions& options) : m_(metrics), options_(options) {}

  std::vector<CheckFinding> Run() {
    Nvml();
    Gpus();
    Driver();
    Ecc();
    Memory();
    Xid();
    Pcie();
    Nvlink();
    Clocks();
    Dcgm();
    Infiniband();
    return std::move(findings_);
  }

 private:
  std::string Runbook(std::string_view alert) const {
    return alert.empty() ? "" : options_.runbook_url_base + std::string(alert) + ".md";
  }

  void Add(std::string check, CheckStatus status, std::string subject, std::string message,
           std::string_view alert) {
    findings_.push_back({std::move(check), status, std::move(subject), std::move(message), Runbook(alert)});
  }

  size_t Before() const { return findings_.size(); }
  bool NoneSince(size_t before) const { return findings_.size() == before; }

  std::string GpusWord() const {
    const size_t n = m_.gpus().size();
    return std::to_string(n) + (n == 1 ? " GPU" : " GPUs");
  }

  void Nvml() {
    const Sample* gpu_collector = nullptr;
    for (const Sample& s : m_.Samples("gpuscope_collector_success")) {
      if (LabelOf(s, "collector") == "gpu") gpu_collector = &s;
    }
    if (gpu_collector == nullptr) {
      Add("nvml", CheckStatus::kFail, "",
          "the agent runs no gpu collector (NVML could not be loaded, or --no-collector.gpu)",
          "GpuNodeGpusMissing");
    } else if (gpu_collector->value != 1) {
      Add("nvml", CheckStatus::kFail, "",
          "the agent's gpu collector failed its last cycle (NVML not answering)", "GpuNodeGpusMissing");
    } else {
      Add("nvml", CheckStatus::kPass, "", "the gpu collector's last cycle succeeded", "");
    }
  }

  void Gpus() {
    const size_t before = Before();
    const int known = static_cast<int>(m_.gpus().size());
    if (options_.expect_gpus >= 0 && known < options_.expect_gpus) {
      Add("gpus", CheckStatus::kFail, "",
          std::to_string(known) + " GPUs present, " + std::to_string(options_.expect_gpus) + " expected",
          "GpuNodeGpusMissing");
    } else if (options_.expect_gpus >= 0 && known > options_.expect_gpus) {
      Add("gpus", CheckStatus::kWarn, "",
          std::to_string(known) + " GPUs present, only " + std::to_string(options_.expect_gpus) +
              " expected (--expect-gpus)",
          "");
    } else if (options_.expect_gpus < 0 && known == 0) {
      Add("gpus", CheckStatus::kWarn, "", "the agent knows no GPU (give --expect-gpus N for a GPU node)",
          "GpuNodeGpusMissing");
    }
    std::set<std::string> nvml_bus_ids;
    for (const GpuIdentity& gpu : m_.gpus()) nvml_bus_ids.insert(gpu.pci_bus_id);
    // The host collector lists every NVIDIA GPU function in sysfs. When it finds more than NVML shows,
    // the ones NVML does not show have fallen off the bus or failed to initialise. (By count first: a
    // sysfs root that is not this machine's, as in the demo's fixtures, names other bus ids.)
    std::set<std::string> reported;
    std::set<std::string> on_bus;
    for (const Sample& s : m_.Samples("gpuscope_gpu_numa_info")) {
      const std::string bus = AgentMetrics::NormalBusId(LabelOf(s, "pci_bus_id"));
      if (!bus.empty()) on_bus.insert(bus);
    }
    if (on_bus.size() > nvml_bus_ids.size()) {
      for (const std::string& bus : on_bus) {
        if (!nvml_bus_ids.count(bus) && reported.insert(bus).second) {
          Add("gpus", CheckStatus::kFail, "GPU at " + bus,
              "on the PCI bus but NVML does not show it (" + std::to_string(on_bus.size()) + " on the bus, " +
                  std::to_string(nvml_bus_ids.size()) + " in NVML)",
              "GpuNodeGpusMissing");
        }
      }
    }
    // A kernel-log XID of a GPU NVML does not show keeps its pci_bus_id and an empty gpu.
    for (const Sample& s : m_.Samples("gpuscope_xid_errors_total")) {
      const std::string bus = AgentMetrics::NormalBusId(LabelOf(s, "pci_bus_id"));
      if (LabelOf(s, "gpu").empty() && !bus.empty() && !nvml_bus_ids.count(bus) && s.value > 0 &&
          reported.insert(bus).second) {
        Add("gpus", CheckStatus::kFail, "GPU at " + bus,
            "reported XID " + LabelOf(s, "xid") + " in the kernel log but NVML does not show it",
            "GpuNodeGpusMissing");
      }
    }
    for (const Sample& s : m_.Samples("gpuscope_gpu_up")) {
      if (s.value != 1 && LabelOf(s, "GPU_I_ID").empty()) {
        Add("gpus", CheckStatus::kFail, AgentMetrics::GpuSubject(s),
            "does not answer NVML (lost, fallen off the bus, or calls past their deadline)", "GpuLost");
      }
    }
    if (NoneSince(before)) {
      std::string message = GpusWord() + " present";
      if (options_.expect_gpus >= 0) message += " (" + std::to_string(options_.expect_gpus) + " expected)";
      Add("gpus", CheckStatus::kPass, "", message + ", all answering", "");
    }
  }

  static bool DriverMatches(const std::string& version, const std::string& expected) {
    if (version == expected) return true;
    return version.size() > expected.size() && version.compare(0, expected.size(), expected) == 0 &&
           version[expected.size()] == '.';
  }

  void Driver() {
    std::set<std::string> versions;
    for (const GpuIdentity& gpu : m_.gpus()) versions.insert(gpu.driver);
    std::string list;
    for (const std::string& v : versions) list += (list.empty() ? "" : ", ") + (v.empty() ? "(none)" : v);
    if (versions.empty()) return;
    if (options_.expect_driver.empty()) {
      Add("driver", CheckStatus::kPass, "", "driver " + list + " (no --expect-driver given)", "");
      return;
    }
    for (const std::string& v : versions) {
      if (!DriverMatches(v, options_.expect_driver)) {
        Add("driver", CheckStatus::kFail, "", "driver " + list + ", expected " + options_.expect_driver, "");
        return;
      }
    }
    Add("driver", CheckStatus::kPass, "", "driver " + list + " as expected", "");
  }

  void Ecc() {
    const size_t before = Before();
    for (const Sample& s : m_.Samples("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")) {
      if (s.value > 0) {
        Add("ecc", CheckStatus::kFail, AgentMetrics::GpuSubject(s),
            FormatCount(s.value) + " volatile double-bit ECC error" + (s.value == 1 ? "" : "s") +
                " since the driver loaded",
            "GpuEccDoubleBitError");
      }
    }
    if (NoneSince(before)) Add("ecc", CheckStatus::kPass, "", "no volatile double-bit ECC error", "");
  }

  void Memory() {
    const size_t before = Before();
    for (const Sample& s : m_.Samples("DCGM_FI_DEV_ROW_REMAP_FAILURE")) {
      if (s.value > 0) {
        Add("memory", CheckStatus::kFail, AgentMetrics::GpuSubject(s),
            "row remapping failed: the GPU has no spare rows left", "GpuRowRemapFailure");
      }
    }
    for (const Sample& s : m_.Samples("DCGM_FI_DEV_ROW_REMAP_PENDING")) {
      if (s.value > 0) {
        Add("memory", CheckStatus::kFail, AgentMetrics::GpuSubject(s),
            "row remap pending: reset the GPU to apply it", "GpuRowRemapPending");
      }
    }
    for (const Sample& s : m_.Samples("DCGM_FI_DEV_RETIRED_PENDING")) {
      if (s.value > 0) {
        Add("memory", CheckStatus::kFail, AgentMetrics::GpuSubject(s),
            "page retirement pending: reset the GPU to apply it", "GpuRowRemapPending");
      }
    }
    if (NoneSince(before)) {
      Add("memory", CheckStatus::kPass, "", "no row remap failure, no remap or retirement pending", "");
    }
  }

  static std::string LastAt(double timestamp) {
    if (timestamp <= 0) return "";
    const std::time_t t = static_cast<std::time_t>(timestamp);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[40];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return std::string(", last at ") + text;
  }

  void Xid() {
    const size_t before = Before();
    std::map<std::string, double> last_seen;  // gpu/xid -> timestamp
    for (const Sample& s : m_.Samples("gpuscope_xid_last_seen_timestamp_seconds")) {
      last_seen[LabelOf(s, "UUID") + "/" + LabelOf(s, "pci_bus_id") + "/" + LabelOf(s, "xid")] = s.value;
    }
    std::set<std::string> other;
    for (const Sample& s : m_.Samples("gpuscope_xid_errors_total")) {
      if (s.value <= 0) continue;
      const std::string action = LabelOf(s, "action");
      const std::string xid = LabelOf(s, "xid");
      if (action == "reset_gpu" || action == "reboot" || action == "contact_support") {
        const std::string subject =
            LabelOf(s, "gpu").empty() ? "GPU at " + LabelOf(s, "pci_bus_id") : AgentMetrics::GpuSubject(s);
        auto seen = last_seen.find(LabelOf(s, "UUID") + "/" + LabelOf(s, "pci_bus_id") + "/" + xid);
        Add("xid", CheckStatus::kFail, subject,
            std::string("XID ")
                .append(xid)
                .append(" x")
                .append(FormatCount(s.value))
                .append(" (catalog action: ")
                .append(action)
                .append(")")
                .append(seen == last_seen.end() ? "" : LastAt(seen->second)),
            "GpuXidCritical");
      } else {
        other.insert(xid);
      }
    }
    if (NoneSince(before)) {
      std::string message = "no XID asking for a GPU reset or reboot";
      if (!other.empty()) {
        std::string list;
        for (const std::string& x : other) list += (list.empty() ? "" : ", ") + x;
        message += " (others seen: " + list + ")";
      }
      Add("xid", CheckStatus::kPass, "", message, "");
    }
  }

  // Value of `name` for the GPU of `s` (same UUID), if exported.
  std::optional<double> SameGpu(const std::string& name, const Sample& s) const {
    const std::string uuid = LabelOf(s, "UUID");
    for (const Sample& other : m_.Samples(name)) {
      if (LabelOf(other, "UUID") == uuid && LabelOf(other, "GPU_I_ID").empty()) return other.value;
    }
    return std::nullopt;
  }

  void Pcie() {
    const size_t before = Before();
    std::set<std::string> narrow;  // bus ids already reported
    for (const Sample& s : m_.Samples("DCGM_FI_DEV_PCIE_LINK_WIDTH")) {
      std::optional<double> max = SameGpu("gpuscope_gpu_pcie_link_max_width", s);
      if (max && s.value > 0 && s.value < *max) {
        narrow.insert(AgentMetrics::NormalBusId(LabelOf(s, "pci_bus_id")));
        Add("pcie", CheckStatus::kWarn, AgentMetrics::GpuSubject(s),
            "PCIe link x" + FormatCount(s.value) + " of x" + FormatCount(*max), "GpuPcieLinkDegraded");
      }
    }
    for (const Sample& s : m_.Samples("gpuscope_gpu_pcie_link_degraded")) {
      const std::string bus = AgentMetrics::NormalBusId(LabelOf(s, "pci_bus_id"));
      if (s.value == 1 && narrow.insert(bus).second) {
        Add("pcie", CheckStatus::kWarn, m_.SubjectOfBusId(LabelOf(s, "pci_bus_id")),
            "a PCIe link on its path to the root port runs narrower than both ends support",
            "GpuPcieLinkDegraded");
      }
    }
    // Speed: a link below its generation is normal power saving while the GPU idles.
    std::set<std::string> slow;
    for (const Sample& s : m_.Samples("DCGM_FI_DEV_PCIE_LINK_GEN")) {
      std::optional<double> max = SameGpu("gpuscope_gpu_pcie_link_max_generation", s);
      std::optional<double> util = SameGpu("DCGM_FI_DEV_GPU_UTIL", s);
      if (max && util && s.value > 0 && s.value < *max && *util >= options_.pcie_busy_utilization) {
        slow.insert(AgentMetrics::NormalBusId(LabelOf(s, "pci_bus_id")));
        Add("pcie", CheckStatus::kWarn, AgentMetrics::GpuSubject(s),
            "PCIe link Gen" + FormatCount(s.value) + " of Gen" + FormatCount(*max) + " while " +
                FormatCount(*util) + " % busy",
            "GpuPcieLinkDegraded");
      }
    }
    for (const Sample& s : m_.Samples("gpuscope_gpu_pcie_link_speed_degraded")) {
      const std::string bus = AgentMetrics::NormalBusId(LabelOf(s, "pci_bus_id"));
      if (s.value != 1 || slow.count(bus)) continue;
      for (const Sample& u : m_.Samples("DCGM_FI_DEV_GPU_UTIL")) {
        if (AgentMetrics::NormalBusId(LabelOf(u, "pci_bus_id")) == bus && LabelOf(u, "GPU_I_ID").empty() &&
            u.value >= options_.pcie_busy_utilization && slow.insert(bus).second) {
          Add("pcie", CheckStatus::kWarn, AgentMetrics::GpuSubject(u),
              "a PCIe link on its path to the root port runs below its generation while " +
                  FormatCount(u.value) + " % busy",
              "GpuPcieLinkDegraded");
        }
      }
    }
    if (NoneSince(before)) {
      Add("pcie", CheckStatus::kPass, "", "every GPU's PCIe link at full width (and speed when busy)", "");
    }
  }

  void Nvlink() {
    const size_t before = Before();
    size_t links = 0;
    for (const Sample& s : m_.Samples("gpuscope_nvlink_up")) {
      ++links;
      if (s.value != 1) {
        Add("nvlink", CheckStatus::kFail, AgentMetrics::GpuSubject(s) + " link " + LabelOf(s, "link"),
            "NVLink link down", "GpuNvlinkErrorsRising");
      }
    }
    std::map<std::pair<std::string, std::string>, std::pair<const Sample*, double>> errors;  // (uuid, link)
    for (const Sample& s : m_.Samples("gpuscope_nvlink_errors_total")) {
      const std::string counter = LabelOf(s, "counter");
      if (counter != "crc_flit" && counter != "crc_data" && counter != "replay" && counter != "recovery")
        continue;
      auto& entry = errors[{LabelOf(s, "UUID"), LabelOf(s, "link")}];
      entry.first = &s;
      entry.second += s.value;
    }
    for (const auto& [key, entry] : errors) {
      if (entry.second > options_.nvlink_max_errors) {
        Add("nvlink", CheckStatus::kWarn, AgentMetrics::GpuSubject(*entry.first) + " link " + key.second,
            FormatCount(entry.second) +
                " CRC, replay and recovery errors since the driver loaded (more than " +
                FormatCount(options_.nvlink_max_errors) + ")",
            "GpuNvlinkErrorsRising");
      }
    }
    if (NoneSince(before)) {
      Add("nvlink", CheckStatus::kPass, "",
          links == 0 ? "no NVLink links"
                     : std::to_string(links) + " NVLink links up, no errors above the threshold",
          "");
    }
  }

  void Clocks() {
    const size_t before = Before();
    std::map<std::string, std::pair<const Sample*, std::string>> held;  // uuid -> (sample, reasons)
    std::map<std::string, std::string> runbook;
    for (const Sample& s : m_.Samples("gpuscope_gpu_clock_event_active")) {
      const std::string reason = LabelOf(s, "reason");
      if (s.value != 1 || (reason != "hw_slowdown" && reason != "hw_thermal_slowdown" &&
                           reason != "hw_power_brake_slowdown")) {
        continue;
      }
      auto& entry = held[LabelOf(s, "UUID")];
      entry.first = &s;
      entry.second += (entry.second.empty() ? "" : ", ") + reason;
      runbook[LabelOf(s, "UUID")] =
          reason == "hw_power_brake_slowdown" ? "GpuPowerThrottling" : "GpuThermalThrottling";
    }
    for (const auto& [uuid, entry] : held) {
      Add("clocks", CheckStatus::kWarn, AgentMetrics::GpuSubject(*entry.first),
          "clocks held down by hardware: " + entry.second, runbook[uuid]);
    }
    if (NoneSince(before)) Add("clocks", CheckStatus::kPass, "", "no hardware clock slowdown", "");
  }

  // gpuscope_dcgm_health exists only where the agent uses DCGM (its health watches, --dcgm.health), and
  // vanishes while its DCGM connection is down (docs/design/dcgm.md): then DCGM has nothing to say here.
  void Dcgm() {
    const std::vector<Sample>& health = m_.Samples("gpuscope_dcgm_health");
    if (health.empty()) return;
    const size_t before = Before();
    std::set<std::string> gpus;
    std::set<std::string> systems;
    for (const Sample& s : health) {
      gpus.insert(LabelOf(s, "UUID"));
      systems.insert(LabelOf(s, "system"));
      if (s.value == 2) {
        Add("dcgm", CheckStatus::kFail, AgentMetrics::GpuSubject(s),
            "DCGM's " + LabelOf(s, "system") + " health check fails", "GpuDcgmHealthFailure");
      } else if (s.value == 1) {
        Add("dcgm", CheckStatus::kWarn, AgentMetrics::GpuSubject(s),
            "DCGM's " + LabelOf(s, "system") + " health check warns", "GpuDcgmHealthWarning");
      }
    }
    if (NoneSince(before)) {
      std::string list;
      for (const std::string& system : systems) list += (list.empty() ? "" : ", ") + system;
      Add("dcgm", CheckStatus::kPass, "",
          "DCGM's health checks pass on " + std::to_string(gpus.size()) +
              (gpus.size() == 1 ? " GPU" : " GPUs") + " (" + list + ")",
          "");
    }
  }

  bool Ignored(const std::string& device, const std::string& port) const {
    for (const std::string& entry : options_.infiniband_ignore) {
      if (entry == device || entry == std::string(device).append(":").append(port)) return true;
    }
    return false;
  }

  void Infiniband() {
    const size_t before = Before();
    std::map<std::pair<std::string, std::string>, double> physical;
    for (const Sample& s : m_.Samples("gpuscope_infiniband_port_physical_state_id")) {
      physical[{LabelOf(s, "device"), LabelOf(s, "port")}] = s.value;
    }
    int active = 0;
    std::vector<std::string> off;  // disabled or ignored
    for (const Sample& s : m_.Samples("gpuscope_infiniband_port_state_id")) {
      const std::string device = LabelOf(s, "device");
      const std::string port = LabelOf(s, "port");
      const std::string subject = std::string(device).append(" port ").append(port);
      auto phys = physical.find({device, port});
      if (s.value == 4 || s.value == 5) {  // Active, ActiveDefer
        ++active;
      } else if (Ignored(device, port)) {
        off.push_back(subject + " ignored");
      } else if (phys != physical.end() && phys->second == 3) {  // physical state Disabled: off on purpose
        off.push_back(subject + " disabled");
      } else if (s.value == 1) {
        Add("infiniband", CheckStatus::kFail, subject,
            "port Down" + std::string(phys != physical.end() && phys->second == 2
                                          ? " (physical: Polling, no link)"
                                          : ""),
            "GpuNodeCollectiveErrors");
      } else {
        Add("infiniband", CheckStatus::kWarn, subject,
            std::string("port ") +
                (s.value == 2   ? "Init"
                 : s.value == 3 ? "Armed"
                                : "state " + FormatCount(s.value)) +
                ": link up but not Active (no subnet manager?)",
            "GpuNodeCollectiveErrors");
      }
    }
    if (NoneSince(before)) {
      std::string message = active == 0 && off.empty() ? "no InfiniBand or RoCE ports"
                                                       : std::to_string(active) + " ports Active";
      for (const std::string& o : off) message += "; " + o;
      Add("infiniband", CheckStatus::kPass, "", message, "");
    }
  }

  const AgentMetrics& m_;
  const CheckOptions& options_;
  std::vector<CheckFinding> findings_;
};

}  // namespace

std::vector<CheckFinding> EvaluateAgentMetrics(std::string_view exposition, const CheckOptions& options) {
  PromTextParse parsed =
      ParsePromText(exposition, PromTextOptions{.histograms_as_untyped = true, .mixed_label_names = true});
  const std::string runbook = options.runbook_url_base + "GpuscopeAgentDown.md";
  if (!parsed.error.empty()) {
    std::string error = parsed.error;  // names the offending line, which may be megabytes long
    if (error.size() > kMaxErrorChars) error = error.substr(0, kMaxErrorChars) + "...";
    return {{"agent", CheckStatus::kFail, "", "the agent's /metrics does not parse: " + error, runbook}};
  }
  AgentMetrics metrics(std::move(parsed.families));
  if (!metrics.Has("gpuscope_collector_success")) {
    return {{"agent", CheckStatus::kFail, "",
             "no gpuscope_collector_success in the answer: is --agent.url a gpuscope-agent?", runbook}};
  }
  std::vector<CheckFinding> findings = {{"agent", CheckStatus::kPass, "", "/metrics read and parsed", ""}};
  for (CheckFinding& f : Evaluator(metrics, options).Run()) findings.push_back(std::move(f));
  return findings;
}

CheckFinding AgentUnreachableFinding(const std::string& url, const std::string& reason,
                                     const CheckOptions& options) {
  return {"agent", CheckStatus::kFail, "", "cannot read " + url + ": " + reason,
          options.runbook_url_base + "GpuscopeAgentDown.md"};
}

CheckStatus Verdict(const std::vector<CheckFinding>& findings) {
  CheckStatus worst = CheckStatus::kPass;
  for (const CheckFinding& f : findings) worst = std::max(worst, f.status);
  return worst;
}

std::string_view CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
  }
  return "fail";
}

std::string RenderFindingsText(const std::vector<CheckFinding>& findings) {
  std::string out;
  int counts[3] = {0, 0, 0};
  for (const CheckFinding& f : findings) {
    ++counts[static_cast<int>(f.status)];
    std::string status(CheckStatusName(f.status));
    std::transform(status.begin(), status.end(), status.begin(), [](char c) { return c - 'a' + 'A'; });
    std::string check = f.check;
    check.resize(std::max<size_t>(check.size() + 1, 11), ' ');
    out.append(status).append("  ").append(check);
    if (!f.subject.empty()) out.append(f.subject).append(": ");
    out.append(f.message);
    if (!f.runbook.empty()) out += "  " + f.runbook;
    out += "\n";
  }
  out += "check: " + std::string(CheckStatusName(Verdict(findings))) + " (" + std::to_string(counts[2]) +
         " failing, " + std::to_string(counts[1]) + " warning, " + std::to_string(counts[0]) + " passing)\n";
  return out;
}

}  // namespace gpuscope
