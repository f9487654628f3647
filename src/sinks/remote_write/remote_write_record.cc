#include "src/sinks/remote_write/remote_write_record.h"

#include <algorithm>
#include <cstring>

#include "src/sinks/otlp/protowire.h"
#include "src/sinks/remote_write/remote_write_wire.h"

namespace gpuscope {
namespace {

using protowire::Field;
using protowire::NextField;
using protowire::WireType;
using remote_write_wire::FieldSize;
using remote_write_wire::LabelSize;
using remote_write_wire::PutBytes;
using remote_write_wire::PutVarint;

constexpr uint64_t kRecordVersion = 1;
constexpr uint32_t kNoRef = RemoteWriteV1Writer::kNoRef;

// The symbols part of a 2.0 record as views; *name_ref is the index of "__name__" (kNoRef if absent).
bool ReadSymbols(std::string_view bytes, std::vector<std::string_view>* symbols, uint32_t* name_ref) {
  symbols->clear();
  *name_ref = kNoRef;
  size_t pos = 0;
  Field f;
  while (pos < bytes.size()) {
    if (!NextField(bytes, &pos, &f) || f.number != 4 || f.type != WireType::kLengthDelimited) return false;
    if (f.bytes == "__name__") *name_ref = static_cast<uint32_t>(symbols->size());
    symbols->push_back(f.bytes);
  }
  return true;
}

struct FamilyMetadata {
  uint32_t name_ref = 0;
  uint64_t type = 0;
  uint32_t help_ref = 0;
  uint32_t unit_ref = 0;
};

// A series' labels_refs (the packed refs) as 1.0 label entries; family_ref is its __name__ value's ref.
bool WriteLabels(std::string_view packed, const std::vector<std::string_view>& symbols, uint32_t name_ref,
                 RemoteWriteV1Writer::SeriesLabels* labels) {
  std::vector<uint32_t> refs;
  size_t pos = 0;
  uint64_t ref = 0;
  while (pos < packed.size()) {
    if (!protowire::ReadVarint(packed, &pos, &ref) || ref >= symbols.size()) return false;
    refs.push_back(static_cast<uint32_t>(ref));
  }
  if (refs.size() % 2 != 0) return false;
  size_t size = 0;
  for (size_t i = 0; i < refs.size(); i += 2) {
    size += FieldSize(LabelSize(symbols[refs[i]], symbols[refs[i + 1]]));
    if (refs[i] == name_ref) labels->family_ref = refs[i + 1];
  }
  labels->bytes.resize(size);
  char* p = labels->bytes.data();
  for (size_t i = 0; i < refs.size(); i += 2) {
    const std::string_view name = symbols[refs[i]];
    const std::string_view value = symbols[refs[i + 1]];
    *p++ = '\x0a';  // labels: field 1
    p = PutVarint(p, LabelSize(name, value));
    *p++ = '\x0a';  // name: field 1
    p = PutVarint(p, name.size());
    p = PutBytes(p, name);
    *p++ = '\x12';  // value: field 2
    p = PutVarint(p, value.size());
    p = PutBytes(p, value);
  }
  return true;
}

}  // namespace

// Appends one 2.0 record as 1.0 WriteRequest bytes. False on a malformed record (*out unchanged then).
bool RemoteWriteV1Writer::AppendV2Record(const RemoteWriteRecordView& view, std::string& out) {
  if (view.epoch != epoch_) {  // refs of another table
    labels_.clear();
    epoch_ = view.epoch;
  }
  std::vector<std::string_view> symbols;
  uint32_t name_ref = kNoRef;
  if (!ReadSymbols(view.symbols, &symbols, &name_ref)) return false;
  const size_t start = out.size();
  // A 1.0 series is about six times its 2.0 form (strings in place of one-byte refs): room made once.
  out.reserve(start + 6 * view.timeseries.size());
  const auto fail = [&] {
    out.resize(start);
    return false;
  };
  std::vector<std::string_view> samples;
  std::vector<FamilyMetadata> families;  // in order of first appearance
  std::vector<bool> family_seen(symbols.size(), false);
  size_t pos = 0;
  Field series;
  while (pos < view.timeseries.size()) {
    if (!NextField(view.timeseries, &pos, &series) || series.number != 5 ||
        series.type != WireType::kLengthDelimited)
      return fail();
    ++series_;
    samples.clear();
    std::string_view refs;
    std::string_view metadata;
    size_t series_pos = 0;
    Field f;
    while (series_pos < series.bytes.size()) {
      if (!NextField(series.bytes, &series_pos, &f)) return fail();
      if (f.type != WireType::kLengthDelimited) continue;
      if (f.number == 1) refs = f.bytes;
      if (f.number == 2) samples.push_back(f.bytes);  // Sample{value=1, timestamp=2}: the same fields in 1.0
      if (f.number == 5) metadata = f.bytes;
    }
    auto found = labels_.find(refs);
    if (found == labels_.end()) {
      SeriesLabels labels;
      if (!WriteLabels(refs, symbols, name_ref, &labels)) return fail();
      found = labels_.emplace(std::string(refs), std::move(labels)).first;
    }
    const SeriesLabels& labels = found->second;
    size_t size = labels.bytes.size();
    for (std::string_view sample : samples) size += FieldSize(sample.size());
    const size_t at = out.size();
    out.resize(at + FieldSize(size));
    char* p = out.data() + at;
    *p++ = '\x0a';  // timeseries: field 1, length-delimited
    p = PutVarint(p, size);
    p = PutBytes(p, labels.bytes);
    for (std::string_view sample : samples) {
      *p++ = '\x12';  // samples: field 2
      p = PutVarint(p, sample.size());
      p = PutBytes(p, sample);
    }
    const uint32_t family_ref = labels.family_ref;
    if (metadata.empty() || family_ref == kNoRef || family_seen[family_ref]) continue;
    family_seen[family_ref] = true;
    FamilyMetadata& m = families.emplace_back();
    m.name_ref = family_ref;
    size_t meta_pos = 0;
    while (meta_pos < metadata.size()) {
      if (!NextField(metadata, &meta_pos, &f)) return fail();
      if (f.type != WireType::kVarint) continue;
      if (f.number == 1) m.type = f.scalar;
      if (f.number == 3 && f.scalar < symbols.size()) m.help_ref = static_cast<uint32_t>(f.scalar);
      if (f.number == 4 && f.scalar < symbols.size()) m.unit_ref = static_cast<uint32_t>(f.scalar);
    }
  }
  std::string scratch;
  std::vector<std::string_view> histograms;  // family names of the histograms written
  for (const FamilyMetadata& m : families) {
    std::string_view name = symbols[m.name_ref];
    if (m.type == remote_write_wire::TypeNumber(MetricType::kHistogram)) {
      // 1.0 names a histogram's family without the suffix of its _bucket, _count and _sum series.
      for (std::string_view suffix : {"_bucket", "_count", "_sum"}) {
        if (name.size() > suffix.size() && name.ends_with(suffix)) {
          name.remove_suffix(suffix.size());
          break;
        }
      }
      if (std::find(histograms.begin(), histograms.end(), name) != histograms.end()) continue;
      histograms.push_back(name);
    }
    remote_write_wire::AppendMetadataV1(out, scratch, m.type, name, symbols[m.help_ref], symbols[m.unit_ref]);
  }
  return true;
}

std::string RemoteWriteV1Writer::Request(const std::vector<std::string>& records, size_t* unreadable) {
  std::string out;
  series_ = 0;
  for (const std::string& record : records) {
    RemoteWriteRecordView view;
    if (!ParseRemoteWriteRecord(record, &view)) {
      ++*unreadable;
    } else if (!view.is_v2) {
      out.append(view.v1);
    } else if (!AppendV2Record(view, out)) {
      ++*unreadable;
    }
  }
  // Series that ended stay until the cache outgrows the live ones.
  if (labels_.size() > 2 * series_ + 1024) labels_.clear();
  return out;
}

void AppendRemoteWriteRecordHeader(std::string& out, uint64_t epoch, size_t symbols_bytes) {
  out.push_back('\0');
  protowire::AppendVarint(out, kRecordVersion);
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((epoch >> (8 * i)) & 0xff);
  out.append(bytes, sizeof(bytes));
  protowire::AppendVarint(out, symbols_bytes);
}

bool ParseRemoteWriteRecord(std::string_view record, RemoteWriteRecordView* view) {
  *view = {};
  if (record.empty() || record[0] != '\0') {
    view->v1 = record;
    return true;
  }
  size_t pos = 1;
  uint64_t version = 0;
  if (!protowire::ReadVarint(record, &pos, &version) || version != kRecordVersion) return false;
  if (record.size() - pos < 8) return false;
  for (int i = 0; i < 8; ++i)
    view->epoch |= static_cast<uint64_t>(static_cast<unsigned char>(record[pos + i])) << (8 * i);
  pos += 8;
  uint64_t symbols_bytes = 0;
  if (!protowire::ReadVarint(record, &pos, &symbols_bytes) || symbols_bytes > record.size() - pos)
    return false;
  view->is_v2 = true;
  view->symbols = record.substr(pos, symbols_bytes);
  view->timeseries = record.substr(pos + symbols_bytes);
  return true;
}

std::string_view RemoteWriteRecordsToV2(const std::vector<std::string>& records, std::string* scratch,
                                        size_t* unreadable) {
  scratch->clear();
  // The fast path: every record 2.0 and of one epoch.
  std::vector<RemoteWriteRecordView> views(records.size());
  bool one_epoch = true;
  for (size_t i = 0; i < records.size() && one_epoch; ++i) {
    one_epoch =
        ParseRemoteWriteRecord(records[i], &views[i]) && views[i].is_v2 && views[i].epoch == views[0].epoch;
  }
  if (one_epoch && records.size() == 1) {
    // The symbols part and the timeseries part are adjacent in the record: the request as it stands.
    return std::string_view(views[0].symbols.data(), views[0].symbols.size() + views[0].timeseries.size());
  }
  if (one_epoch) {
    std::string_view symbols;
    size_t size = 0;
    for (const RemoteWriteRecordView& view : views) {
      if (view.symbols.size() > symbols.size()) symbols = view.symbols;  // the table only grows
      size += view.timeseries.size();
    }
    scratch->reserve(symbols.size() + size);
    scratch->append(symbols);
    for (const RemoteWriteRecordView& view : views) scratch->append(view.timeseries);
    return *scratch;
  }
  RemoteWriteBatch batch;
  for (const std::string& record : records) {
    if (!DecodeRemoteWriteRecord(record, &batch)) ++*unreadable;
  }
  *scratch = EncodeRequestV2(batch);
  return *scratch;
}

bool DecodeRemoteWriteRecord(std::string_view record, RemoteWriteBatch* batch) {
  RemoteWriteRecordView view;
  if (!ParseRemoteWriteRecord(record, &view)) return false;
  if (!view.is_v2) return DecodeWriteRequestV1(view.v1, batch);
  std::string v1;
  return RemoteWriteV1Writer().AppendV2Record(view, v1) && DecodeWriteRequestV1(v1, batch);
}

void SummarizeRemoteWriteRecord(std::string_view record, uint64_t* samples, int64_t* timestamp_ms) {
  RemoteWriteRecordView view;
  if (!ParseRemoteWriteRecord(record, &view)) return;
  // 1.0: TimeSeries are field 1 of the request; 2.0: field 5. Samples are field 2 of either, and a
  // sample's timestamp is its field 2 in both. Every sample of a record has the same timestamp, so the
  // first series tells it.
  const std::string_view series_bytes = view.is_v2 ? view.timeseries : view.v1;
  const uint32_t series_field = view.is_v2 ? 5 : 1;
  size_t pos = 0;
  Field field;
  bool first = true;
  while (pos < series_bytes.size() && NextField(series_bytes, &pos, &field)) {
    if (field.number != series_field || field.type != WireType::kLengthDelimited) continue;
    ++*samples;
    if (!first) continue;
    first = false;
    size_t series_pos = 0;
    Field series_field_value;
    while (series_pos < field.bytes.size() && NextField(field.bytes, &series_pos, &series_field_value)) {
      if (series_field_value.number != 2 || series_field_value.type != WireType::kLengthDelimited) continue;
      size_t sample_pos = 0;
      Field sample_field;
      while (sample_pos < series_field_value.bytes.size() &&
             NextField(series_field_value.bytes, &sample_pos, &sample_field)) {
        if (sample_field.number == 2 && sample_field.type == WireType::kVarint)
          *timestamp_ms = std::max(*timestamp_ms, static_cast<int64_t>(sample_field.scalar));
      }
    }
  }
}

}  // namespace gpuscope
