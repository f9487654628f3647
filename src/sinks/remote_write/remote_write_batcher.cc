#include "src/sinks/remote_write/remote_write_batcher.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>

#include "src/sinks/otlp/protowire.h"
#include "src/sinks/remote_write/remote_write_encode.h"
#include "src/sinks/remote_write/remote_write_record.h"
#include "src/sinks/remote_write/remote_write_wire.h"

namespace gpuscope {
namespace {

using remote_write_wire::PutBytes;
using remote_write_wire::PutFixed64;
using remote_write_wire::PutVarint;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Whether `labels` could be a series the batcher wrote: sorted by name without repeats, __name__ a valid
// metric name, every other name a valid label name.
bool IsSeriesLabels(const std::vector<std::pair<std::string, std::string>>& labels) {
  bool has_name = false;
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto& [name, value] = labels[i];
    if (i > 0 && !(labels[i - 1].first < name)) return false;
    if (name == "__name__") {
      if (!IsValidMetricName(value)) return false;
      has_name = true;
    } else if (!IsValidLabelName(name)) {
      return false;
    }
  }
  return has_name;
}

}  // namespace

// The 2.0 symbols table of the current epoch: "" first, each string once, append-only; `bytes` is its
// encoding as the Request's symbols field entries.
class RemoteWriteBatcher::SymbolTable {
 public:
  explicit SymbolTable(uint64_t epoch) { Reset(epoch); }
  void Reset(uint64_t epoch) {
    epoch_ = epoch;
    refs_.clear();
    strings_.clear();
    bytes_.clear();
    Ref("");
  }
  uint32_t Ref(std::string_view s) {
    if (auto found = refs_.find(s); found != refs_.end()) return found->second;
    const auto ref = static_cast<uint32_t>(strings_.size());
    strings_.push_back(refs_.emplace(std::string(s), ref).first->first);  // a node's key does not move
    protowire::AppendBytesField(bytes_, 4, s);
    return ref;
  }
  // The string of `ref` (which this table gave out).
  std::string_view At(uint32_t ref) const { return strings_[ref]; }
  uint64_t epoch() const { return epoch_; }
  const std::string& bytes() const { return bytes_; }
  size_t size() const { return strings_.size(); }

 private:
  uint64_t epoch_ = 0;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> refs_;
  std::vector<std::string_view> strings_;  // by ref: views of refs_' keys
  std::string bytes_;
};

// A series is its labels' refs: the key it is kept under in series_ (packed varints, names and values
// alternating, sorted by name, __name__ included), in the current table.
struct RemoteWriteBatcher::Series {
  uint64_t seen = 0;    // the last build whose snapshot had it
  uint64_t queued = 0;  // the last queued build that had it, as known when it was last met (InPrevious)
  const std::string* refs = nullptr;  // its key in series_
};

struct RemoteWriteBatcher::Family {
  // A label set met in this family: the Labels copy keeps its storage (the identity) alive.
  struct Known {
    Labels labels;
    Series* series = nullptr;  // nullptr: not sendable (an invalid or duplicate label name)
    uint64_t seen = 0;
  };
  struct Slot {
    const void* identity;
    Series* series;
  };
  std::string name;
  bool valid = false;  // a valid metric name; otherwise the family is left out
  MetricType type = MetricType::kUnknown;
  std::string help;
  std::string unit;
  std::string metadata_field;  // TimeSeries.metadata (field 5), in epoch `epoch`'s table; empty if none
  uint64_t epoch = 0;
  uint64_t seen = 0;
  size_t cursor = 0;  // samples of this family met so far in this build
  bool slow = false;  // a sample of this build was not where the previous build had it
  // Every label set of the previous build (exactly those of `order`).
  std::unordered_map<const void*, Known> by_identity;
  std::vector<Slot> order;       // the previous build's samples, in order: the first guess
  std::vector<Slot> next_order;  // this build's
  // A _bucket family's label sets: per sample label set (by identity), that set + le for each bucket.
  struct BucketSets {
    Labels base;  // keeps the identity alive
    std::shared_ptr<const HistogramBuckets> buckets;
    std::vector<Labels> sets;
    uint64_t seen = 0;
  };
  std::unordered_map<const void*, BucketSets> bucket_sets;
};

