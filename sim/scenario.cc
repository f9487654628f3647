#include "sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <set>
#include <stdexcept>

namespace gpuscope::sim {
namespace {

constexpr size_t kMaxScenarioBytes = 1 << 20;
constexpr size_t kMaxFaults = 4096;

// Thrown inside the parser only; ParseScenario turns it into a ScenarioError.
struct Invalid : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void Fail(const std::string& where, const std::string& what) {
  throw Invalid(where + ": " + what);
}

void RequireMap(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) Fail(where, "expected a mapping");
}

void CheckKeys(const YAML::Node& node, const std::string& where,
               std::initializer_list<std::string_view> allowed) {
  RequireMap(node, where);
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) Fail(where, "keys must be scalars");
    const std::string key = entry.first.Scalar();
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (!known) Fail(where, "unknown key '" + key + "'");
  }
}

double Number(const YAML::Node& node, const std::string& where, double min, double max) {
  if (!node.IsScalar()) Fail(where, "expected a number");
  double value = 0;
  try {
    value = node.as<double>();
  } catch (const YAML::Exception&) {
    Fail(where, "expected a number, got '" + node.Scalar() + "'");
  }
  if (!std::isfinite(value) || value < min || value > max) {
    Fail(where, "value " + node.Scalar() + " out of range [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]");
  }
  return value;
}

unsigned Unsigned(const YAML::Node& node, const std::string& where, double min, double max) {
  double value = Number(node, where, min, max);
  if (value != std::floor(value)) Fail(where, "expected an integer");
  return static_cast<unsigned>(value);
}

std::string String(const YAML::Node& node, const std::string& where) {
  if (!node.IsScalar()) Fail(where, "expected a string");
  if (node.Scalar().size() > 256) Fail(where, "string too long");
  return node.Scalar();
}

bool Bool(const YAML::Node& node, const std::string& where) {
  if (!node.IsScalar()) Fail(where, "expected true or false");
  try {
    return node.as<bool>();
  } catch (const YAML::Exception&) {
    Fail(where, "expected true or false, got '" + node.Scalar() + "'");
  }
}

// Each optional key: calls fn(node, "where.key") when present.
template <typename Fn>
void Opt(const YAML::Node& map, const std::string& where, const char* key, Fn fn) {
  const YAML::Node node = map[key];
  if (node) fn(node, where + "." + key);
}

void SetKindDefaults(Workload& w, WorkloadKind kind) {
  w = Workload{};
  w.kind = kind;
  switch (kind) {
    case WorkloadKind::kTraining:
      w.memory_gib = 60;
      w.processes = 1;
      w.nvlink_fraction = 0.6;
      break;
    case WorkloadKind::kInference:
      w.memory_gib = 40;
      w.processes = 1;
      w.nvlink_fraction = 0.05;
      w.power_intensity = 0.85;
      break;
    case WorkloadKind::kIdle:
      w.power_intensity = 0;
      break;
  }
}

