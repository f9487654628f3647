#include "src/collectors/infiniband/infiniband_collector.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "src/core/log.h"
#include "src/parsers/ib_sysfs.h"
#include "src/parsers/text.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

// One standard PMA counter of counters/ (Documentation/ABI/stable/sysfs-class-infiniband; IBA vol. 1,
// PortCounters and PortCountersExtended). One family per counter, as node_exporter does: the counters
// have different units (bytes, packets, errors, wait ticks), so a single family with a counter label
// would make sum()/rate() over the family meaningless, and per-counter names read better in alerts.
struct CounterSpec {
  std::string_view file;
  std::string_view metric;
  std::string_view help;
  std::string_view unit;
  uint64_t multiplier;
};

// port_rcv_data and port_xmit_data count 32-bit words ("octets divided by 4"), as the IBA
// PortXmitData/PortRcvData attributes do and as the kernel ABI documents them
// (Documentation/ABI/stable/sysfs-class-infiniband: "Total number of data octets, divided by 4 (lanes)");
// mlx5 reports its RoCE data counters in the same unit. Multiplying by 4 gives bytes.
constexpr uint64_t kDataWordBytes = 4;

constexpr std::array<CounterSpec, 21> kCounters = {{
    {"port_rcv_data", "gpuscope_infiniband_port_data_received_bytes_total",
     "Data received on all VLs (port_rcv_data x 4: the kernel counts 32-bit words).", "bytes",
     kDataWordBytes},
    {"port_xmit_data", "gpuscope_infiniband_port_data_transmitted_bytes_total",
     "Data transmitted on all VLs (port_xmit_data x 4: the kernel counts 32-bit words).", "bytes",
     kDataWordBytes},
    {"port_rcv_packets", "gpuscope_infiniband_port_packets_received_total", "Packets received on all VLs.",
     "", 1},
    {"port_xmit_packets", "gpuscope_infiniband_port_packets_transmitted_total",
     "Packets transmitted on all VLs.", "", 1},
    {"unicast_rcv_packets", "gpuscope_infiniband_port_unicast_packets_received_total",
     "Unicast packets received.", "", 1},
    {"unicast_xmit_packets", "gpuscope_infiniband_port_unicast_packets_transmitted_total",
     "Unicast packets transmitted.", "", 1},
    {"multicast_rcv_packets", "gpuscope_infiniband_port_multicast_packets_received_total",
     "Multicast packets received.", "", 1},
    {"multicast_xmit_packets", "gpuscope_infiniband_port_multicast_packets_transmitted_total",
     "Multicast packets transmitted.", "", 1},
    {"symbol_error", "gpuscope_infiniband_port_symbol_errors_total",
     "Minor link errors detected on one or more physical lanes (symbol_error).", "", 1},
    {"link_error_recovery", "gpuscope_infiniband_port_link_error_recoveries_total",
     "Times the link error recovery process completed successfully (link_error_recovery).", "", 1},
    {"link_downed", "gpuscope_infiniband_port_link_downed_total",
     "Times the link error recovery process failed and the link went down (link_downed).", "", 1},
    {"port_rcv_errors", "gpuscope_infiniband_port_receive_errors_total",
     "Packets with errors received (port_rcv_errors).", "", 1},
    {"port_rcv_remote_physical_errors", "gpuscope_infiniband_port_receive_remote_physical_errors_total",
     "Packets received marked with the EBP delimiter (port_rcv_remote_physical_errors).", "", 1},
    {"port_rcv_switch_relay_errors", "gpuscope_infiniband_port_receive_switch_relay_errors_total",
     "Packets received that the switch could not relay (port_rcv_switch_relay_errors).", "", 1},
    {"port_rcv_constraint_errors", "gpuscope_infiniband_port_receive_constraint_errors_total",
     "Packets received that were discarded for partition or raw constraints (port_rcv_constraint_errors).",
     "", 1},
    {"port_xmit_discards", "gpuscope_infiniband_port_transmit_discards_total",
     "Outbound packets discarded because the port was down or congested (port_xmit_discards).", "", 1},
    {"port_xmit_constraint_errors", "gpuscope_infiniband_port_transmit_constraint_errors_total",
     "Packets not transmitted because of partition or raw constraints (port_xmit_constraint_errors).", "", 1},
    {"port_xmit_wait", "gpuscope_infiniband_port_transmit_wait_total",
     "Ticks during which the port had data to transmit but no flow-control credits (port_xmit_wait; the "
     "tick length is hardware specific).",
     "", 1},
    {"excessive_buffer_overrun_errors", "gpuscope_infiniband_port_excessive_buffer_overrun_errors_total",
     "Times consecutive flow-control update periods saw a buffer overrun (excessive_buffer_overrun_errors).",
     "", 1},
    {"local_link_integrity_errors", "gpuscope_infiniband_port_local_link_integrity_errors_total",
     "Times local physical errors exceeded the threshold (local_link_integrity_errors).", "", 1},
    {"VL15_dropped", "gpuscope_infiniband_port_vl15_dropped_total",
     "Incoming VL15 (subnet management) packets dropped for lack of buffers (VL15_dropped).", "", 1},
}};

