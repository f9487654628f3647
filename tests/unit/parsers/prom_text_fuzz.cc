// libFuzzer entry point for the text format 0.0.4 parser (see src/parsers/prom_text.h), in both modes.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "src/core/utf8.h"
#include "src/parsers/prom_text.h"

namespace {

void CheckInvariants(const gpuscope::PromTextParse& parsed, bool one_label_set) {
  // Invariants: an error leaves no family; a success holds only valid names, valid UTF-8 label values,
  // one label set per family and no series twice.
  if (!parsed.error.empty() && !parsed.families.empty()) __builtin_trap();
  for (const gpuscope::MetricFamily& family : parsed.families) {
    if (!gpuscope::IsValidMetricName(family.name) || family.samples.empty()) __builtin_trap();
    std::set<std::string> series;
    for (const gpuscope::Sample& sample : family.samples) {
      if (one_label_set && sample.labels.size() != family.samples.front().labels.size()) __builtin_trap();
      std::string key;
      for (size_t i = 0; i < sample.labels.size(); ++i) {
        const auto& [name, value] = sample.labels[i];
        if (one_label_set && name != family.samples.front().labels[i].first) __builtin_trap();
        if (!gpuscope::IsValidLabelName(name) || !gpuscope::IsValidUtf8(value)) __builtin_trap();
        key += name + '\xff' + value + '\xfe';
      }
      if (!series.insert(key).second) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const gpuscope::PromTextParse strict = gpuscope::ParsePromText(input);
  CheckInvariants(strict, true);
  // The lenient mode (histograms as untyped series, mixed label names) accepts everything the strict mode
  // does, with the same families.
  const gpuscope::PromTextParse lenient =
      gpuscope::ParsePromText(input, {.histograms_as_untyped = true, .mixed_label_names = true});
  CheckInvariants(lenient, false);
  if (strict.error.empty() && (!lenient.error.empty() || lenient.families.size() != strict.families.size())) {
    __builtin_trap();
  }
  return 0;
}