void ApplyWorkload(Workload& w, const YAML::Node& node, const std::string& where) {
  CheckKeys(
      node, where,
      {"type", "memory_gib", "processes", "process_memory_shares", "process_name", "power_intensity",
       "nvlink_fraction", "encoder_util", "decoder_util", "step_s", "compute_fraction", "allreduce_util",
       "checkpoint_every_s", "checkpoint_s", "memory_saw_gib", "peak_hour", "min_util", "max_util", "noise"});
  Opt(node, where, "type", [&](const YAML::Node& n, const std::string& at) {
    const std::string type = String(n, at);
    if (type == "training") {
      SetKindDefaults(w, WorkloadKind::kTraining);
    } else if (type == "inference") {
      SetKindDefaults(w, WorkloadKind::kInference);
    } else if (type == "idle") {
      SetKindDefaults(w, WorkloadKind::kIdle);
    } else {
      Fail(at, "unknown workload '" + type + "' (training, inference, idle)");
    }
  });
  auto num = [&](const char* key, double& field, double min, double max) {
    Opt(node, where, key,
        [&](const YAML::Node& n, const std::string& at) { field = Number(n, at, min, max); });
  };
  num("memory_gib", w.memory_gib, 0, 1024);
  Opt(node, where, "processes",
      [&](const YAML::Node& n, const std::string& at) { w.processes = Unsigned(n, at, 0, 64); });
  if (!node["processes"] && w.kind == WorkloadKind::kIdle) w.processes = w.memory_gib > 0 ? 1 : 0;
  Opt(node, where, "process_memory_shares", [&](const YAML::Node& n, const std::string& at) {
    if (!n.IsSequence()) Fail(at, "a list of weights, one per process");
    w.process_memory_shares.clear();
    for (size_t i = 0; i < n.size(); ++i) {
      w.process_memory_shares.push_back(Number(n[i], at + "[" + std::to_string(i) + "]", 0.001, 1000));
    }
  });
  if (!w.process_memory_shares.empty() && w.process_memory_shares.size() != w.processes) {
    Fail(where + ".process_memory_shares", std::to_string(w.process_memory_shares.size()) + " weights for " +
                                               std::to_string(w.processes) + " processes");
  }
  Opt(node, where, "process_name",
      [&](const YAML::Node& n, const std::string& at) { w.process_name = String(n, at); });
  num("power_intensity", w.power_intensity, 0, 1.5);
  num("nvlink_fraction", w.nvlink_fraction, 0, 1);
  num("encoder_util", w.encoder_util, 0, 100);
  num("decoder_util", w.decoder_util, 0, 100);
  num("step_s", w.step_s, 0.05, 3600);
  num("compute_fraction", w.compute_fraction, 0.05, 1);
  num("allreduce_util", w.allreduce_util, 0, 1);
  num("checkpoint_every_s", w.checkpoint_every_s, 1, 1e7);
  num("checkpoint_s", w.checkpoint_s, 0, 1e6);
  num("memory_saw_gib", w.memory_saw_gib, 0, 1024);
  num("peak_hour", w.peak_hour, 0, 24);
  num("min_util", w.min_util, 0, 1);
  num("max_util", w.max_util, 0, 1);
  num("noise", w.noise, 0, 1);
  if (w.min_util > w.max_util) Fail(where, "min_util must not exceed max_util");
  if (w.checkpoint_s >= w.checkpoint_every_s)
    Fail(where, "checkpoint_s must be shorter than checkpoint_every_s");
}

void ApplyGpuKeys(GpuConfig& gpu, const YAML::Node& node, const std::string& where, bool shorthand) {
  if (shorthand) {
    CheckKeys(node, where,
              {"count", "overrides", "model", "workload", "power_limit_w", "ambient_c", "mig", "minor"});
  } else {
    CheckKeys(node, where, {"model", "workload", "power_limit_w", "ambient_c", "mig", "minor"});
  }
  Opt(node, where, "minor", [&](const YAML::Node& n, const std::string& at) {
    gpu.minor = static_cast<int>(Unsigned(n, at, 0, 255));
  });
  Opt(node, where, "model", [&](const YAML::Node& n, const std::string& at) {
    const std::string key = String(n, at);
    gpu.model = FindGpuModel(key);
    if (gpu.model == nullptr) Fail(at, "unknown model '" + key + "' (known: " + KnownGpuModelKeys() + ")");
  });
  Opt(node, where, "workload",
      [&](const YAML::Node& n, const std::string& at) { ApplyWorkload(gpu.workload, n, at); });
  Opt(node, where, "power_limit_w",
      [&](const YAML::Node& n, const std::string& at) { gpu.power_limit_w = Number(n, at, 1, 5000); });
  Opt(node, where, "ambient_c",
      [&](const YAML::Node& n, const std::string& at) { gpu.ambient_c = Number(n, at, -20, 80); });
  Opt(node, where, "mig", [&](const YAML::Node& n, const std::string& at) {
    if (!n.IsSequence()) Fail(at, "expected a list of instances");
    if (gpu.model == nullptr) Fail(at, "mig needs the GPU's model");
    if (n.size() > 7) Fail(at, "at most 7 MIG instances");
    gpu.mig.clear();
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string w = at + "[" + std::to_string(i) + "]";
      CheckKeys(n[i], w, {"profile", "gpu_instance_id", "compute_instance_id", "load"});
      MigInstance inst;
      if (!n[i]["profile"]) Fail(w, "profile is required");
      const std::string profile = String(n[i]["profile"], w + ".profile");
      inst.profile = FindMigProfile(*gpu.model, profile);
      if (inst.profile == nullptr)
        Fail(w + ".profile", "unknown profile '" + profile + "' for " + gpu.model->key);
      inst.gpu_instance_id = static_cast<unsigned>(i + 1);
      Opt(n[i], w, "gpu_instance_id",
          [&](const YAML::Node& v, const std::string& a) { inst.gpu_instance_id = Unsigned(v, a, 0, 14); });
      Opt(n[i], w, "compute_instance_id", [&](const YAML::Node& v, const std::string& a) {
        inst.compute_instance_id = Unsigned(v, a, 0, 7);
      });
      Opt(n[i], w, "load",
          [&](const YAML::Node& v, const std::string& a) { inst.load = Number(v, a, 0, 1); });
      gpu.mig.push_back(inst);
    }
  });
}

