// Wire-format pieces shared by the remote_write encoders, the queue record reader and the batcher (this
// folder only): sizes of fields before they are written, and the metadata both protocols carry.
//
// Thread-safety: pure functions on caller-owned buffers.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "src/core/metric.h"
#include "src/sinks/otlp/protowire.h"

namespace gpuscope::remote_write_wire {

// Both protocols number the types alike (0 unknown/unspecified, 1 counter, 2 gauge, 3 histogram, 6 info).
inline uint64_t TypeNumber(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return 1;
    case MetricType::kGauge:
      return 2;
    case MetricType::kInfo:
      return 6;
    case MetricType::kHistogram:
      return 3;
    case MetricType::kUnknown:
      return 0;
  }
  return 0;
}

inline MetricType TypeFromNumber(uint64_t number) {
  switch (number) {
    case 1:
      return MetricType::kCounter;
    case 2:
      return MetricType::kGauge;
    case 3:
      return MetricType::kHistogram;
    case 6:
      return MetricType::kInfo;
    default:
      return MetricType::kUnknown;
  }
}

inline size_t VarintSize(uint64_t value) {
  size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

// A length-delimited field of `length` bytes with a one-byte key (field numbers below 16).
inline size_t FieldSize(size_t length) { return 1 + VarintSize(length) + length; }

// A 1.0 Label{name=1, value=2} message's size.
inline size_t LabelSize(std::string_view name, std::string_view value) {
  return FieldSize(name.size()) + FieldSize(value.size());
}

// Writers into a buffer the caller sized beforehand (no capacity checks): each returns the position
// after what it wrote.
inline char* PutVarint(char* p, uint64_t value) {
  while (value >= 0x80) {
    *p++ = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  *p++ = static_cast<char>(value);
  return p;
}

inline char* PutBytes(char* p, std::string_view bytes) {
  if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
  return p + bytes.size();
}

inline char* PutFixed64(char* p, uint64_t value) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &value, 8);
    return p + 8;
  }
  for (int i = 0; i < 8; ++i) *p++ = static_cast<char>((value >> (8 * i)) & 0xff);
  return p;
}

// The key and length of a length-delimited field whose bytes the caller appends next.
inline void AppendHeader(std::string& out, uint32_t field, size_t length) {
  protowire::AppendTag(out, field, protowire::WireType::kLengthDelimited);
  protowire::AppendVarint(out, length);
}

// A 1.0 TimeSeries label entry (field 1 holding Label{name, value}).
inline void AppendLabelV1(std::string& out, std::string_view name, std::string_view value) {
  AppendHeader(out, 1, LabelSize(name, value));
  protowire::AppendBytesField(out, 1, name);
  protowire::AppendBytesField(out, 2, value);
}

// A 1.0 WriteRequest metadata entry (field 3): MetricMetadata{type=1, metric_family_name=2, help=4,
// unit=5}, defaults left out. `scratch` is reused between calls.
inline void AppendMetadataV1(std::string& out, std::string& scratch, uint64_t type, std::string_view family,
                             std::string_view help, std::string_view unit) {
  scratch.clear();
  if (type != 0) protowire::AppendVarintField(scratch, 1, type);
  protowire::AppendBytesField(scratch, 2, family);
  if (!help.empty()) protowire::AppendBytesField(scratch, 4, help);
  if (!unit.empty()) protowire::AppendBytesField(scratch, 5, unit);
  protowire::AppendBytesField(out, 3, scratch);
}

}  // namespace gpuscope::remote_write_wire
