// The metric model: a family is {name, help, type, unit, samples{labels, value}}. Collectors build
// fresh families every cycle (no long-lived instruments), so a series vanishes when its device or job
// does. Name and label validation lives here; rendering lives in sinks/prometheus/exposition.h.
//
// Thread-safety: value types. A MetricFamily inside a published Snapshot is immutable.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope {

enum class MetricType { kGauge, kCounter, kInfo, kUnknown };

std::string_view MetricTypeName(MetricType type);  // "gauge", "counter", "info", "unknown"

// Label pairs in the order they are rendered. Within one family every sample has the same label names
// in the same order (fixed label sets per family).
//
// Shared and immutable: copying a Labels copies a reference (no allocation), so a label set built once
// per device is put on every sample of every cycle for the price of a reference count. Changing one
// (push_back, emplace_back, Mutable) first gives it its own copy of the pairs when they are shared:
// code that changes labels per sample per cycle allocates, and should take the result from a
// LabelSetCache instead. Reading never copies.
class Labels {
 public:
  using Pair = std::pair<std::string, std::string>;
  using value_type = Pair;
  using const_iterator = std::vector<Pair>::const_iterator;
  using iterator = const_iterator;  // reading only: change through Mutable()

  Labels() = default;
  Labels(std::initializer_list<Pair> pairs) : Labels(std::vector<Pair>(pairs)) {}
  explicit Labels(std::vector<Pair> pairs);

  size_t size() const { return pairs_ ? pairs_->size() : 0; }
  bool empty() const { return size() == 0; }
  const_iterator begin() const { return pairs().begin(); }
  const_iterator end() const { return pairs().end(); }
  const Pair& operator[](size_t i) const { return pairs()[i]; }
  const Pair& at(size_t i) const { return pairs().at(i); }
  const Pair& front() const { return pairs().front(); }
  const Pair& back() const { return pairs().back(); }
  const std::vector<Pair>& pairs() const;
  // The same pairs, and the same storage: copies of one set share it (what a cache can key on).
  const void* identity() const { return pairs_.get(); }

  void reserve(size_t n) { Mutable().reserve(n); }
  // Appends a pair (copy-on-write).
  void push_back(Pair pair) { Mutable().push_back(std::move(pair)); }
  template <typename K, typename V>
  void emplace_back(K&& name, V&& value) {
    Mutable().emplace_back(std::forward<K>(name), std::forward<V>(value));
  }
  // The pairs to change in place, after taking a private copy when they are shared.
  std::vector<Pair>& Mutable();

  friend bool operator==(const Labels& a, const Labels& b) {
    return a.pairs_ == b.pairs_ || a.pairs() == b.pairs();
  }
  friend bool operator<(const Labels& a, const Labels& b) { return a.pairs() < b.pairs(); }

 private:
  std::shared_ptr<std::vector<Pair>> pairs_;  // never changed while shared (use_count > 1)
};

// What a sample is about, for the layers that enrich it after the collector (attribution ties a GPU
// sample to the job holding that GPU or MIG instance, a process sample to its process's job). Set by the
// collector that knows; never rendered. The defaults mean "not about one GPU / instance / process".
struct SampleSubject {
  static constexpr int32_t kNone = -1;
  int32_t gpu = kNone;           // NVML index of the GPU
  int32_t gpu_instance = kNone;  // MIG GPU instance id (GPU_I_ID)
  uint32_t pid = 0;              // the process, 0 when none
};

struct Sample {
  Sample() = default;
  Sample(Labels labels_in, double value_in, SampleSubject subject_in = {})
      : labels(std::move(labels_in)), value(value_in), subject(subject_in) {}
  Labels labels;
  double value = 0;
  SampleSubject subject;
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::string unit;  // OpenMetrics unit ("seconds", "bytes"); empty for dcgm-exporter names
  std::vector<Sample> samples;
};

// What a collector declares about one family it may emit; docs/metrics.md is generated from these.
struct MetricDescription {
  std::string name;
  MetricType type = MetricType::kGauge;
  std::string help;
  std::string unit;
  std::vector<std::string> labels;  // label names beyond the collector's common identity labels
  std::string source;               // where the value comes from (e.g. the NVML call), for the docs
};

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__"
bool IsValidLabelName(std::string_view name);

}  // namespace gpuscope
