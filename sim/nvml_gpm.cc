// NVML entry points for GPM (GPU performance monitoring): samples of the activity integrals, for the GPU
// or one MIG instance, and metrics computed between two samples.
//
// Thread-safety: every entry point may be called from any thread; the set of allocated samples has its
// own mutex.
#include <set>

#include "sim/nvml_entry.h"
#include "src/core/mutex.h"

using gpuscope::sim::GpuState;
using gpuscope::sim::nvml::Call;
using gpuscope::sim::nvml::Current;
using gpuscope::sim::nvml::OnDevice;
using gpuscope::sim::nvml::Scope;

using gpuscope::sim::ActivityIntegrals;
using gpuscope::sim::ActivityViewScale;
using gpuscope::sim::IntervalRates;
using gpuscope::sim::ScaledIntegrals;

// A GPM sample: the simulated time and the activity integrals (already scaled to the GPU or the MIG
// instance) when it was taken, plus the instantaneous activity for zero-length intervals.
struct nvmlGpmSample_st {
  bool taken = false;
  unsigned gpu = 0;
  int mig = -1;
  double t = 0;
  ActivityIntegrals integrals;
  ActivityIntegrals rates;  // per second, at t
};

namespace {

gpuscope::Mutex g_samples_mu;
std::set<nvmlGpmSample_st*> g_samples GUARDED_BY(g_samples_mu);

nvmlReturn_t TakeSample(const Call& c, int mig, double scale, nvmlGpmSample_t sample) {
  {
    gpuscope::MutexLock lock(&g_samples_mu);
    if (g_samples.count(sample) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!c.config().model->gpm) return NVML_ERROR_NOT_SUPPORTED;
  const GpuState st = c.State();
  nvmlGpmSample_st& s = *sample;
  s.taken = true;
  s.gpu = c.gpu;
  s.mig = mig;
  s.t = st.t;
  s.integrals = ScaledIntegrals(st.integrals, scale);
  const gpuscope::sim::Activity& r = st.raw;
  double nvlink_bytes_per_s = 0;
  for (unsigned l = 0; l < c.config().model->nvlinks; ++l) nvlink_bytes_per_s += st.nvlink_kibps[l] * 1024;
  const double share_inv = st.mig_share > 0 ? 1 / st.mig_share : 0;
  ActivityIntegrals rates{r.util,
                          r.sm_active,
                          r.occupancy,
                          r.tensor,
                          r.dram,
                          r.fp64,
                          r.fp32,
                          r.fp16,
                          r.integer,
                          st.pcie_tx_kibps * 1024 * share_inv,
                          st.pcie_rx_kibps * 1024 * share_inv,
                          nvlink_bytes_per_s * share_inv,
                          nvlink_bytes_per_s * 0.98 * share_inv};
  s.rates = ScaledIntegrals(rates, scale);
  return NVML_SUCCESS;
}

// One GPM metric the simulator computes: the rate of one activity integral between two samples, times
// the factor to NVML's unit. A null integral: a unit the simulated workloads never use, always 0.
struct GpmMetric {
  unsigned id;
  const char* short_name;
  const char* unit;
  double ActivityIntegrals::*integral;
  double factor;
};

constexpr double kPercent = 100;
constexpr double kPerMiB = 1.0 / (1024.0 * 1024);  // a power of two: the same as dividing by 1 MiB

const GpmMetric kGpmMetrics[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, "gr_util", "%", &ActivityIntegrals::util, kPercent},
    {NVML_GPM_METRIC_SM_UTIL, "sm_util", "%", &ActivityIntegrals::sm_active, kPercent},
    {NVML_GPM_METRIC_SM_OCCUPANCY, "sm_occupancy", "%", &ActivityIntegrals::occupancy, kPercent},
    {NVML_GPM_METRIC_INTEGER_UTIL, "integer_util", "%", &ActivityIntegrals::integer, kPercent},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, "any_tensor_util", "%", &ActivityIntegrals::tensor, kPercent},
    {NVML_GPM_METRIC_DFMA_TENSOR_UTIL, "dfma_tensor_util", "%", nullptr, kPercent},
    // The simulated workloads use half-precision tensor cores.
    {NVML_GPM_METRIC_HMMA_TENSOR_UTIL, "hmma_tensor_util", "%", &ActivityIntegrals::tensor, kPercent},
    {NVML_GPM_METRIC_IMMA_TENSOR_UTIL, "imma_tensor_util", "%", nullptr, kPercent},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, "dram_bw_util", "%", &ActivityIntegrals::dram, kPercent},
    {NVML_GPM_METRIC_FP64_UTIL, "fp64_util", "%", &ActivityIntegrals::fp64, kPercent},
    {NVML_GPM_METRIC_FP32_UTIL, "fp32_util", "%", &ActivityIntegrals::fp32, kPercent},
    {NVML_GPM_METRIC_FP16_UTIL, "fp16_util", "%", &ActivityIntegrals::fp16, kPercent},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, "pcie_tx", "MiB/sec", &ActivityIntegrals::pcie_tx_bytes, kPerMiB},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, "pcie_rx", "MiB/sec", &ActivityIntegrals::pcie_rx_bytes, kPerMiB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, "nvlink_total_rx", "MiB/sec",
     &ActivityIntegrals::nvlink_rx_bytes, kPerMiB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, "nvlink_total_tx", "MiB/sec",
     &ActivityIntegrals::nvlink_tx_bytes, kPerMiB},
};