// hw_counters files that are not monotonic counters. "lifespan" (mlx5) is the counters' cache time in
// milliseconds, a setting; bnxt_re's active_* and watermark_* files are resource levels.
bool IsHwSetting(std::string_view name) { return name == "lifespan"; }
bool IsHwGauge(std::string_view name) {
  return name.starts_with("active_") || name.starts_with("watermark_");
}

enum Family : size_t {
  kDeviceInfo,
  kPortInfo,
  kPortState,
  kPortPhysicalState,
  kPortRate,
  kPortWidth,
  kHwCounter,
  kHwGauge,
  kGpuAffinity,
  kMalformed,
  kFirstCounter,
};

const std::vector<std::string> kPortLabels = {"device", "port", "link_layer"};

const std::vector<MetricDescription>& Descriptions() {
  static const std::vector<MetricDescription> kDescriptions = [] {
    std::vector<MetricDescription> d = {
        {"gpuscope_infiniband_device_info",
         MetricType::kInfo,
         "InfiniBand/RoCE device identity; the value is always 1. pci_bus_id uses NVML's format.",
         "",
         {"device", "hca_type", "board_id", "fw_ver", "node_guid", "pci_bus_id", "numa_node"},
         "<sysfs>/class/infiniband/<dev>/{hca_type,board_id,fw_ver,node_guid}, device -> PCI device"},
        {"gpuscope_infiniband_port_info",
         MetricType::kInfo,
         "InfiniBand/RoCE port state as names; the value is always 1.",
         "",
         {"device", "port", "link_layer", "state", "physical_state", "speed"},
         "<sysfs>/class/infiniband/<dev>/ports/<n>/{state,phys_state,rate,link_layer}"},
        {"gpuscope_infiniband_port_state_id", MetricType::kGauge,
         "Logical port state (1 Down, 2 Init, 3 Armed, 4 Active, 5 ActiveDefer).", "", kPortLabels,
         "<sysfs>/class/infiniband/<dev>/ports/<n>/state"},
        {"gpuscope_infiniband_port_physical_state_id", MetricType::kGauge,
         "Physical port state (1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, "
         "6 LinkErrorRecovery, 7 PhyTest).",
         "", kPortLabels, "<sysfs>/class/infiniband/<dev>/ports/<n>/phys_state"},
        {"gpuscope_infiniband_port_rate_bytes_per_second", MetricType::kGauge,
         "Active link data rate (all lanes).", "bytes_per_second", kPortLabels,
         "<sysfs>/class/infiniband/<dev>/ports/<n>/rate"},
        {"gpuscope_infiniband_port_link_width_lanes", MetricType::kGauge,
         "Active link width in lanes (1, 2, 4, 8 or 12).", "lanes", kPortLabels,
         "<sysfs>/class/infiniband/<dev>/ports/<n>/rate"},
        {"gpuscope_infiniband_port_hw_stat_total",
         MetricType::kCounter,
         "Driver-specific port counters (mlx5, irdma, rxe, ...) by sanitised file name.",
         "",
         {"device", "port", "link_layer", "counter"},
         "<sysfs>/class/infiniband/<dev>/ports/<n>/hw_counters/*"},
        {"gpuscope_infiniband_port_hw_stat_level",
         MetricType::kGauge,
         "Driver-specific port resource levels (hw_counters active_* and watermark_*).",
         "",
         {"device", "port", "link_layer", "counter"},
         "<sysfs>/class/infiniband/<dev>/ports/<n>/hw_counters/{active_*,watermark_*}"},
        {"gpuscope_infiniband_gpu_affinity_info",
         MetricType::kInfo,
         "Closest PCIe/NUMA relation between an HCA and an NVIDIA GPU: pcie_switch (same switch below "
         "the root port), numa_node (same NUMA node) or system; the value is always 1.",
         "",
         {"device", "gpu_pci_bus_id", "relation"},
         "<sysfs>/class/infiniband/<dev>/device, <sysfs>/bus/pci/devices/*/{vendor,class,numa_node}"},
        {"gpuscope_infiniband_sysfs_malformed_values_total",
         MetricType::kCounter,
         "Sysfs values the collector could not parse and skipped.",
         "",
         {},
         "collector"},
    };
    for (const CounterSpec& c : kCounters) {
      d.push_back({std::string(c.metric), MetricType::kCounter, std::string(c.help), std::string(c.unit),
                   kPortLabels, "<sysfs>/class/infiniband/<dev>/ports/<n>/counters/" + std::string(c.file)});
    }
    return d;
  }();
  return kDescriptions;
}

