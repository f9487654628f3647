// Test-side protobuf wire-format reader: splits an encoded message into its fields by number, so tests
// can check the bytes the sinks produce the way a real receiver would decode them. Rejects malformed
// input (truncated varints, lengths past the end, unknown wire types, field number 0) instead of
// reading out of bounds. Used only by tests (the push receiver decodes with it) and the
// wire_proto_reader fuzz target.
//
// Thread-safety: pure functions; safe to call concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace gpuscope::testing {

struct ProtoField {
  uint32_t number = 0;
  uint8_t wire_type = 0;   // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  uint64_t scalar = 0;     // varint, fixed64 or fixed32 value
  std::string_view bytes;  // length-delimited payload (points into the input)
};

// Parses every field of `message`; returns nullopt when the input is not well-formed.
std::optional<std::vector<ProtoField>> ParseProtoFields(std::string_view message);

// Returns the fields numbered `number`, in order.
std::vector<ProtoField> FieldsNumbered(const std::vector<ProtoField>& fields, uint32_t number);

}  // namespace gpuscope::testing
