// Helpers for GPU collector tests: find families and samples in a Collect() result.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/metric.h"

namespace gpuscope::testing {

inline const MetricFamily* FindFamily(const std::vector<MetricFamily>& families, std::string_view name) {
  for (const MetricFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

inline std::string LabelValue(const Labels& labels, std::string_view name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return "<absent>";
}

// The sample of `family` whose labels include every (name, value) of `match`; null if none.
inline const Sample* FindSample(const std::vector<MetricFamily>& families, std::string_view family,
                                const Labels& match) {
  const MetricFamily* f = FindFamily(families, family);
  if (f == nullptr) return nullptr;
  for (const Sample& s : f->samples) {
    bool all = true;
    for (const auto& [k, v] : match) all = all && LabelValue(s.labels, k) == v;
    if (all) return &s;
  }
  return nullptr;
}

inline std::vector<std::string> LabelNames(const Labels& labels) {
  std::vector<std::string> names;
  for (const auto& [k, v] : labels) names.push_back(k);
  return names;
}

// Freezes simulated time at time_s: the value a simulator starts with (GPUSCOPE_SIM_TIME), and, for each
// (library path, set-time symbol) already loaded, the running simulator's time (moved through its
// control, not the environment, which the agent's threads may read meanwhile).
inline void SetSimTime(double time_s, std::initializer_list<std::pair<const char*, const char*>> libraries) {
  setenv("GPUSCOPE_SIM_TIME", std::to_string(time_s).c_str(), 1);
  for (const auto& [path, symbol] : libraries) {
    if (void* lib = dlopen(path, RTLD_LAZY | RTLD_NOLOAD)) {
      if (auto* set = reinterpret_cast<void (*)(double)>(dlsym(lib, symbol))) set(time_s);
      dlclose(lib);
    }
  }
}

}  // namespace gpuscope::testing
