// Which scenario GPUs the stand-in libcuda.so.1 shows as CUDA devices, and in which order: the rules of
// CUDA_VISIBLE_DEVICES as the real driver applies them, as a pure function (no getenv) shared by the
// library and the workload driver.
//
// Thread-safety: reentrant.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::sim::cuda {

// The scenario GPU index behind each CUDA ordinal. `value` is CUDA_VISIBLE_DEVICES (nullopt: unset, every
// GPU in scenario order); `uuids` are the scenario GPUs' UUIDs (Simulator::Uuid), by index. Entries are
// comma-separated indices or full UUIDs (`GPU-...`); as in the real driver the list ends at the first
// entry that is neither, names a GPU beyond the count, or repeats one, and an empty value shows no GPU.
std::vector<unsigned> VisibleGpus(std::optional<std::string_view> value,
                                  const std::vector<std::string>& uuids);

}  // namespace gpuscope::sim::cuda
