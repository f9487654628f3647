#include "src/collectors/host/host_collector.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "src/core/log.h"
#include "src/node/gpu_process_table.h"
#include "src/parsers/cpulist.h"
#include "src/parsers/pcie_link.h"
#include "src/parsers/proc_placement.h"
#include "src/parsers/psi.h"
#include "src/parsers/text.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

// Reads a small sysfs/procfs file whole. Returns nullopt when it cannot be opened or read (missing file,
// process gone, EOPNOTSUPP from /proc/pressure with psi=0); no file read here comes near 1 MiB, so a
// runaway one is cut there.
std::optional<std::string> ReadSmallFile(const std::string& path) { return ReadWholeFile(path, 1u << 20); }

// One end of a PCIe link as its sysfs attributes describe it; unset fields were missing or unparsable.
struct LinkEnd {
  std::string address;  // canonical NVML spelling
  std::optional<double> speed;
  std::optional<double> max_speed;
  std::optional<uint32_t> width;
  std::optional<uint32_t> max_width;
  bool HasAny() const { return speed || max_speed || width || max_width; }
};

LinkEnd ReadLinkEnd(const std::filesystem::path& dir, std::string address) {
  LinkEnd end;
  end.address = std::move(address);
  auto read = [&](const char* name) { return ReadSmallFile((dir / name).string()); };
  if (auto text = read("current_link_speed")) end.speed = ParsePcieLinkSpeed(*text);
  if (auto text = read("max_link_speed")) end.max_speed = ParsePcieLinkSpeed(*text);
  if (auto text = read("current_link_width")) end.width = ParsePcieLinkWidth(*text);
  if (auto text = read("max_link_width")) end.max_width = ParsePcieLinkWidth(*text);
  return end;
}

template <typename T>
std::optional<T> MinOf(const std::optional<T>& a, const std::optional<T>& b) {
  if (a && b) return std::min(*a, *b);
  return a ? a : b;
}

// One PCIe link on the way from a GPU to its root port.
struct Link {
  std::string device;  // the end below (the GPU, or a switch's upstream port)
  std::optional<double> speed;
  std::optional<double> max_speed;  // the lower of both ends' capabilities
  std::optional<uint32_t> width;
  std::optional<uint32_t> max_width;  // the lower of both ends' capabilities
};

struct Gpu {
  std::string pci_bus_id;  // canonical NVML spelling, the join key with the GPU collector's series
  std::string numa_node;   // "-1" when the platform reports none
  std::optional<CpuSet> local_cpus;
  std::vector<Link> links;  // [0] is the GPU's own link
};

// The PCI devices from `dir` up to the root port: `dir` itself, then each parent directory whose name is
// a PCI address (the walk stops at the root bus directory "pci0000:00").
std::vector<std::pair<std::filesystem::path, std::string>> PathToRoot(const std::filesystem::path& dir) {
  std::vector<std::pair<std::filesystem::path, std::string>> chain;
  std::error_code error;
  std::filesystem::path current = std::filesystem::canonical(dir, error);
  if (error) return chain;
  while (chain.size() < 16) {  // PCIe hierarchies are a handful of levels deep; guard against loops
    auto address = CanonicalPciBusId(current.filename().string());
    if (!address) break;
    chain.emplace_back(current, *address);
    current = current.parent_path();
  }
  return chain;
}