// Reads a small sysfs attribute. Returns nullopt when it cannot be opened or read (missing, vanished,
// EIO from a driver that refuses the read).
std::optional<std::string> ReadAttribute(const fs::path& path) { return ReadWholeFile(path, 64 * 1024); }

std::string TrimmedOr(const std::optional<std::string>& content, std::string_view fallback) {
  if (!content) return std::string(fallback);
  std::string_view s = text::Trim(*content);
  if (s.empty()) return std::string(fallback);
  return std::string(s);
}

// Names of the entries of `dir`, sorted; empty when it cannot be listed.
std::vector<std::string> ListDir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return names;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Where a PCI device sits: its host bridge ("pci0000:00") and the chain of PCI functions from the root
// port down to the device itself, from its resolved sysfs path
// (/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0).
struct PciPlacement {
  PciAddress address;
  std::string host_bridge;
  std::vector<PciAddress> chain;  // root port first, the device last
  int numa_node = -1;
};

// `devices_root` is the resolved <sysfs>/devices; only components below it are looked at, so a fixture
// tree's own location never matters.
std::optional<PciPlacement> Place(const fs::path& devices_root, const fs::path& device_link) {
  std::error_code ec;
  fs::path real = fs::canonical(device_link, ec);
  if (ec) return std::nullopt;
  fs::path relative = real.lexically_relative(devices_root);
  if (relative.empty() || *relative.begin() == "..") return std::nullopt;
  PciPlacement placement;
  for (const fs::path& part : relative) {
    std::string name = part.string();
    if (placement.host_bridge.empty()) {
      if (name.starts_with("pci") && name.size() > 3) placement.host_bridge = name;
      continue;
    }
    std::optional<PciAddress> address = ParsePciAddress(name);
    if (!address) break;
    placement.chain.push_back(*address);
  }
  if (placement.host_bridge.empty() || placement.chain.empty()) return std::nullopt;
  placement.address = placement.chain.back();
  if (auto numa = ReadAttribute(real / "numa_node")) {
    if (auto value = ParseSysfsInt(*numa)) placement.numa_node = *value;
  }
  return placement;
}

// Two devices share a PCIe switch when their chains below the same host bridge have a common bridge
// below the root port: a common prefix of at least two functions (root port, switch upstream port).
std::string_view Relation(const PciPlacement& hca, const PciPlacement& gpu) {
  if (hca.host_bridge == gpu.host_bridge) {
    size_t common = 0;
    size_t limit = std::min(hca.chain.size(), gpu.chain.size()) - 1;  // the devices themselves differ
    while (common < limit && hca.chain[common] == gpu.chain[common]) ++common;
    if (common >= 2) return "pcie_switch";
  }
  if (hca.numa_node >= 0 && hca.numa_node == gpu.numa_node) return "numa_node";
  return "system";
}

std::vector<PciPlacement> FindNvidiaGpus(const fs::path& sysfs, const fs::path& devices_root) {
  std::vector<PciPlacement> gpus;
  fs::path dir = sysfs / "bus" / "pci" / "devices";
  for (const std::string& name : ListDir(dir)) {
    auto vendor = ReadAttribute(dir / name / "vendor");
    if (!vendor || ParseSysfsHex(*vendor) != kNvidiaPciVendor) continue;
    auto cls = ReadAttribute(dir / name / "class");
    std::optional<uint32_t> class_code = cls ? ParseSysfsHex(*cls) : std::nullopt;
    // 0x0302xx 3D controller (data-centre GPUs), 0x0300xx VGA controller; not audio, USB or NVSwitch.
    if (!class_code || !IsGpuPciClass(*class_code)) continue;
    if (auto placement = Place(devices_root, dir / name)) gpus.push_back(std::move(*placement));
  }
  return gpus;
}