RemoteWriteBatcher::RemoteWriteBatcher(std::vector<std::pair<std::string, std::string>> external_labels)
    : external_labels_(std::move(external_labels)) {
  std::random_device random;
  const uint64_t epoch = (static_cast<uint64_t>(random()) << 32) ^ random();
  symbols_ = std::make_unique<SymbolTable>(epoch == 0 ? 1 : epoch);
}

RemoteWriteBatcher::~RemoteWriteBatcher() = default;

size_t RemoteWriteBatcher::cached_series() const { return series_.size(); }

size_t RemoteWriteBatcher::symbols() const { return symbols_->size(); }

void RemoteWriteBatcher::StartEpochIfDue() {
  // Forgotten series' strings stay in the table until a new epoch: start one when they could outnumber
  // the live ones'. Every kept series' refs are translated into the new table (its key changes, the
  // series stays where it is, so families' pointers to it hold).
  if (forgotten_since_epoch_ <= series_.size() + 1024) return;
  uint64_t epoch = symbols_->epoch() + 1;
  if (epoch == 0) epoch = 1;  // 0 means "not worked out" in Family
  auto fresh = std::make_unique<SymbolTable>(epoch);
  std::vector<decltype(series_)::node_type> nodes;
  nodes.reserve(series_.size());
  while (!series_.empty()) nodes.push_back(series_.extract(series_.begin()));
  for (auto& node : nodes) {
    std::string refs;
    size_t pos = 0;
    uint64_t ref = 0;
    while (protowire::ReadVarint(node.key(), &pos, &ref))
      protowire::AppendVarint(refs, fresh->Ref(symbols_->At(static_cast<uint32_t>(ref))));
    node.key() = std::move(refs);
    series_.insert(std::move(node));
  }
  for (auto& [key, series] : series_) series.refs = &key;
  symbols_ = std::move(fresh);
  forgotten_since_epoch_ = 0;
}

void RemoteWriteBatcher::Refresh(Family& family) {
  std::string metadata;
  if (const uint64_t type = remote_write_wire::TypeNumber(family.type); type != 0)
    protowire::AppendVarintField(metadata, 1, type);
  if (const uint32_t help = symbols_->Ref(family.help); help != 0)
    protowire::AppendVarintField(metadata, 3, help);
  if (const uint32_t unit = symbols_->Ref(family.unit); unit != 0)
    protowire::AppendVarintField(metadata, 4, unit);
  family.metadata_field.clear();
  if (!metadata.empty()) protowire::AppendBytesField(family.metadata_field, 5, metadata);
  family.epoch = symbols_->epoch();
}

RemoteWriteBatcher::Series* RemoteWriteBatcher::Miss(Family& family, const Labels& sample_labels) {
  std::vector<std::pair<std::string, std::string>> labels;
  labels.reserve(sample_labels.size() + 1 + external_labels_.size());
  labels.emplace_back("__name__", family.name);
  for (const auto& pair : sample_labels) {
    if (!IsValidLabelName(pair.first)) return nullptr;
    if (!pair.second.empty()) labels.push_back(pair);  // an empty value is no label (see the header)
  }
  for (const auto& external : external_labels_) {
    if (external.second.empty()) continue;
    const bool present = std::any_of(labels.begin(), labels.end(),
                                     [&](const auto& pair) { return pair.first == external.first; });
    if (!present) labels.push_back(external);
  }
  std::sort(labels.begin(), labels.end());
  const bool duplicate_name =
      std::adjacent_find(labels.begin(), labels.end(),
                         [](const auto& a, const auto& b) { return a.first == b.first; }) != labels.end();
  if (duplicate_name) return nullptr;
  std::string refs;
  for (const auto& [name, value] : labels) {
    protowire::AppendVarint(refs, symbols_->Ref(name));
    protowire::AppendVarint(refs, symbols_->Ref(value));
  }
  // Found: the same series under a new label set.
  auto [found, inserted] = series_.try_emplace(std::move(refs));
  found->second.refs = &found->first;
  return &found->second;
}

