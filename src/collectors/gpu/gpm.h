// GpmSampler: GPU Performance Monitoring (Hopper and newer) for one GPU or one MIG GPU instance. GPM
// metrics are computed between two samples, so the sampler keeps the previous one and each Take()
// yields the metrics over the interval since the last call (nothing on the first call).
//
// Thread-safety: not thread-safe; owned and used by one GPU worker.
#pragma once

#include <array>
#include <memory>
#include <optional>

#include "src/platform/nvml/nvml_library.h"

namespace gpuscope {

enum class GpmMetric : int {
  kGraphicsUtil,
  kSmUtil,
  kSmOccupancy,
  kAnyTensorUtil,
  kDramBwUtil,
  kFp64Util,
  kFp32Util,
  kFp16Util,
  kPcieTxPerSec,
  kPcieRxPerSec,
  kNvlinkTxPerSec,
  kNvlinkRxPerSec,
  kCount
};
constexpr size_t kGpmMetricCount = static_cast<size_t>(GpmMetric::kCount);

// Metrics over one interval, already converted: utilisations as ratios 0..1, rates in bytes/s.
struct GpmValues {
  bool valid = false;  // false on the first sample
  std::array<double, kGpmMetricCount> value{};
  std::array<bool, kGpmMetricCount> present{};
  double Get(GpmMetric m) const { return value[static_cast<size_t>(m)]; }
  bool Has(GpmMetric m) const { return valid && present[static_cast<size_t>(m)]; }
};

class GpmSampler {
 public:
  // `gpu_instance_id` set: samples that MIG GPU instance of `device` (nvmlGpmMigSampleGet).
  GpmSampler(std::shared_ptr<const NvmlLibrary> nvml, nvmlDevice_t device,
             std::optional<unsigned int> gpu_instance_id);
  ~GpmSampler();
  GpmSampler(const GpmSampler&) = delete;
  GpmSampler& operator=(const GpmSampler&) = delete;

  // Takes a sample. Returns NVML_SUCCESS with `values->valid` true when a previous sample existed (the
  // metrics cover the interval between them), valid false on the first call; an NVML error otherwise
  // (the previous sample is then forgotten, so the next interval starts afresh).
  nvmlReturn_t Take(GpmValues* values);
  // Forgets the previous sample (profiling paused: the next interval starts at the next Take).
  void Reset() { have_previous_ = false; }

 private:
  std::shared_ptr<const NvmlLibrary> nvml_;
  nvmlDevice_t device_;
  std::optional<unsigned int> gpu_instance_id_;
  nvmlGpmSample_t previous_{};
  nvmlGpmSample_t current_{};
  bool allocated_ = false;
  bool have_previous_ = false;
  std::unique_ptr<nvmlGpmMetricsGet_t> request_;  // large (hundreds of metric slots): allocated once
};

}  // namespace gpuscope