void FinishGpu(GpuConfig& gpu, const std::string& where) {
  if (gpu.model == nullptr) Fail(where, "model is required (known: " + KnownGpuModelKeys() + ")");
  const GpuModel& m = *gpu.model;
  if (gpu.power_limit_w == 0) gpu.power_limit_w = m.tdp_w;
  if (gpu.power_limit_w < m.min_power_limit_w || gpu.power_limit_w > m.tdp_w) {
    Fail(where + ".power_limit_w", "must be within [" + std::to_string(m.min_power_limit_w) + ", " +
                                       std::to_string(m.tdp_w) + "] W for " + m.key);
  }
  const double usable_gib = static_cast<double>(m.memory_mib - m.reserved_mib) / 1024.0;
  const Workload& w = gpu.workload;
  const double peak_gib = w.memory_gib + (w.kind == WorkloadKind::kTraining ? w.memory_saw_gib : 0);
  if (peak_gib > usable_gib) {
    Fail(where + ".workload",
         "memory " + std::to_string(peak_gib) + " GiB exceeds the " + m.key + "'s usable memory");
  }
  unsigned slices = 0;
  std::set<unsigned> ids;
  for (const MigInstance& inst : gpu.mig) {
    slices += inst.profile->slices;
    if (!ids.insert(inst.gpu_instance_id).second) Fail(where + ".mig", "duplicate gpu_instance_id");
  }
  if (slices > 7) Fail(where + ".mig", "instances use more than 7 compute slices");
}

void ParseGpus(Scenario& s, const YAML::Node& node) {
  if (node.IsSequence()) {
    if (node.size() == 0 || node.size() > kMaxGpus)
      Fail("gpus", "expected 1 to " + std::to_string(kMaxGpus) + " GPUs");
    for (size_t i = 0; i < node.size(); ++i) {
      GpuConfig gpu;
      ApplyGpuKeys(gpu, node[i], "gpus[" + std::to_string(i) + "]", false);
      s.gpus.push_back(gpu);
    }
  } else if (node.IsMap()) {
    GpuConfig base;
    ApplyGpuKeys(base, node, "gpus", true);
    if (!node["count"]) Fail("gpus", "count is required in the shorthand form");
    const unsigned count = Unsigned(node["count"], "gpus.count", 1, kMaxGpus);
    s.gpus.assign(count, base);
    if (const YAML::Node overrides = node["overrides"]) {
      RequireMap(overrides, "gpus.overrides");
      for (const auto& entry : overrides) {
        const unsigned index = Unsigned(entry.first, "gpus.overrides", 0, count - 1);
        ApplyGpuKeys(s.gpus[index], entry.second, "gpus.overrides." + std::to_string(index), false);
      }
    }
  } else {
    Fail("gpus", "expected a list of GPUs or {count: N, model: ...}");
  }
  for (size_t i = 0; i < s.gpus.size(); ++i) FinishGpu(s.gpus[i], "gpus[" + std::to_string(i) + "]");
}

