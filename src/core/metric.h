// The metric model: a family is {name, help, type, unit, samples{labels, value}}. Collectors build
// fresh families every cycle (no long-lived instruments), so a series vanishes when its device or job
// does. Name and label validation lives here; rendering lives in sinks/prometheus/exposition.h.
//
// A histogram family's samples carry a HistogramValue (fixed bucket bounds shared by the family, counts,
// sum, an exemplar per bucket) instead of a number; each sink writes it in its own form (the _bucket,
// _sum and _count series of Prometheus, OTLP's explicit-bucket Histogram).
//
// Thread-safety: value types. A MetricFamily inside a published Snapshot is immutable, and so is every
// HistogramValue and HistogramBuckets (shared between threads by const pointer).
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

enum class MetricType { kGauge, kCounter, kInfo, kUnknown, kHistogram };

// "gauge", "counter", "info", "unknown", "histogram"
std::string_view MetricTypeName(MetricType type);

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

// The buckets of a histogram: finite upper bounds, strictly ascending, and the +Inf bucket after them.
// Made once (per family, for the agent's life) and shared by every sample that uses them; the `le` label
// value of each bound is worked out here once, so that every sink names a bucket series alike.
class HistogramBuckets {
 public:
  // Nullptr (and *error set when given) unless `bounds` are finite and strictly ascending.
  static std::shared_ptr<const HistogramBuckets> Make(std::vector<double> bounds,
                                                      std::string* error = nullptr);

  // The finite upper bounds (the +Inf bucket is implied after them).
  const std::vector<double>& bounds() const { return bounds_; }
  // Buckets including +Inf: bounds().size() + 1.
  size_t size() const { return bounds_.size() + 1; }
  // The `le` label value of bucket i: the bound as Prometheus 3 normalises it (1 -> "1.0", 0.25 ->
  // "0.25"), "+Inf" for the last.
  std::string_view le(size_t i) const { return i < le_.size() ? std::string_view(le_[i]) : "+Inf"; }

 private:
  HistogramBuckets() = default;
  std::vector<double> bounds_;
  std::vector<std::string> le_;
};

// A traced observation that fell into a bucket (OpenMetrics exemplars, OTLP exemplars): its labels (the
// trace id as trace_id), its value and when it was observed.
struct Exemplar {
  Labels labels;  // empty: no exemplar
  double value = 0;
  int64_t timestamp_ns = 0;  // Unix time; 0 when unknown
};

// The value of one histogram sample: cumulative counts per bucket (counts[i] observations <= bound i,
// the last one all of them), their sum, and per bucket the exemplar of an observation in it (empty, or
// exactly one entry per bucket, an empty-labelled one meaning none).
struct HistogramValue {
  std::shared_ptr<const HistogramBuckets> buckets;  // never null in a published sample
  std::vector<uint64_t> counts;                     // cumulative, buckets->size() entries
  double sum = 0;
  std::vector<Exemplar> exemplars;
  uint64_t count() const { return counts.empty() ? 0 : counts.back(); }
};

struct Sample {
  Sample() = default;
  Sample(Labels labels_in, double value_in, SampleSubject subject_in = {})
      : labels(std::move(labels_in)), value(value_in), subject(subject_in) {}
  // A sample of a histogram family (value stays 0).
  Sample(Labels labels_in, std::shared_ptr<const HistogramValue> histogram_in, SampleSubject subject_in = {})
      : labels(std::move(labels_in)), subject(subject_in), histogram(std::move(histogram_in)) {}
  Labels labels;
  double value = 0;
  SampleSubject subject;
  // Set exactly on the samples of a kHistogram family; a null pointer costs a gauge sample nothing but
  // its 16 bytes. Layers that relabel a sample (attribution) carry it along untouched.
  std::shared_ptr<const HistogramValue> histogram;
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

// A family with `description`'s name, help, type and unit, and no samples yet.
MetricFamily FamilyOf(const MetricDescription& description);

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__"
bool IsValidLabelName(std::string_view name);

}  // namespace gpuscope