// Links from the GPU upward. In a PCIe tree the devices from an endpoint to its root port alternate
// between the lower end of a link (endpoint, switch upstream port) and the upper end (switch downstream
// port, root port), and both ends report the same negotiated speed and width, each its own maximum. So
// the chain pairs up as (GPU, port above), (switch upstream port, port above), ... A link's achievable
// maximum is the lower of its ends' maxima: a Gen5 GPU in a Gen4 slot is not degraded. A GPU with no
// PCI parent (passed through to a VM, under a root bus) has one link described by itself alone.
std::vector<Link> ReadLinks(const std::filesystem::path& gpu_dir, bool upstream) {
  std::vector<Link> links;
  auto chain = PathToRoot(gpu_dir);
  for (size_t i = 0; i < chain.size(); i += 2) {
    LinkEnd lower = ReadLinkEnd(chain[i].first, chain[i].second);
    std::optional<LinkEnd> upper;
    if (i + 1 < chain.size()) upper = ReadLinkEnd(chain[i + 1].first, chain[i + 1].second);
    Link link;
    link.device = lower.address;
    link.speed = lower.speed ? lower.speed : (upper ? upper->speed : std::nullopt);
    link.width = lower.width ? lower.width : (upper ? upper->width : std::nullopt);
    link.max_speed = upper ? MinOf(lower.max_speed, upper->max_speed) : lower.max_speed;
    link.max_width = upper ? MinOf(lower.max_width, upper->max_width) : lower.max_width;
    if (lower.HasAny() || (upper && upper->HasAny())) links.push_back(std::move(link));
    if (!upstream) break;
  }
  return links;
}

