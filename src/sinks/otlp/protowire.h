// Minimal protocol-buffers wire-format writer shared by the push sinks (Loki, OTLP). It appends fields
// by number to a std::string, so the sinks can emit the exact messages their receivers expect without a
// protobuf library or generated code. UTF-8 repair is src/core/utf8 (ToValidUtf8), because proto3 `string`
// fields and JSON must carry valid UTF-8 (strict receivers such as the OpenTelemetry Collector reject
// anything else).
//
// Thread-safety: free functions on caller-owned buffers; safe to call concurrently on distinct buffers.
#pragma once

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

// Appends a fixed64 field, little-endian. Never fails.
void AppendFixed64Field(std::string& out, uint32_t field, uint64_t value);

// Appends a length-delimited field (string, bytes or an already encoded sub-message). The caller is
// responsible for `bytes` being valid UTF-8 where the schema says `string`. Never fails.
void AppendBytesField(std::string& out, uint32_t field, std::string_view bytes);

}  // namespace gpuscope::protowire