RemoteWriteBatcher::Series* RemoteWriteBatcher::Resolve(Family& family, const Labels& labels, size_t index) {
  const void* identity = labels.identity();
  if (index < family.order.size() && family.order[index].identity == identity) {
    family.next_order.push_back(family.order[index]);  // the steady state: the same sets in the same order
    return family.order[index].series;
  }
  family.slow = true;
  auto [found, inserted] = family.by_identity.try_emplace(identity);
  if (inserted) {
    found->second.labels = labels;
    found->second.series = Miss(family, labels);
  }
  family.next_order.push_back({identity, found->second.series});
  return found->second.series;
}

void RemoteWriteBatcher::EndFamily(Family& family) {
  // Label sets met in the very order of the previous build are exactly the kept ones: nothing to forget.
  if (family.slow || family.cursor != family.order.size()) {
    for (const Family::Slot& slot : family.next_order)
      family.by_identity.find(slot.identity)->second.seen = build_;
    std::erase_if(family.by_identity, [this](const auto& entry) { return entry.second.seen != build_; });
  }
  std::swap(family.order, family.next_order);
}

// Whether `series`, not met in the current build, was in the last queued record.
bool RemoteWriteBatcher::InPrevious(const Series& series) const {
  return last_queued_ != 0 && (series.seen == last_queued_ || series.queued == last_queued_);
}

RemoteWriteBatcher::Family* RemoteWriteBatcher::Enter(std::string_view name, const MetricFamily& described) {
  // The steady state: the families of the previous build, in the same order.
  Family* family = nullptr;
  const size_t index = next_family_order_.size();
  if (index < family_order_.size() && family_order_[index]->name == name) {
    family = family_order_[index];
  } else {
    std::unique_ptr<Family>& slot = families_[std::string(name)];
    if (slot == nullptr) {
      slot = std::make_unique<Family>();
      slot->name = std::string(name);
      slot->valid = IsValidMetricName(slot->name);
    }
    family = slot.get();
  }
  next_family_order_.push_back(family);
  // Families of one name are adjacent; the first one's metadata stands for them all.
  family->seen = build_;
  family->cursor = 0;
  family->slow = false;
  family->next_order.clear();
  if (family->type != described.type || family->help != described.help || family->unit != described.unit) {
    family->type = described.type;
    family->help = described.help;
    family->unit = described.unit;
    family->epoch = 0;
  }
  if (family->epoch != symbols_->epoch()) Refresh(*family);
  return family;
}

// Kept out of Build: inlined there, it slowed the gauge samples' loop by 5-10% (bench_remote_write,
// BM_Encode_Record/1).
template <typename AddFn>
[[gnu::noinline]] void RemoteWriteBatcher::AddHistograms(std::span<const MetricFamily* const> parts,
                                                         const AddFn& add) {
  const MetricFamily& described = *parts.front();
  const auto well_formed = [](const MetricFamily& part, const Sample& sample) {
    return part.type == MetricType::kHistogram && sample.histogram != nullptr &&
           sample.histogram->buckets != nullptr &&
           sample.histogram->counts.size() == sample.histogram->buckets->size();
  };
  // Buckets, then count, then sum: each a family of its own.
  Family* buckets = Enter(described.name + "_bucket", described);
  if (buckets->valid) {
    size_t sets_used = 0;
    for (const MetricFamily* part : parts) {
      for (const Sample& sample : part->samples) {
        if (!well_formed(*part, sample)) continue;
        const HistogramValue& histogram = *sample.histogram;
        Family::BucketSets& sets = buckets->bucket_sets[sample.labels.identity()];
        if (sets.seen != build_) ++sets_used;
        sets.seen = build_;
        if (sets.buckets != histogram.buckets || sets.sets.empty()) {
          sets.base = sample.labels;
          sets.buckets = histogram.buckets;
          sets.sets.clear();
          for (size_t i = 0; i < histogram.buckets->size(); ++i)
            sets.sets.push_back(
                Labels::Extend(sample.labels, {{"le", std::string(histogram.buckets->le(i))}}));
        }
        for (size_t i = 0; i < histogram.counts.size(); ++i)
          add(*buckets, sets.sets[i], static_cast<double>(histogram.counts[i]));
      }
    }
    if (sets_used < buckets->bucket_sets.size()) {
      std::erase_if(buckets->bucket_sets, [this](const auto& entry) { return entry.second.seen != build_; });
    }
  }
  Family* count = Enter(described.name + "_count", described);
  for (const MetricFamily* part : parts) {
    if (!count->valid) break;
    for (const Sample& sample : part->samples) {
      if (well_formed(*part, sample))
        add(*count, sample.labels, static_cast<double>(sample.histogram->count()));
    }
  }
  Family* sum = Enter(described.name + "_sum", described);
  for (const MetricFamily* part : parts) {
    if (!sum->valid) break;
    for (const Sample& sample : part->samples) {
      if (well_formed(*part, sample)) add(*sum, sample.labels, sample.histogram->sum);
    }
  }
}