std::vector<Gpu> FindGpus(const std::string& sysfs, bool upstream) {
  std::vector<Gpu> gpus;
  std::filesystem::path devices = std::filesystem::path(sysfs) / "bus/pci/devices";
  std::error_code error;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(devices, error)) {
    names.push_back(entry.path().filename().string());
  }
  if (error) {
    Log(LogLevel::kDebug, "host: cannot list PCI devices", {{"path", devices.string()}});
    return gpus;
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::filesystem::path dir = devices / name;
    // vendor first: on a host with hundreds of PCI functions most stop here after one small read.
    auto vendor_text = ReadSmallFile((dir / "vendor").string());
    if (!vendor_text || ParseSysfsHex(*vendor_text) != kNvidiaPciVendor) continue;
    auto class_text = ReadSmallFile((dir / "class").string());
    auto pci_class = class_text ? ParseSysfsHex(*class_text) : std::nullopt;
    if (!pci_class || !IsGpuPciClass(*pci_class)) continue;
    auto pci_bus_id = CanonicalPciBusId(name);
    if (!pci_bus_id) continue;
    Gpu gpu;
    gpu.pci_bus_id = *pci_bus_id;
    gpu.numa_node = "-1";
    if (auto text = ReadSmallFile((dir / "numa_node").string())) {
      std::string node(text::Trim(*text));
      if (!node.empty()) gpu.numa_node = node;
    }
    if (auto text = ReadSmallFile((dir / "local_cpulist").string())) {
      gpu.local_cpus = ParseCpuList(*text);
      if (!gpu.local_cpus) Log(LogLevel::kDebug, "host: malformed local_cpulist", {{"device", name}});
    }
    gpu.links = ReadLinks(dir, upstream);
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

enum Family {
  kNumaInfo,
  kLinkGeneration,
  kLinkMaxGeneration,
  kLinkWidth,
  kLinkMaxWidth,
  kLinkDegraded,
  kLinkSpeedDegraded,
  kProcessMisplaced,
  kMisplacedProcesses,
  kPressureRatio,
  kPressureSeconds,
  kFamilyCount,
};

const std::vector<MetricDescription>& Descriptions() {
  static const std::vector<MetricDescription> kDescriptions = {
      {"gpuscope_gpu_numa_info",
       MetricType::kInfo,
       "NUMA node and local CPUs of each NVIDIA GPU (numa_node -1: the platform reports none); the value is "
       "always 1.",
       "",
       {"pci_bus_id", "numa_node", "local_cpus"},
       "<sysfs>/bus/pci/devices/*/{numa_node,local_cpulist}"},
      {"gpuscope_host_pcie_link_generation",
       MetricType::kGauge,
       "Negotiated PCIe generation of each link from the GPU (hop 0) up to its root port. An idle GPU "
       "lowers it to save power.",
       "",
       {"pci_bus_id", "hop", "pci_device"},
       "<sysfs>/bus/pci/devices/*/current_link_speed"},
      {"gpuscope_host_pcie_link_max_generation",
       MetricType::kGauge,
       "Highest PCIe generation both ends of the link support.",
       "",
       {"pci_bus_id", "hop", "pci_device"},
       "<sysfs>/bus/pci/devices/*/max_link_speed (the lower of both ends)"},
      {"gpuscope_host_pcie_link_width",
       MetricType::kGauge,
       "Negotiated PCIe lane count of each link from the GPU (hop 0) up to its root port.",
       "",
       {"pci_bus_id", "hop", "pci_device"},
       "<sysfs>/bus/pci/devices/*/current_link_width"},
      {"gpuscope_host_pcie_link_max_width",
       MetricType::kGauge,
       "Widest PCIe lane count both ends of the link support.",
       "",
       {"pci_bus_id", "hop", "pci_device"},
       "<sysfs>/bus/pci/devices/*/max_link_width (the lower of both ends)"},
      {"gpuscope_gpu_pcie_link_degraded",
       MetricType::kGauge,
       "1 when a PCIe link between the GPU and its root port runs narrower than both ends support (x8 "
       "instead of x16), else 0. Width only: a lower speed at idle is normal power saving.",
       "",
       {"pci_bus_id"},
       "current_link_width < max_link_width on the GPU's path"},
      {"gpuscope_gpu_pcie_link_speed_degraded",
       MetricType::kGauge,
       "1 when a PCIe link between the GPU and its root port runs below the generation both ends support, "
       "else 0. Normal while the GPU is idle (power saving): alert on it only while the GPU is busy.",
       "",
       {"pci_bus_id"},
       "current_link_speed < max_link_speed on the GPU's path"},
      {"gpuscope_gpu_process_numa_misplaced",
       MetricType::kGauge,
       "1 when a GPU process runs off its GPU's NUMA node: its allowed CPUs exclude all of the GPU's local "
       "CPUs, or it is not pinned inside them and last ran on a remote CPU; else 0.",
       "",
       {"gpu", "pci_bus_id", "pid", "hpc_job"},
       "<procfs>/<pid>/status Cpus_allowed_list, <procfs>/<pid>/stat field 39, local_cpulist"},
      {"gpuscope_gpu_numa_misplaced_processes",
       MetricType::kGauge,
       "Number of processes on the GPU that run off its NUMA node (see gpuscope_gpu_process_numa_misplaced).",
       "",
       {"pci_bus_id"},
       "count of gpuscope_gpu_process_numa_misplaced == 1"},
      {"gpuscope_host_pressure_stalled_ratio",
       MetricType::kGauge,
       "Share of wall time in which some (or, kind=full, all non-idle) tasks were stalled on the resource, "
       "averaged over the window.",
       "ratio",
       {"resource", "kind", "window"},
       "<procfs>/pressure/{cpu,memory,io} avg10/avg60/avg300 / 100"},
      {"gpuscope_host_pressure_stalled_seconds_total",
       MetricType::kCounter,
       "Total time in which some (or, kind=full, all non-idle) tasks were stalled on the resource.",
       "seconds",
       {"resource", "kind"},
       "<procfs>/pressure/{cpu,memory,io} total (microseconds)"},
  };
  return kDescriptions;
}

MetricFamily Empty(Family family) {
  const MetricDescription& d = Descriptions()[family];
  return MetricFamily{d.name, d.help, d.type, d.unit, {}};
}

// The NUMA and PCIe link series of one GPU.
void AddTopology(const Gpu& gpu, std::vector<MetricFamily>& families) {
  std::string local = gpu.local_cpus ? FormatCpuList(*gpu.local_cpus) : "";
  families[kNumaInfo].samples.push_back(
      {{{"pci_bus_id", gpu.pci_bus_id}, {"numa_node", gpu.numa_node}, {"local_cpus", local}}, 1});
  bool width_degraded = false;
  bool speed_degraded = false;
  bool any_width = false;
  bool any_speed = false;
  for (size_t hop = 0; hop < gpu.links.size(); ++hop) {
    const Link& link = gpu.links[hop];
    Labels labels = {
        {"pci_bus_id", gpu.pci_bus_id}, {"hop", std::to_string(hop)}, {"pci_device", link.device}};
    std::optional<int> generation = link.speed ? PcieGenerationOfSpeed(*link.speed) : std::nullopt;
    std::optional<int> max_generation =
        link.max_speed ? PcieGenerationOfSpeed(*link.max_speed) : std::nullopt;
    if (generation) families[kLinkGeneration].samples.push_back({labels, static_cast<double>(*generation)});
    if (max_generation) {
      families[kLinkMaxGeneration].samples.push_back({labels, static_cast<double>(*max_generation)});
    }
    if (link.width) families[kLinkWidth].samples.push_back({labels, static_cast<double>(*link.width)});
    if (link.max_width)
      families[kLinkMaxWidth].samples.push_back({labels, static_cast<double>(*link.max_width)});
    // Compared as rates, so a speed the generation table does not know yet still counts.
    if (link.speed && link.max_speed) {
      any_speed = true;
      speed_degraded |= *link.speed + 0.01 < *link.max_speed;
    }
    if (link.width && link.max_width) {
      any_width = true;
      width_degraded |= *link.width < *link.max_width;
    }
  }
  if (any_width)
    families[kLinkDegraded].samples.push_back({{{"pci_bus_id", gpu.pci_bus_id}}, width_degraded ? 1.0 : 0.0});
  if (any_speed) {
    families[kLinkSpeedDegraded].samples.push_back(
        {{{"pci_bus_id", gpu.pci_bus_id}}, speed_degraded ? 1.0 : 0.0});
  }
}

// Whether each of the GPU cycle's processes runs on its GPU's NUMA node, and the count per GPU.
void AddPlacement(const std::vector<Gpu>& gpus, const GpuProcessTable& gpu_processes,
                  const std::string& procfs, std::vector<MetricFamily>& families) {
  std::map<std::string, const Gpu*> by_bus_id;
  for (const Gpu& gpu : gpus) {
    if (gpu.local_cpus && !gpu.local_cpus->empty()) by_bus_id[gpu.pci_bus_id] = &gpu;
  }
  std::map<std::string, int> misplaced_count;
  for (const auto& [bus_id, gpu] : by_bus_id) misplaced_count[bus_id] = 0;

  auto processes = gpu_processes.Current();
  std::vector<GpuProcessRef> sorted(processes->begin(), processes->end());
  std::sort(sorted.begin(), sorted.end(), [](const GpuProcessRef& a, const GpuProcessRef& b) {
    return std::tie(a.pci_bus_id, a.pid) < std::tie(b.pci_bus_id, b.pid);
  });
  for (const GpuProcessRef& process : sorted) {
    auto bus_id = CanonicalPciBusId(process.pci_bus_id);
    auto it = bus_id ? by_bus_id.find(*bus_id) : by_bus_id.end();
    if (it == by_bus_id.end()) continue;  // a GPU without NUMA facts: nothing to compare against
    const CpuSet& local = *it->second->local_cpus;
    std::string dir = procfs + "/" + std::to_string(process.pid);
    auto status = ReadSmallFile(dir + "/status");
    if (!status) continue;  // the process exited since the GPU cycle saw it
    auto allowed = ParseProcStatusCpusAllowed(*status);
    if (!allowed) {
      Log(LogLevel::kDebug, "host: no Cpus_allowed_list", {{"pid", std::to_string(process.pid)}});
      continue;
    }
    bool misplaced = false;
    if (!CpuSetsIntersect(*allowed, local)) {
      misplaced = true;  // pinned entirely to other NUMA nodes
    } else if (!CpuSetIsSubset(*allowed, local)) {
      // Not pinned to the GPU's node: the scheduler may run it anywhere; judge by where it ran last.
      auto stat = ReadSmallFile(dir + "/stat");
      if (!stat) continue;  // exited between the two reads
      auto last_cpu = ParseProcStatLastCpu(*stat);
      if (!last_cpu) continue;
      misplaced = !CpuSetContains(local, *last_cpu);
    }
    families[kProcessMisplaced].samples.push_back({{{"gpu", process.gpu},
                                                    {"pci_bus_id", *bus_id},
                                                    {"pid", std::to_string(process.pid)},
                                                    {"hpc_job", process.hpc_job}},
                                                   misplaced ? 1.0 : 0.0});
    if (misplaced) ++misplaced_count[*bus_id];
  }
  for (const auto& [bus_id, count] : misplaced_count) {
    families[kMisplacedProcesses].samples.push_back({{{"pci_bus_id", bus_id}}, static_cast<double>(count)});
  }
}

}  // namespace