const GpmMetric* FindGpmMetric(unsigned id) {
  for (const GpmMetric& metric : kGpmMetrics) {
    if (metric.id == id) return &metric;
  }
  return nullptr;
}

// Copies the two samples of a metrics request. INVALID_ARGUMENT unless both were allocated and taken,
// of the same GPU or MIG instance.
nvmlReturn_t CopySamples(const nvmlGpmMetricsGet_t& request, nvmlGpmSample_st& s1, nvmlGpmSample_st& s2) {
  {
    gpuscope::MutexLock lock(&g_samples_mu);
    if (g_samples.count(request.sample1) == 0 || g_samples.count(request.sample2) == 0) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    s1 = *request.sample1;
    s2 = *request.sample2;
  }
  if (!s1.taken || !s2.taken || s1.gpu != s2.gpu || s1.mig != s2.mig) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

char* Text(const char* s) { return const_cast<char*>(s); }  // NVML's struct has char*; callers only read

}  // namespace

extern "C" {

SIM_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* support) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    if (support == nullptr || support->version != NVML_GPM_SUPPORT_VERSION)
      return NVML_ERROR_INVALID_ARGUMENT;
    support->isSupportedDevice = c.config().model->gpm ? 1 : 0;
    return NVML_SUCCESS;
  });
}

SIM_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  if (!Current()) return NVML_ERROR_UNINITIALIZED;
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* s = new nvmlGpmSample_st();
  gpuscope::MutexLock lock(&g_samples_mu);
  g_samples.insert(s);
  *sample = s;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  gpuscope::MutexLock lock(&g_samples_mu);
  if (g_samples.erase(sample) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  delete sample;
  return NVML_SUCCESS;
}

SIM_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  return OnDevice(device, Scope::kGpuOnly,
                  [&](Call& c) { return TakeSample(c, -1, ActivityViewScale(c.config(), -1), sample); });
}

SIM_EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpu_instance_id,
                                            nvmlGpmSample_t sample) {
  return OnDevice(device, Scope::kGpuOnly, [&](Call& c) {
    const auto& mig = c.config().mig;
    for (size_t i = 0; i < mig.size(); ++i) {
      if (mig[i].gpu_instance_id == gpu_instance_id)
        return TakeSample(c, static_cast<int>(i), ActivityViewScale(c.config(), static_cast<int>(i)), sample);
    }
    return c.config().model->gpm ? NVML_ERROR_NOT_FOUND : NVML_ERROR_NOT_SUPPORTED;
  });
}

SIM_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metrics_get) {
  if (!Current()) return NVML_ERROR_UNINITIALIZED;
  if (metrics_get == nullptr || metrics_get->version != NVML_GPM_METRICS_GET_VERSION ||
      metrics_get->numMetrics > NVML_GPM_METRIC_MAX) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  nvmlGpmSample_st s1;
  nvmlGpmSample_st s2;
  if (nvmlReturn_t r = CopySamples(*metrics_get, s1, s2); r != NVML_SUCCESS) return r;
  // Over the interval between the samples; for two samples at the same instant (frozen time), the
  // instantaneous rates.
  const double dt = s2.t - s1.t;
  const ActivityIntegrals rates = dt != 0 ? IntervalRates(s1.integrals, s2.integrals, dt) : s2.rates;
  for (unsigned i = 0; i < metrics_get->numMetrics; ++i) {
    nvmlGpmMetric_t& metric = metrics_get->metrics[i];
    metric.nvmlReturn = NVML_SUCCESS;
    metric.value = 0;
    metric.metricInfo = {};
    const GpmMetric* known = FindGpmMetric(metric.metricId);
    if (known == nullptr) {
      metric.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    if (known->integral != nullptr) metric.value = rates.*(known->integral) * known->factor;
    metric.metricInfo = {Text(known->short_name), Text(known->short_name), Text(known->unit)};
  }
  return NVML_SUCCESS;
}

}  // extern "C"
