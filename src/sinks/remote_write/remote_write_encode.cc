#include "src/sinks/remote_write/remote_write_encode.h"

#include <snappy.h>

#include <bit>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "src/sinks/otlp/protowire.h"

namespace gpuscope {
namespace {

using protowire::AppendBytesField;
using protowire::AppendFixed64Field;
using protowire::AppendVarintField;

// Both protocols number the types alike (0 unknown/unspecified, 1 counter, 2 gauge, 6 info).
uint64_t TypeNumber(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return 1;
    case MetricType::kGauge:
      return 2;
    case MetricType::kInfo:
      return 6;
    case MetricType::kUnknown:
      return 0;
  }
  return 0;
}

MetricType TypeFromNumber(uint64_t number) {
  switch (number) {
    case 1:
      return MetricType::kCounter;
    case 2:
      return MetricType::kGauge;
    case 6:
      return MetricType::kInfo;
    default:
      return MetricType::kUnknown;
  }
}

void AppendSample(std::string& out, uint32_t field, double value, int64_t timestamp_ms, int64_t start_ms) {
  std::string sample;
  AppendFixed64Field(sample, 1, std::bit_cast<uint64_t>(value));
  if (timestamp_ms != 0) AppendVarintField(sample, 2, static_cast<uint64_t>(timestamp_ms));
  if (start_ms != 0) AppendVarintField(sample, 3, static_cast<uint64_t>(start_ms));
  AppendBytesField(out, field, sample);
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
  std::string out;
  std::string series_bytes;
  std::string label;
  for (const RemoteWriteSeries& series : batch.series) {
    series_bytes.clear();
    for (const auto& [name, value] : series.labels) {
      label.clear();
      AppendBytesField(label, 1, name);
      AppendBytesField(label, 2, value);
      AppendBytesField(series_bytes, 1, label);
    }
    AppendSample(series_bytes, 2, series.value, series.timestamp_ms, 0);
    AppendBytesField(out, 1, series_bytes);
  }
  std::string metadata;
  for (const RemoteWriteMetadata& m : batch.metadata) {
    metadata.clear();
    if (const uint64_t type = TypeNumber(m.type); type != 0) AppendVarintField(metadata, 1, type);
    AppendBytesField(metadata, 2, m.family);
    if (!m.help.empty()) AppendBytesField(metadata, 4, m.help);
    if (!m.unit.empty()) AppendBytesField(metadata, 5, m.unit);
    AppendBytesField(out, 3, metadata);
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
  std::string series_bytes;
  std::string refs;
  std::string meta;
  for (const RemoteWriteSeries& series : batch.series) {
    series_bytes.clear();
    refs.clear();
    for (const auto& [name, value] : series.labels) {
      protowire::AppendVarint(refs, symbols.Ref(name));
      protowire::AppendVarint(refs, symbols.Ref(value));
    }
    AppendBytesField(series_bytes, 1, refs);
    AppendSample(series_bytes, 2, series.value, series.timestamp_ms, series.start_timestamp_ms);
    const auto found = metadata.find(FamilyName(series));
    if (found != metadata.end()) {
      const RemoteWriteMetadata& m = *found->second;
      meta.clear();
      if (const uint64_t type = TypeNumber(m.type); type != 0) AppendVarintField(meta, 1, type);
      if (const uint32_t help = symbols.Ref(m.help); help != 0) AppendVarintField(meta, 3, help);
      if (const uint32_t unit = symbols.Ref(m.unit); unit != 0) AppendVarintField(meta, 4, unit);
      AppendBytesField(series_bytes, 5, meta);
    }
    AppendBytesField(timeseries, 5, series_bytes);
  }
  std::string out;
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