HostCollector::HostCollector(HostCollectorOptions options) : options_(std::move(options)) {}

std::vector<MetricDescription> HostCollector::Describe() const { return Descriptions(); }

Status HostCollector::Collect(std::vector<MetricFamily>& out) {
  std::vector<MetricFamily> families;
  families.reserve(kFamilyCount);
  for (int f = 0; f < kFamilyCount; ++f) families.push_back(Empty(static_cast<Family>(f)));
  CollectGpus(families);
  if (options_.pressure) CollectPressure(families);

  size_t appended = 0;
  for (auto& family : families) {
    if (family.samples.empty()) continue;
    out.push_back(std::move(family));
    ++appended;
  }
  if (appended == 0) {
    return Status::NoData("no NVIDIA GPU in " + options_.sysfs +
                          "/bus/pci/devices and no pressure stall information");
  }
  return Status::Ok();
}

void HostCollector::CollectGpus(std::vector<MetricFamily>& families) {
  std::vector<Gpu> gpus = FindGpus(options_.sysfs, options_.upstream_links);
  if (gpus.empty()) {
    if (!logged_no_gpu_) {
      Log(LogLevel::kDebug, "host: no NVIDIA GPU, reporting host series only",
          {{"path", options_.sysfs + "/bus/pci/devices"}});
      logged_no_gpu_ = true;
    }
    return;
  }
  logged_no_gpu_ = false;  // say it again if the GPUs go away later

  for (const Gpu& gpu : gpus) AddTopology(gpu, families);
  if (options_.gpu_processes != nullptr)
    AddPlacement(gpus, *options_.gpu_processes, options_.procfs, families);
}

