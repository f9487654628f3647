#include "src/collectors/gpu/gpm.h"

#include <utility>

#include "src/collectors/gpu/compat.h"

namespace gpuscope {
namespace {

// NVML metric id per GpmMetric, in enum order.
constexpr nvmlGpmMetricId_t kMetricIds[] = {
    NVML_GPM_METRIC_GRAPHICS_UTIL,
    NVML_GPM_METRIC_SM_UTIL,
    NVML_GPM_METRIC_SM_OCCUPANCY,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    NVML_GPM_METRIC_DRAM_BW_UTIL,
    NVML_GPM_METRIC_FP64_UTIL,
    NVML_GPM_METRIC_FP32_UTIL,
    NVML_GPM_METRIC_FP16_UTIL,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC,
    NVML_GPM_METRIC_PCIE_RX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
};
static_assert(std::size(kMetricIds) == kGpmMetricCount);

bool IsRate(nvmlGpmMetricId_t id) {
  return id == NVML_GPM_METRIC_PCIE_TX_PER_SEC || id == NVML_GPM_METRIC_PCIE_RX_PER_SEC ||
         id == NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC || id == NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC;
}

}  // namespace

GpmSampler::GpmSampler(std::shared_ptr<const NvmlLibrary> nvml, nvmlDevice_t device,
                       std::optional<unsigned int> gpu_instance_id)
    : nvml_(std::move(nvml)),
      device_(device),
      gpu_instance_id_(gpu_instance_id),
      request_(std::make_unique<nvmlGpmMetricsGet_t>()) {}

GpmSampler::~GpmSampler() {
  if (allocated_) {
    nvml_->nvmlGpmSampleFree(previous_);
    nvml_->nvmlGpmSampleFree(current_);
  }
}

nvmlReturn_t GpmSampler::Take(GpmValues* values) {
  values->valid = false;
  if (!allocated_) {
    nvmlReturn_t r = nvml_->nvmlGpmSampleAlloc(&previous_);
    if (r != NVML_SUCCESS) return r;
    r = nvml_->nvmlGpmSampleAlloc(&current_);
    if (r != NVML_SUCCESS) {
      nvml_->nvmlGpmSampleFree(previous_);
      return r;
    }
    allocated_ = true;
  }
  nvmlReturn_t r = gpu_instance_id_ ? nvml_->nvmlGpmMigSampleGet(device_, *gpu_instance_id_, current_)
                                    : nvml_->nvmlGpmSampleGet(device_, current_);
  if (r != NVML_SUCCESS) {
    have_previous_ = false;
    return r;
  }
  if (!have_previous_) {
    std::swap(previous_, current_);
    have_previous_ = true;
    return NVML_SUCCESS;
  }
  nvmlGpmMetricsGet_t& request = *request_;
  request.version = NVML_GPM_METRICS_GET_VERSION;
  request.numMetrics = kGpmMetricCount;
  request.sample1 = previous_;
  request.sample2 = current_;
  for (size_t i = 0; i < kGpmMetricCount; ++i) {
    request.metrics[i].metricId = kMetricIds[i];
    request.metrics[i].nvmlReturn = NVML_ERROR_UNKNOWN;
    request.metrics[i].value = 0;
  }
  // The newer sample becomes the start of the next interval whatever the outcome.
  std::swap(previous_, current_);
  r = nvml_->nvmlGpmMetricsGet(&request);
  if (r != NVML_SUCCESS) return r;
  for (size_t i = 0; i < kGpmMetricCount; ++i) {
    const nvmlGpmMetric_t& metric = request.metrics[i];
    values->present[i] = metric.nvmlReturn == NVML_SUCCESS;
    values->value[i] =
        IsRate(kMetricIds[i]) ? MiBpsToBytesPerSecond(metric.value) : PercentToRatio(metric.value);
  }
  values->valid = true;
  return NVML_SUCCESS;
}

}  // namespace gpuscope