struct FaultType {
  const char* name;
  FaultKind kind;
};
constexpr FaultType kFaultTypes[] = {
    {"xid", FaultKind::kXid},
    {"sbe_burst", FaultKind::kSbeBurst},
    {"dbe", FaultKind::kDbe},
    {"nvlink_crc", FaultKind::kNvlinkCrc},
    {"fall_off_bus", FaultKind::kFallOffBus},
    {"slow_calls", FaultKind::kSlowCalls},
    {"hang", FaultKind::kHang},
    {"row_remap_failure", FaultKind::kRowRemapFailure},
    {"pcie_degraded", FaultKind::kPcieDegraded},
    {"power_brake", FaultKind::kPowerBrake},
    {"inforom_corrupt", FaultKind::kInforomCorrupt},
    {"hostengine_down", FaultKind::kHostEngineDown},
};

Fault ParseFault(const Scenario& s, const YAML::Node& node, const std::string& where) {
  CheckKeys(node, where,
            {"type", "gpu", "at", "from", "to", "duration", "code", "pid", "process", "log", "count", "link",
             "rate", "step_slowdown", "throughput_factor", "delay_ms", "gen", "width", "pending_s"});
  Fault f;
  if (!node["type"]) Fail(where, "type is required");
  const std::string type = String(node["type"], where + ".type");
  bool found = false;
  for (const FaultType& t : kFaultTypes) {
    if (type == t.name) {
      f.kind = t.kind;
      found = true;
    }
  }
  if (!found) Fail(where + ".type", "unknown fault type '" + type + "'");
  if (f.kind == FaultKind::kHostEngineDown) {
    // The node's nv-hostengine, not a GPU.
    if (node["gpu"]) Fail(where + ".gpu", "hostengine_down is node-wide: no gpu");
    if (!s.dcgm.hostengine) Fail(where, "hostengine_down needs a host engine (dcgm: {hostengine: true})");
  } else {
    if (!node["gpu"]) Fail(where, "gpu is required");
    f.gpu = Unsigned(node["gpu"], where + ".gpu", 0, static_cast<double>(s.gpus.size()) - 1);
  }
  if (node["at"] && node["from"]) Fail(where, "give either at or from");
  const YAML::Node start = node["at"] ? node["at"] : node["from"];
  if (!start) Fail(where, "at (or from) is required");
  f.from = Number(start, where + ".at", 0, 1e9);
  if (node["to"] && node["duration"]) Fail(where, "give either to or duration");
  Opt(node, where, "to",
      [&](const YAML::Node& n, const std::string& at) { f.to = Number(n, at, f.from, 1e9); });
  Opt(node, where, "duration",
      [&](const YAML::Node& n, const std::string& at) { f.to = f.from + Number(n, at, 0, 1e9); });
  auto uint = [&](const char* key, unsigned& field, double min, double max) {
    Opt(node, where, key,
        [&](const YAML::Node& n, const std::string& at) { field = Unsigned(n, at, min, max); });
  };
  auto num = [&](const char* key, double& field, double min, double max) {
    Opt(node, where, key,
        [&](const YAML::Node& n, const std::string& at) { field = Number(n, at, min, max); });
  };
  uint("code", f.xid, 1, 999);
  uint("pid", f.pid, 1, 4194304);
  Opt(node, where, "process", [&](const YAML::Node& n, const std::string& at) { f.process = String(n, at); });
  Opt(node, where, "log", [&](const YAML::Node& n, const std::string& at) { f.log = Bool(n, at); });
  uint("count", f.count, 1, 1e9);
  uint("link", f.link, 0, 35);
  num("rate", f.rate, 0, 1e6);
  num("step_slowdown", f.step_slowdown, 1, 100);
  num("throughput_factor", f.throughput_factor, 0, 1);
  num("delay_ms", f.delay_ms, 0, 600000);
  uint("gen", f.pcie_gen, 1, 6);
  uint("width", f.pcie_width, 1, 32);
  num("pending_s", f.pending_s, 0, 1e9);

  const GpuModel& m = *s.gpus[f.gpu].model;
  switch (f.kind) {
    case FaultKind::kXid:
      if (f.xid == 0) Fail(where, "xid needs code");
      break;
    case FaultKind::kSbeBurst:
      if (f.count == 0) Fail(where, "sbe_burst needs count");
      if (f.to == kForever) Fail(where, "sbe_burst needs duration (or to)");
      break;
    case FaultKind::kNvlinkCrc:
      if (f.link >= m.nvlinks)
        Fail(where + ".link", "the " + m.key + " has " + std::to_string(m.nvlinks) + " links");
      if (f.rate <= 0) Fail(where, "nvlink_crc needs rate");
      break;
    case FaultKind::kSlowCalls:
      if (f.delay_ms <= 0) Fail(where, "slow_calls needs delay_ms");
      break;
    case FaultKind::kPcieDegraded:
      if (f.pcie_gen == 0) f.pcie_gen = m.pcie_gen > 1 ? m.pcie_gen - 1 : 1;
      if (f.pcie_width == 0) f.pcie_width = m.pcie_width / 2;
      if (f.pcie_gen > m.pcie_gen || f.pcie_width > m.pcie_width)
        Fail(where, "degraded link above the maximum");
      if (!node["rate"]) f.rate = 5;
      break;
    default:
      break;
  }
  return f;
}