Labels PortLabels(const std::string& device, const std::string& port, const std::string& link_layer) {
  return {{"device", device}, {"port", port}, {"link_layer", link_layer}};
}

// Port directories sorted numerically ("1", "2", ..., "10").
std::vector<std::string> SortedPorts(const fs::path& ports_dir) {
  std::vector<std::string> ports = ListDir(ports_dir);
  std::stable_sort(ports.begin(), ports.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return ports;
}

// Counts and logs a sysfs value the parsers rejected; the value is skipped, never a failure.
void CountMalformed(uint64_t& malformed_values, const fs::path& path) {
  ++malformed_values;
  Log(LogLevel::kDebug, "malformed infiniband sysfs value", {{"path", path.string()}});
}

// Parses the attribute at `path` with `parse`. Returns nullopt when the file is absent or its value is
// malformed (then counted).
template <typename Parse>
auto ParseAttribute(const fs::path& path, Parse parse, uint64_t& malformed_values)
    -> decltype(parse(std::string_view())) {
  auto content = ReadAttribute(path);
  if (!content) return std::nullopt;
  auto value = parse(*content);
  if (!value) CountMalformed(malformed_values, path);
  return value;
}

// The device's identity (gpuscope_infiniband_device_info) and, when the HCA's PCI placement is known,
// its relation to each NVIDIA GPU.
void AddDeviceSamples(const std::string& device, const fs::path& dev_dir,
                      const std::optional<PciPlacement>& hca, const std::vector<PciPlacement>& gpus,
                      std::vector<MetricFamily>& families) {
  std::string numa = hca ? std::to_string(hca->numa_node) : "-1";
  families[kDeviceInfo].samples.push_back(
      {{{"device", device},
        {"hca_type", TrimmedOr(ReadAttribute(dev_dir / "hca_type"), "unknown")},
        {"board_id", TrimmedOr(ReadAttribute(dev_dir / "board_id"), "unknown")},
        {"fw_ver", TrimmedOr(ReadAttribute(dev_dir / "fw_ver"), "unknown")},
        {"node_guid", TrimmedOr(ReadAttribute(dev_dir / "node_guid"), "unknown")},
        {"pci_bus_id", hca ? hca->address.NvmlBusId() : "none"},
        {"numa_node", numa}},
       1});
  if (!hca) return;
  for (const PciPlacement& gpu : gpus) {
    families[kGpuAffinity].samples.push_back({{{"device", device},
                                               {"gpu_pci_bus_id", gpu.address.NvmlBusId()},
                                               {"relation", std::string(Relation(*hca, gpu))}},
                                              1});
  }
}

// The port's logical and physical state, rate and width as numbers, and the same as names in
// gpuscope_infiniband_port_info.
void AddPortStateSamples(const fs::path& port_dir, const Labels& labels, std::vector<MetricFamily>& families,
                         uint64_t& malformed_values) {
  std::optional<IbEnumValue> state = ParseAttribute(port_dir / "state", ParseIbEnum, malformed_values);
  std::optional<IbEnumValue> phys = ParseAttribute(port_dir / "phys_state", ParseIbEnum, malformed_values);
  std::optional<IbRate> rate = ParseAttribute(port_dir / "rate", ParseIbRate, malformed_values);
  if (state) families[kPortState].samples.push_back({labels, static_cast<double>(state->code)});
  if (phys) families[kPortPhysicalState].samples.push_back({labels, static_cast<double>(phys->code)});
  if (rate) {
    families[kPortRate].samples.push_back({labels, rate->BytesPerSecond()});
    if (rate->width_lanes > 0) {
      families[kPortWidth].samples.push_back({labels, static_cast<double>(rate->width_lanes)});
    }
  }
  Labels info = labels;
  info.emplace_back("state", state ? state->name : "unknown");
  info.emplace_back("physical_state", phys ? phys->name : "unknown");
  info.emplace_back("speed", rate && !rate->speed.empty() ? rate->speed : "unknown");
  families[kPortInfo].samples.push_back({std::move(info), 1});
}

// Reads a counter file. Returns nullopt when it is absent, "N/A (no PMA)" or malformed (then counted).
std::optional<uint64_t> ReadCounter(const fs::path& path, uint64_t& malformed_values) {
  auto content = ReadAttribute(path);
  if (!content) return std::nullopt;
  IbCounterValue value = ParseIbCounter(*content);
  if (value.kind == IbCounterValue::Kind::kNotAvailable) return std::nullopt;
  if (value.kind == IbCounterValue::Kind::kMalformed) {
    CountMalformed(malformed_values, path);
    return std::nullopt;
  }
  return value.value;
}

// The standard counters of the port's counters/ directory, one family each. A missing counters/
// directory (irdma, rxe on newer kernels) or a file reading "N/A (no PMA)" means the counter does not
// exist on this port: no sample, never a zero.
void AddPortCounterSamples(const fs::path& counters_dir, const Labels& labels,
                           std::vector<MetricFamily>& families, uint64_t& malformed_values) {
  for (size_t i = 0; i < kCounters.size(); ++i) {
    std::optional<uint64_t> value = ReadCounter(counters_dir / kCounters[i].file, malformed_values);
    if (!value) continue;
    families[kFirstCounter + i].samples.push_back(
        {labels, static_cast<double>(*value) * static_cast<double>(kCounters[i].multiplier)});
  }
}

// The driver's hw_counters/ files: counters in one family, resource levels in another, by a counter label.
void AddHwCounterSamples(const fs::path& hw_dir, const Labels& labels, std::vector<MetricFamily>& families,
                         uint64_t& malformed_values) {
  for (const std::string& name : ListDir(hw_dir)) {
    if (IsHwSetting(name)) continue;
    std::optional<uint64_t> value = ReadCounter(hw_dir / name, malformed_values);
    if (!value) continue;
    Labels hw_labels = labels;
    hw_labels.emplace_back("counter", SanitizeIbCounterName(name));
    families[IsHwGauge(name) ? kHwGauge : kHwCounter].samples.push_back(
        {std::move(hw_labels), static_cast<double>(*value)});
  }
}

}  // namespace

