// Test-side reader of an uncompressed remote_write 2.0 Request (io.prometheus.write.v2.Request, field
// numbers from prompb/io/prometheus/write/v2/types.proto of Prometheus v0.316.0), on the test protobuf
// reader rather than the agent's own: each series with its refs resolved into strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/tools/push_receiver/proto_reader.h"

namespace gpuscope::testing {

struct V2Series {
  std::vector<std::pair<std::string, std::string>> labels;
  uint64_t value_bits = 0;
  int64_t timestamp_ms = 0;
  uint64_t type = 0;  // metadata; 0 when none
  std::string help;
  std::string unit;
};

// nullopt when the request is malformed or a ref points past the symbols table.
inline std::optional<std::vector<V2Series>> ReadV2Request(std::string_view raw) {
  const auto fields = ParseProtoFields(raw);
  if (!fields) return std::nullopt;
  std::vector<std::string_view> symbols;
  for (const ProtoField& s : FieldsNumbered(*fields, 4)) symbols.push_back(s.bytes);
  const auto symbol = [&](uint64_t ref, std::string* out) {
    if (ref >= symbols.size()) return false;
    *out = symbols[ref];
    return true;
  };
  std::vector<V2Series> out;
  for (const ProtoField& ts : FieldsNumbered(*fields, 5)) {
    const auto series_fields = ParseProtoFields(ts.bytes);
    if (!series_fields) return std::nullopt;
    V2Series& series = out.emplace_back();
    std::vector<uint64_t> refs;
    for (const ProtoField& packed : FieldsNumbered(*series_fields, 1)) {
      uint64_t value = 0;
      int shift = 0;
      for (char c : packed.bytes) {
        value |= static_cast<uint64_t>(static_cast<unsigned char>(c) & 0x7f) << shift;
        shift += 7;
        if ((static_cast<unsigned char>(c) & 0x80) == 0) {
          refs.push_back(value);
          value = 0;
          shift = 0;
        }
      }
    }
    if (refs.size() % 2 != 0) return std::nullopt;
    for (size_t i = 0; i < refs.size(); i += 2) {
      auto& label = series.labels.emplace_back();
      if (!symbol(refs[i], &label.first) || !symbol(refs[i + 1], &label.second)) return std::nullopt;
    }
    const auto samples = FieldsNumbered(*series_fields, 2);
    if (samples.size() != 1) return std::nullopt;
    const auto sample = ParseProtoFields(samples[0].bytes);
    if (!sample) return std::nullopt;
    for (const ProtoField& f : *sample) {
      if (f.number == 1) series.value_bits = f.scalar;
      if (f.number == 2) series.timestamp_ms = static_cast<int64_t>(f.scalar);
    }
    for (const ProtoField& m : FieldsNumbered(*series_fields, 5)) {
      const auto metadata = ParseProtoFields(m.bytes);
      if (!metadata) return std::nullopt;
      for (const ProtoField& f : *metadata) {
        if (f.number == 1) series.type = f.scalar;
        if (f.number == 3 && !symbol(f.scalar, &series.help)) return std::nullopt;
        if (f.number == 4 && !symbol(f.scalar, &series.unit)) return std::nullopt;
      }
    }
  }
  return out;
}

}  // namespace gpuscope::testing