void ParseDcgm(DcgmConfig& dcgm, const YAML::Node& node) {
  const std::string where = "dcgm";
  CheckKeys(node, where, {"hostengine", "address"});
  Opt(node, where, "hostengine",
      [&](const YAML::Node& n, const std::string& at) { dcgm.hostengine = Bool(n, at); });
  Opt(node, where, "address", [&](const YAML::Node& n, const std::string& at) {
    dcgm.address = String(n, at);
    const std::string_view text = dcgm.address;
    const bool unix_socket = text.starts_with("/") || text.starts_with("unix:");
    const std::optional<DcgmEndpoint> endpoint = ParseDcgmAddress(text, unix_socket);
    if (!endpoint) {
      Fail(at, "expected host[:port] (port 1-65535) or a unix socket path (/path or unix:/path), got '" +
                   dcgm.address + "'");
    }
    dcgm.endpoint = *endpoint;
  });
}

Scenario ParseDocument(const YAML::Node& root) {
  CheckKeys(root, "scenario",
            {"seed", "driver_version", "nvml_version", "speed", "start_offset", "kernel_log", "gpus",
             "faults", "proc_processes", "dcgm"});
  Scenario s;
  Opt(root, "", "seed", [&](const YAML::Node& n, const std::string&) {
    if (!n.IsScalar()) Fail("seed", "expected an integer");
    try {
      s.seed = n.as<uint64_t>();
    } catch (const YAML::Exception&) {
      Fail("seed", "expected a non-negative integer, got '" + n.Scalar() + "'");
    }
  });
  Opt(root, "", "driver_version",
      [&](const YAML::Node& n, const std::string&) { s.driver_version = String(n, "driver_version"); });
  Opt(root, "", "nvml_version",
      [&](const YAML::Node& n, const std::string&) { s.nvml_version = String(n, "nvml_version"); });
  Opt(root, "", "speed",
      [&](const YAML::Node& n, const std::string&) { s.speed = Number(n, "speed", 0.001, 100000); });
  Opt(root, "", "start_offset", [&](const YAML::Node& n, const std::string&) {
    s.start_offset = Number(n, "start_offset", 0, 30 * 86400);
  });
  Opt(root, "", "kernel_log",
      [&](const YAML::Node& n, const std::string&) { s.kernel_log = String(n, "kernel_log"); });
  Opt(root, "", "proc_processes", [&](const YAML::Node& n, const std::string&) {
    const std::string where = "proc_processes";
    CheckKeys(n, where, {"marker", "memory_gib", "proc_root"});
    s.proc_processes.enabled = true;
    Opt(n, where, "marker", [&](const YAML::Node& v, const std::string& at) {
      s.proc_processes.marker = String(v, at);
      if (s.proc_processes.marker.empty() || s.proc_processes.marker.find('=') != std::string::npos) {
        Fail(at, "expected a variable name");
      }
    });
    Opt(n, where, "memory_gib", [&](const YAML::Node& v, const std::string& at) {
      s.proc_processes.memory_gib = Number(v, at, 0, 1024);
    });
    Opt(n, where, "proc_root",
        [&](const YAML::Node& v, const std::string& at) { s.proc_processes.proc_root = String(v, at); });
  });
  Opt(root, "", "dcgm", [&](const YAML::Node& n, const std::string&) { ParseDcgm(s.dcgm, n); });
  if (!root["gpus"]) Fail("scenario", "gpus is required");
  ParseGpus(s, root["gpus"]);
  if (const YAML::Node faults = root["faults"]) {
    if (!faults.IsSequence()) Fail("faults", "expected a list");
    if (faults.size() > kMaxFaults) Fail("faults", "too many faults");
    for (size_t i = 0; i < faults.size(); ++i) {
      s.faults.push_back(ParseFault(s, faults[i], "faults[" + std::to_string(i) + "]"));
    }
  }
  return s;
}

}  // namespace

