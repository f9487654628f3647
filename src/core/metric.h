// The metric model: a family is {name, help, type, unit, samples{labels, value}}. Collectors build
// fresh families every cycle (no long-lived instruments), so a series vanishes when its device or job
// does. Name and label validation lives here; rendering lives in sinks/prometheus/exposition.h.
//
// Thread-safety: value types. A MetricFamily inside a published Snapshot is immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
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
// per device is put on every sample of every cycle for the price of a reference count. A set may extend
// another one (Extend: a GPU's labels + link="3") without copying its pairs, so a thousand link series
// of a GPU hold the GPU's pairs once. Changing a set (push_back, emplace_back) appends to it in place
// when nothing else refers to it and extends it otherwise; Mutable() gives a private flat copy. Code that
// would make new sets per sample per cycle should take them from a LabelSetCache instead.
class Labels {
 public:
  using Pair = std::pair<std::string, std::string>;
  using value_type = Pair;

  // Walks the pairs in order (those of the set extended first).
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Pair;
    using difference_type = std::ptrdiff_t;
    using pointer = const Pair*;
    using reference = const Pair&;
    const_iterator() = default;
    const_iterator(const Labels* labels, size_t index) : labels_(labels), index_(index) {}
    reference operator*() const { return (*labels_)[index_]; }
    pointer operator->() const { return &(*labels_)[index_]; }
    const_iterator& operator++() {
      ++index_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++index_;
      return before;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.index_ == b.index_; }

   private:
    const Labels* labels_ = nullptr;
    size_t index_ = 0;
  };
  using iterator = const_iterator;  // reading only: change through push_back or Mutable()

  Labels() = default;
  Labels(std::initializer_list<Pair> pairs) : Labels(std::vector<Pair>(pairs)) {}
  explicit Labels(std::vector<Pair> pairs);
  // `base`'s pairs followed by `extra`, sharing `base`'s storage.
  static Labels Extend(const Labels& base, std::vector<Pair> extra);

  size_t size() const;
  bool empty() const { return size() == 0; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }
  const Pair& operator[](size_t i) const;
  const Pair& at(size_t i) const;
  const Pair& front() const { return (*this)[0]; }
  const Pair& back() const { return (*this)[size() - 1]; }
  // Copies share this: what a cache can key on.
  const void* identity() const { return node_.get(); }

  void reserve(size_t n);
  void push_back(Pair pair);
  template <typename K, typename V>
  void emplace_back(K&& name, V&& value) {
    push_back(Pair(std::forward<K>(name), std::forward<V>(value)));
  }
  // Every pair, flat and private to this set, to change in place.
  std::vector<Pair>& Mutable();

  friend bool operator==(const Labels& a, const Labels& b);
  friend bool operator<(const Labels& a, const Labels& b);

 private:
  struct Node;
  static constexpr int kMaxDepth = 4;  // deeper chains are flattened on the next change
  std::shared_ptr<Node> node_;         // never changed while shared (use_count > 1)
};

struct Labels::Node {
  Labels parent;          // the set this one extends (empty when flat)
  std::vector<Pair> own;  // the pairs after the parent's
  int depth = 0;          // extensions below this one
};

inline size_t Labels::size() const { return node_ ? node_->parent.size() + node_->own.size() : 0; }

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
