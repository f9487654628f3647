#include "src/sinks/remote_write/remote_write_encode.h"

#include <snappy.h>

#include <bit>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "src/sinks/otlp/protowire.h"
#include "src/sinks/remote_write/remote_write_wire.h"

namespace gpuscope {
namespace {

using protowire::AppendBytesField;
using protowire::AppendFixed64Field;
using protowire::AppendVarintField;
using remote_write_wire::AppendHeader;
using remote_write_wire::FieldSize;
using remote_write_wire::LabelSize;
using remote_write_wire::TypeFromNumber;
using remote_write_wire::TypeNumber;
using remote_write_wire::VarintSize;

size_t SampleSize(int64_t timestamp_ms, int64_t start_ms) {
  size_t size = 9;  // value: key + fixed64
  if (timestamp_ms != 0) size += 1 + VarintSize(static_cast<uint64_t>(timestamp_ms));
  if (start_ms != 0) size += 1 + VarintSize(static_cast<uint64_t>(start_ms));
  return size;
}

void AppendSampleFields(std::string& out, double value, int64_t timestamp_ms, int64_t start_ms) {
  AppendFixed64Field(out, 1, std::bit_cast<uint64_t>(value));
  if (timestamp_ms != 0) AppendVarintField(out, 2, static_cast<uint64_t>(timestamp_ms));
  if (start_ms != 0) AppendVarintField(out, 3, static_cast<uint64_t>(start_ms));
}

std::string_view FamilyName(const RemoteWriteSeries& series) {
  for (const auto& [name, value] : series.labels) {
    if (name == "__name__") return value;
  }
  return {};
}

bool DecodeLabel(std::string_view bytes, std::pair<std::string, std::string>* label) {
  size_t pos = 0;
  protowire::Field f;
  while (pos < bytes.size()) {
    if (!protowire::NextField(bytes, &pos, &f)) return false;
    if (f.type != protowire::WireType::kLengthDelimited) continue;
    if (f.number == 1) label->first = f.bytes;
    if (f.number == 2) label->second = f.bytes;
  }
  return true;
}

bool DecodeTimeSeries(std::string_view bytes, RemoteWriteBatch* batch) {
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<double, int64_t>> samples;
  size_t pos = 0;
  protowire::Field f;
  while (pos < bytes.size()) {
    if (!protowire::NextField(bytes, &pos, &f)) return false;
    if (f.type != protowire::WireType::kLengthDelimited) continue;
    if (f.number == 1) {
      if (!DecodeLabel(f.bytes, &labels.emplace_back())) return false;
    } else if (f.number == 2) {
      double value = 0;
      int64_t timestamp = 0;
      size_t sample_pos = 0;
      protowire::Field s;
      while (sample_pos < f.bytes.size()) {
        if (!protowire::NextField(f.bytes, &sample_pos, &s)) return false;
        if (s.number == 1 && s.type == protowire::WireType::kFixed64) value = std::bit_cast<double>(s.scalar);
        if (s.number == 2 && s.type == protowire::WireType::kVarint)
          timestamp = static_cast<int64_t>(s.scalar);
      }
      samples.emplace_back(value, timestamp);
    }
  }
  for (const auto& [value, timestamp] : samples) {
    RemoteWriteSeries& series = batch->series.emplace_back();
    series.labels = labels;
    series.value = value;
    series.timestamp_ms = timestamp;
  }
  return true;
}

bool DecodeMetadata(std::string_view bytes, RemoteWriteMetadata* metadata) {
  size_t pos = 0;
  protowire::Field f;
  while (pos < bytes.size()) {
    if (!protowire::NextField(bytes, &pos, &f)) return false;
    if (f.number == 1 && f.type == protowire::WireType::kVarint) metadata->type = TypeFromNumber(f.scalar);
    if (f.type != protowire::WireType::kLengthDelimited) continue;
    if (f.number == 2) metadata->family = f.bytes;
    if (f.number == 4) metadata->help = f.bytes;
    if (f.number == 5) metadata->unit = f.bytes;
  }
  return true;
}

// The 2.0 symbols table: "" first, each string once.
class Symbols {
 public:
  Symbols() { Ref(""); }
  uint32_t Ref(std::string_view s) {
    auto [it, inserted] = refs_.try_emplace(s, static_cast<uint32_t>(strings_.size()));
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  const std::vector<std::string_view>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string_view, uint32_t> refs_;  // views into the batch, which outlives this
  std::vector<std::string_view> strings_;
};

}  // namespace

std::string EncodeWriteRequestV1(const RemoteWriteBatch& batch) {
  // Sizes first, so every message is written once, straight into the output (no nested buffers).
  std::vector<size_t> series_sizes;
  series_sizes.reserve(batch.series.size());
  size_t total = 0;
  for (const RemoteWriteSeries& series : batch.series) {
    size_t size = 0;
    for (const auto& [name, value] : series.labels) size += FieldSize(LabelSize(name, value));
    size += FieldSize(SampleSize(series.timestamp_ms, 0));
    series_sizes.push_back(size);
    total += FieldSize(size);
  }
  std::string out;
  out.reserve(total + batch.metadata.size() * 64);
  for (size_t i = 0; i < batch.series.size(); ++i) {
    const RemoteWriteSeries& series = batch.series[i];
    AppendHeader(out, 1, series_sizes[i]);
    for (const auto& [name, value] : series.labels) remote_write_wire::AppendLabelV1(out, name, value);
    AppendHeader(out, 2, SampleSize(series.timestamp_ms, 0));
    AppendSampleFields(out, series.value, series.timestamp_ms, 0);
  }
  std::string metadata;
  for (const RemoteWriteMetadata& m : batch.metadata) {
    remote_write_wire::AppendMetadataV1(out, metadata, TypeNumber(m.type), m.family, m.help, m.unit);
  }
  return out;
}

bool DecodeWriteRequestV1(std::string_view bytes, RemoteWriteBatch* batch) {
  RemoteWriteBatch decoded;
  size_t pos = 0;
  protowire::Field f;
  while (pos < bytes.size()) {
    if (!protowire::NextField(bytes, &pos, &f)) return false;
    if (f.type != protowire::WireType::kLengthDelimited) continue;
    if (f.number == 1 && !DecodeTimeSeries(f.bytes, &decoded)) return false;
    if (f.number == 3 && !DecodeMetadata(f.bytes, &decoded.metadata.emplace_back())) return false;
  }
  for (auto& s : decoded.series) batch->series.push_back(std::move(s));
  for (auto& m : decoded.metadata) batch->metadata.push_back(std::move(m));
  return true;
}

std::string EncodeRequestV2(const RemoteWriteBatch& batch) {
  Symbols symbols;
  // Metadata by family name; the last one given wins (a later record's help replaces an earlier one).
  std::unordered_map<std::string_view, const RemoteWriteMetadata*> metadata;
  for (const RemoteWriteMetadata& m : batch.metadata) metadata[m.family] = &m;
  std::string timeseries;
  timeseries.reserve(batch.series.size() * 48);
  std::string refs;
  std::string meta;
  for (const RemoteWriteSeries& series : batch.series) {
    refs.clear();
    for (const auto& [name, value] : series.labels) {
      protowire::AppendVarint(refs, symbols.Ref(name));
      protowire::AppendVarint(refs, symbols.Ref(value));
    }
    meta.clear();
    const auto found = metadata.find(FamilyName(series));
    if (found != metadata.end()) {
      const RemoteWriteMetadata& m = *found->second;
      if (const uint64_t type = TypeNumber(m.type); type != 0) AppendVarintField(meta, 1, type);
      if (const uint32_t help = symbols.Ref(m.help); help != 0) AppendVarintField(meta, 3, help);
      if (const uint32_t unit = symbols.Ref(m.unit); unit != 0) AppendVarintField(meta, 4, unit);
    }
    const size_t sample_size = SampleSize(series.timestamp_ms, series.start_timestamp_ms);
    size_t size = FieldSize(refs.size()) + FieldSize(sample_size);
    if (found != metadata.end()) size += FieldSize(meta.size());
    AppendHeader(timeseries, 5, size);
    AppendBytesField(timeseries, 1, refs);
    AppendHeader(timeseries, 2, sample_size);
    AppendSampleFields(timeseries, series.value, series.timestamp_ms, series.start_timestamp_ms);
    if (found != metadata.end()) AppendBytesField(timeseries, 5, meta);
  }
  std::string out;
  size_t symbols_size = 0;
  for (std::string_view s : symbols.strings()) symbols_size += FieldSize(s.size());
  out.reserve(symbols_size + timeseries.size());
  for (std::string_view s : symbols.strings()) AppendBytesField(out, 4, s);
  out.append(timeseries);
  return out;
}

std::string SnappyCompress(std::string_view raw) {
  std::string compressed;
  snappy::Compress(raw.data(), raw.size(), &compressed);
  return compressed;
}

bool IsStaleMarker(double value) { return std::bit_cast<uint64_t>(value) == kStaleNaNBits; }

double StaleMarker() { return std::bit_cast<double>(kStaleNaNBits); }

}  // namespace gpuscope