RemoteWriteBatcher::Built RemoteWriteBatcher::Build(const Snapshot& snapshot, int64_t timestamp_ms,
                                                    std::string* record) {
  ++build_;
  seen_ = 0;
  previous_seen_ = 0;
  StartEpochIfDue();
  size_t used = 0;  // of timeseries_, whose size only grows (no bytes cleared per build)
  sample_suffix_.clear();
  if (timestamp_ms != 0) protowire::AppendVarintField(sample_suffix_, 2, static_cast<uint64_t>(timestamp_ms));
  const size_t sample_size = 9 + sample_suffix_.size();  // value (key + fixed64), timestamp
  const auto append = [&](const Series& series, double value, std::string_view metadata_field) {
    const std::string& refs = *series.refs;
    const size_t refs_field = 1 + remote_write_wire::VarintSize(refs.size()) + refs.size();
    const size_t size = refs_field + 2 + sample_size + metadata_field.size();
    const size_t need = 1 + remote_write_wire::VarintSize(size) + size;
    if (used + need > timeseries_.size()) timeseries_.resize(std::max(2 * timeseries_.size(), used + need));
    char* p = timeseries_.data() + used;
    used += need;
    *p++ = '\x2a';  // timeseries: field 5, length-delimited
    p = PutVarint(p, size);
    *p++ = '\x0a';  // labels_refs: field 1, packed
    p = PutVarint(p, refs.size());
    p = PutBytes(p, refs);
    *p++ = '\x12';  // samples: field 2, length-delimited
    *p++ = static_cast<char>(sample_size);
    *p++ = '\x09';  // value: field 1, fixed64
    p = PutFixed64(p, std::bit_cast<uint64_t>(value));
    p = PutBytes(p, sample_suffix_);
    PutBytes(p, metadata_field);
  };
  // One sample of `family`: its series resolved, written unless not sendable or met already.
  const auto add = [&](Family& family, const Labels& labels, double value) {
    Series* series = Resolve(family, labels, family.cursor++);
    if (series == nullptr || series->seen == build_) return;
    if (InPrevious(*series)) ++previous_seen_;
    if (series->seen == last_queued_) series->queued = series->seen;
    series->seen = build_;
    ++seen_;
    append(*series, value, family.metadata_field);
  };

  Built built;
  Family* family = nullptr;
  next_family_order_.clear();
  const std::span<const MetricFamily* const> families = snapshot.families();
  for (size_t i = 0; i < families.size(); ++i) {
    const MetricFamily* metric_family = families[i];
    if (metric_family->samples.empty()) continue;
    if (metric_family->type == MetricType::kHistogram) {
      // The adjacent parts of one histogram's name together: their three families are entered once.
      size_t end = i + 1;
      while (end < families.size() && families[end]->name == metric_family->name) ++end;
      AddHistograms(families.subspan(i, end - i), add);
      i = end - 1;
      family = nullptr;
      continue;
    }
    if (family == nullptr || family->name != metric_family->name)
      family = Enter(metric_family->name, *metric_family);
    if (!family->valid) continue;
    for (const Sample& sample : metric_family->samples) add(*family, sample.labels, sample.value);
  }
  built.samples = seen_;

  if (previous_seen_ < previous_) {  // some series of the last queued record are gone
    for (auto& [key, series] : series_) {
      if (series.seen == build_ || !InPrevious(series)) continue;
      append(series, StaleMarker(), {});  // stale markers carry no metadata
      ++built.samples;
      ++built.stale_markers;
    }
  }

  for (Family* seen : next_family_order_) EndFamily(*seen);
  if (next_family_order_.size() < families_.size()) {  // some families are gone
    std::erase_if(families_, [this](const auto& entry) { return entry.second->seen != build_; });
  }
  std::swap(family_order_, next_family_order_);

  record->clear();
  record->reserve(24 + symbols_->bytes().size() + used);
  AppendRemoteWriteRecordHeader(*record, symbols_->epoch(), symbols_->bytes().size());
  record->append(symbols_->bytes());
  record->append(timeseries_.data(), used);
  return built;
}