void HostCollector::CollectPressure(std::vector<MetricFamily>& families) {
  static constexpr const char* kResources[] = {"cpu", "memory", "io"};
  bool any = false;
  for (const char* resource : kResources) {
    auto content = ReadSmallFile(options_.procfs + "/pressure/" + resource);
    if (!content) continue;
    auto file = ParsePressureFile(*content);
    if (!file) {
      Log(LogLevel::kDebug, "host: malformed pressure file", {{"resource", resource}});
      continue;
    }
    any = true;
    std::pair<const char*, const std::optional<PressureLine>*> kinds[] = {{"some", &file->some},
                                                                          {"full", &file->full}};
    for (const auto& [kind, line] : kinds) {
      if (!line->has_value()) continue;
      // "full" for cpu is undefined at the system level; kernels since 5.13 print it as zeros for a uniform
      // format (Documentation/accounting/psi.rst), so it is left out rather than shown as a flat 0.
      if (std::string_view(resource) == "cpu" && std::string_view(kind) == "full") continue;
      const PressureLine& value = **line;
      std::pair<const char*, double> windows[] = {
          {"10s", value.avg10}, {"60s", value.avg60}, {"300s", value.avg300}};
      for (const auto& [window, percent] : windows) {
        families[kPressureRatio].samples.push_back(
            {{{"resource", resource}, {"kind", kind}, {"window", window}}, percent / 100.0});
      }
      families[kPressureSeconds].samples.push_back(
          {{{"resource", resource}, {"kind", kind}}, static_cast<double>(value.total_us) / 1e6});
    }
  }
  if (!any && !logged_no_pressure_) {
    // Kernels before 4.20, or booted without psi (CONFIG_PSI_DEFAULT_DISABLED / psi=0).
    Log(LogLevel::kDebug, "host: no pressure stall information", {{"path", options_.procfs + "/pressure"}});
    logged_no_pressure_ = true;
  }
}

}  // namespace gpuscope
