// Minimal protocol-buffers wire-format writer shared by the push sinks (Loki, OTLP, remote_write), and a
// reader for the one message the agent reads back (its own queued remote_write 1.0 requests). The writer
// appends fields by number to a std::string, so the sinks can emit the exact messages their receivers expect
// without a protobuf library or generated code. UTF-8 repair is src/core/utf8 (ToValidUtf8), because proto3
// `string` fields and JSON must carry valid UTF-8 (strict receivers such as the OpenTelemetry Collector
// reject anything else).
//
// Thread-safety: free functions on caller-owned buffers; safe to call concurrently on distinct buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuscope::protowire {

// Wire types of the protobuf encoding.
enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Appends `value` as a base-128 varint. Never fails.
void AppendVarint(std::string& out, uint64_t value);

// Appends the key (field number and wire type) of a field. Never fails.
void AppendTag(std::string& out, uint32_t field, WireType type);

// Appends a varint field (uint64, int64 as two's complement, enum, bool). Never fails.
void AppendVarintField(std::string& out, uint32_t field, uint64_t value);

// Appends `value` as 8 little-endian bytes (a packed repeated fixed64 or double field's element).
void AppendFixed64(std::string& out, uint64_t value);

// Appends a fixed64 field, little-endian. Never fails.
void AppendFixed64Field(std::string& out, uint32_t field, uint64_t value);

// Appends a length-delimited field (string, bytes or an already encoded sub-message). The caller is
// responsible for `bytes` being valid UTF-8 where the schema says `string`. Never fails.
void AppendBytesField(std::string& out, uint32_t field, std::string_view bytes);

// One field read by NextField: its number, wire type and value (varint/fixed in `scalar`, a
// length-delimited field's bytes in `bytes`, a view into the input).
struct Field {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t scalar = 0;
  std::string_view bytes;
};

// Reads the field at in[*pos] and advances *pos past it. False on malformed input (truncated varint or
// value, length past the end, field number 0, a wire type other than the four above); *pos is then
// unspecified. Never reads out of bounds.
bool NextField(std::string_view in, size_t* pos, Field* field);

// Reads one varint at in[*pos] (a packed repeated field's element). False when truncated or too long.
bool ReadVarint(std::string_view in, size_t* pos, uint64_t* value);

}  // namespace gpuscope::protowire
