// RemoteWriteBatcher: turns a snapshot into the remote_write sink's queue record for one interval (a 2.0
// record, src/sinks/remote_write/remote_write_record.h), with a stale marker for every series of the
// previous queued record that is gone (a job ended, a GPU was lost).
//
// What does not change between intervals is worked out once per series and kept: its labels sorted with
// __name__ and the external labels added (those it lacks), their validity, and its label refs into a
// symbols table the batcher keeps across records; likewise each family's metadata refs. A series is found
// again by its Labels' identity (shared, immutable sets keep it from cycle to cycle) and its position in
// its family, so an interval in the steady state copies a few cached bytes per sample and looks nothing
// up by content. A series whose label set is rebuilt every cycle is found by content (slower, same
// result). A series is forgotten the interval after it was last seen (after its stale marker).
//
// The symbols table only grows within an epoch (a random id written in each record): once more series
// have been forgotten than are alive (label values of ended jobs pile up in the table), the next record
// starts a new epoch with a fresh table.
//
// Across restarts: Restore() makes a set of series (the last queued record of an earlier run, as the sink
// keeps it in SeriesMemory) the last queued record, so a series of it that the next snapshot lacks gets
// its stale marker there; QueuedSeries() reads the set back, and queued_series_changes() tells when it
// changed, so that it is written only then (a steady node: once).
//
// A histogram family is sent as Prometheus' classic histogram: the series `<name>_bucket` (one per bucket,
// `le` added last, cumulative counts, +Inf last), `<name>_count` and `<name>_sum`, each three a family of
// its own here (metadata type HISTOGRAM, the histogram's help and unit), so they are cached, staled and
// forgotten like any other series. A bucket's label set is its sample's set extended by `le`, made once per
// sample label set and bucket layout and kept while the sample is (so the steady state finds it by
// identity). Exemplars are not sent: a trace id per step would be a new symbol in every record's table.
//
// Rules kept from the sink's first version: families with an invalid metric name or no samples are left
// out, series with an invalid or duplicate label name too; a series that occurs twice is sent once (the
// first, as the exposition does). A label with an empty value is left off the series (in Prometheus an
// empty value is the label's absence; Thanos Receive refuses a whole request that carries one, 409), so an
// external label fills it; a restored set is read the same way.
//
// Thread-safety: none; one owner thread (the sink's producer, under its lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/core/metric.h"
#include "src/core/snapshot.h"

namespace gpuscope {

class RemoteWriteBatcher {
 public:
  // `external_labels` are added to every series that lacks a label of that name.
  explicit RemoteWriteBatcher(std::vector<std::pair<std::string, std::string>> external_labels);
  ~RemoteWriteBatcher();
  RemoteWriteBatcher(const RemoteWriteBatcher&) = delete;
  RemoteWriteBatcher& operator=(const RemoteWriteBatcher&) = delete;

  struct Built {
    uint64_t samples = 0;        // stale markers included
    uint64_t stale_markers = 0;  // series of the previous queued record that are gone
  };
  // Replaces *record with the record of `snapshot`, every sample stamped `timestamp_ms`. Then call
  // Committed() with whether the record was queued.
  Built Build(const Snapshot& snapshot, int64_t timestamp_ms, std::string* record);
  // queued: the record's series are what the next record's stale markers are measured against. Not
  // queued (a queue error): the previous queued record stays that measure.
  void Committed(bool queued);

  // Makes `series` (each its sorted label pairs, __name__ included, as QueuedSeries() gives them) the
  // series of the last queued record: the next record has a stale marker for each that its snapshot
  // lacks, and the others carry on as if no restart had been. Everything cached before is dropped. A
  // series whose labels are not sorted by name, repeat a name, lack __name__ or have an invalid name is
  // left out. Returns the number of series kept.
  size_t Restore(const std::vector<std::vector<std::pair<std::string, std::string>>>& series);
  // The series of the last queued record (as restored, or as the last Committed(true) left them), each
  // its sorted label pairs with __name__, in no particular order. O(series): call it when
  // queued_series_changes() moved.
  std::vector<std::vector<std::pair<std::string, std::string>>> QueuedSeries() const;
  // How many times Committed(true) queued a record whose set of series differs from the last queued
  // record's (Restore() is not counted).
  uint64_t queued_series_changes() const { return queued_series_changes_; }

  size_t cached_series() const;
  size_t symbols() const;

 private:
  struct Series;
  struct Family;
  class SymbolTable;
  Family* Enter(std::string_view name, const MetricFamily& described);
  // The series of a histogram's adjacent parts, each through add(family, labels, value) (Build's).
  template <typename AddFn>
  void AddHistograms(std::span<const MetricFamily* const> parts, const AddFn& add);
  Series* Resolve(Family& family, const Labels& labels, size_t index);
  Series* Miss(Family& family, const Labels& labels);
  void Refresh(Family& family);
  void EndFamily(Family& family);
  bool InPrevious(const Series& series) const;
  void StartEpochIfDue();

  std::vector<std::pair<std::string, std::string>> external_labels_;
  std::unique_ptr<SymbolTable> symbols_;
  std::unordered_map<std::string, Series> series_;  // by content: the labels' refs (see Series)
  std::unordered_map<std::string, std::unique_ptr<Family>> families_;  // by name
  std::vector<Family*> family_order_;       // the previous build's families, in order: the first guess
  std::vector<Family*> next_family_order_;  // this build's
  uint64_t build_ = 0;                      // the number of the current Build()
  uint64_t last_queued_ = 0;                // the number of the last Build() whose record was queued
  size_t seen_ = 0;                         // series met in the current Build()
  size_t previous_seen_ = 0;                // of them, those in the last queued record
  size_t previous_ = 0;                     // series in the last queued record
  size_t forgotten_since_epoch_ = 0;
  uint64_t queued_series_changes_ = 0;
  std::string timeseries_;     // the record's timeseries part is built at its start; reused
  std::string sample_suffix_;  // the timestamp field of the current build
};

}  // namespace gpuscope
