#include "tests/tools/push_receiver/proto_reader.h"

namespace gpuscope::testing {
namespace {

bool ReadVarint(std::string_view in, size_t& pos, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= in.size()) return false;
    const auto b = static_cast<unsigned char>(in[pos++]);
    value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;  // more than 10 bytes
}

bool ReadFixed(std::string_view in, size_t& pos, int bytes, uint64_t& value) {
  if (in.size() - pos < static_cast<size_t>(bytes)) return false;
  value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  }
  pos += bytes;
  return true;
}

}  // namespace

std::optional<std::vector<ProtoField>> ParseProtoFields(std::string_view message) {
  std::vector<ProtoField> fields;
  size_t pos = 0;
  while (pos < message.size()) {
    uint64_t key = 0;
    if (!ReadVarint(message, pos, key)) return std::nullopt;
    ProtoField field;
    const uint64_t number = key >> 3;
    if (number == 0 || number > 0x1fffffff) return std::nullopt;
    field.number = static_cast<uint32_t>(number);
    field.wire_type = static_cast<uint8_t>(key & 7);
    switch (field.wire_type) {
      case 0:
        if (!ReadVarint(message, pos, field.scalar)) return std::nullopt;
        break;
      case 1:
        if (!ReadFixed(message, pos, 8, field.scalar)) return std::nullopt;
        break;
      case 5:
        if (!ReadFixed(message, pos, 4, field.scalar)) return std::nullopt;
        break;
      case 2: {
        uint64_t length = 0;
        if (!ReadVarint(message, pos, length)) return std::nullopt;
        if (length > message.size() - pos) return std::nullopt;
        field.bytes = message.substr(pos, length);
        pos += length;
        break;
      }
      default:
        return std::nullopt;
    }
    fields.push_back(field);
  }
  return fields;
}

std::vector<ProtoField> FieldsNumbered(const std::vector<ProtoField>& fields, uint32_t number) {
  std::vector<ProtoField> out;
  for (const auto& field : fields) {
    if (field.number == number) out.push_back(field);
  }
  return out;
}

}  // namespace gpuscope::testing