void RemoteWriteBatcher::Committed(bool queued) {
  // Forgotten: series not met in this build, unless (record not queued) the last queued record had them.
  const size_t kept_unseen = queued ? 0 : previous_ - previous_seen_;
  if (seen_ + kept_unseen < series_.size()) {
    for (auto it = series_.begin(); it != series_.end();) {
      const Series& series = it->second;
      if (series.seen == build_ || (!queued && InPrevious(series))) {
        ++it;
        continue;
      }
      it = series_.erase(it);
      ++forgotten_since_epoch_;
    }
  }
  if (queued) {
    // The same set: every series of the last queued record met, and none besides.
    if (seen_ != previous_seen_ || previous_seen_ != previous_) ++queued_series_changes_;
    last_queued_ = build_;
    previous_ = seen_;
  }
}

size_t RemoteWriteBatcher::Restore(
    const std::vector<std::vector<std::pair<std::string, std::string>>>& series) {
  // Families hold pointers into series_: both go. Their strings stay in the table until the next epoch.
  forgotten_since_epoch_ += series_.size();
  family_order_.clear();
  families_.clear();
  series_.clear();
  // The restored set is a build of its own, queued: the next Build() measures its stale markers by it.
  ++build_;
  std::string refs;
  for (const auto& labels : series) {
    if (!IsSeriesLabels(labels)) continue;
    refs.clear();
    for (const auto& [name, value] : labels) {
      if (value.empty()) continue;  // an earlier version kept empty values: the same series without them
      protowire::AppendVarint(refs, symbols_->Ref(name));
      protowire::AppendVarint(refs, symbols_->Ref(value));
    }
    auto [found, inserted] = series_.try_emplace(refs);
    found->second.refs = &found->first;
    found->second.seen = build_;
  }
  last_queued_ = build_;
  previous_ = series_.size();
  return series_.size();
}

std::vector<std::vector<std::pair<std::string, std::string>>> RemoteWriteBatcher::QueuedSeries() const {
  std::vector<std::vector<std::pair<std::string, std::string>>> out;
  out.reserve(previous_);
  for (const auto& [refs, series] : series_) {
    if (!InPrevious(series)) continue;
    std::vector<std::pair<std::string, std::string>>& labels = out.emplace_back();
    size_t pos = 0;
    uint64_t name = 0;
    uint64_t value = 0;
    while (protowire::ReadVarint(refs, &pos, &name) && protowire::ReadVarint(refs, &pos, &value))
      labels.emplace_back(symbols_->At(static_cast<uint32_t>(name)),
                          symbols_->At(static_cast<uint32_t>(value)));
  }
  return out;
}

}  // namespace gpuscope