InfinibandCollector::InfinibandCollector(InfinibandCollectorOptions options) : options_(std::move(options)) {}

std::vector<MetricDescription> InfinibandCollector::Describe() const { return Descriptions(); }

Status InfinibandCollector::Collect(std::vector<MetricFamily>& out) {
  const fs::path sysfs(options_.sysfs);
  const fs::path class_dir = sysfs / "class" / "infiniband";
  std::error_code ec;
  if (!fs::is_directory(class_dir, ec)) {
    return Status::NoData("no " + class_dir.string());
  }
  std::vector<std::string> devices = ListDir(class_dir);
  if (devices.empty()) return Status::NoData("no device in " + class_dir.string());

  const std::vector<MetricDescription>& descriptions = Descriptions();
  std::vector<MetricFamily> families;
  families.reserve(descriptions.size());
  for (const MetricDescription& d : descriptions) families.push_back({d.name, d.help, d.type, d.unit, {}});

  const fs::path devices_root = fs::weakly_canonical(sysfs / "devices", ec);
  std::vector<PciPlacement> gpus;
  if (options_.gpu_affinity) gpus = FindNvidiaGpus(sysfs, devices_root);

  for (const std::string& device : devices) {
    const fs::path dev_dir = class_dir / device;
    AddDeviceSamples(device, dev_dir, Place(devices_root, dev_dir / "device"), gpus, families);
    for (const std::string& port : SortedPorts(dev_dir / "ports")) {
      const fs::path port_dir = dev_dir / "ports" / port;
      const std::string link_layer = TrimmedOr(ReadAttribute(port_dir / "link_layer"), "unknown");
      const Labels labels = PortLabels(device, port, link_layer);
      AddPortStateSamples(port_dir, labels, families, malformed_values_);
      AddPortCounterSamples(port_dir / "counters", labels, families, malformed_values_);
      if (options_.hw_counters)
        AddHwCounterSamples(port_dir / "hw_counters", labels, families, malformed_values_);
    }
  }
  families[kMalformed].samples.push_back({{}, static_cast<double>(malformed_values_)});

  for (MetricFamily& family : families) {
    if (!family.samples.empty()) out.push_back(std::move(family));
  }
  return Status::Ok();
}

}  // namespace gpuscope