std::optional<DcgmEndpoint> ParseDcgmAddress(std::string_view text, bool unix_socket) {
  DcgmEndpoint endpoint;
  if (unix_socket) {
    if (text.starts_with("unix:")) text.remove_prefix(5);
    if (!text.starts_with("/") || text.size() < 2) return std::nullopt;
    endpoint.unix_socket = true;
    endpoint.host.clear();
    endpoint.path = std::string(text);
    return endpoint;
  }
  std::string_view host = text;
  std::string_view port;
  if (text.starts_with("[")) {  // [ipv6] or [ipv6]:port
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (!rest.starts_with(":")) return std::nullopt;
      port = rest.substr(1);
      if (port.empty()) return std::nullopt;
    }
  } else if (const size_t colon = text.find(':');
             colon != std::string_view::npos && text.find(':', colon + 1) == std::string_view::npos) {
    host = text.substr(0, colon);  // one colon: host:port; more: a bare IPv6 address
    port = text.substr(colon + 1);
    if (port.empty()) return std::nullopt;
  }
  if (host.empty()) return std::nullopt;
  if (!port.empty()) {
    if (port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    const unsigned value = static_cast<unsigned>(std::stoul(std::string(port)));
    if (value < 1 || value > 65535) return std::nullopt;
    endpoint.port = value;
  }
  std::string lower(host);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "127.0.0.1" || lower == "::1") lower = "localhost";
  endpoint.host = lower;
  return endpoint;
}

std::variant<Scenario, ScenarioError> ParseScenario(std::string_view yaml) {
  if (yaml.size() > kMaxScenarioBytes) return ScenarioError{"scenario larger than 1 MiB"};
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) return ScenarioError{"scenario: expected a mapping at the top level"};
    return ParseDocument(root);
  } catch (const Invalid& e) {
    return ScenarioError{e.what()};
  } catch (const YAML::Exception& e) {
    return ScenarioError{std::string("malformed YAML: ") + e.what()};
  } catch (const std::exception& e) {
    return ScenarioError{std::string("scenario: ") + e.what()};
  }
}

}  // namespace gpuscope::sim
