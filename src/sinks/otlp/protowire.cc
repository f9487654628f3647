#include "src/sinks/otlp/protowire.h"

namespace gpuscope::protowire {

void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void AppendTag(std::string& out, uint32_t field, WireType type) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type));
}

void AppendVarintField(std::string& out, uint32_t field, uint64_t value) {
  AppendTag(out, field, WireType::kVarint);
  AppendVarint(out, value);
}

void AppendFixed64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void AppendFixed64Field(std::string& out, uint32_t field, uint64_t value) {
  AppendTag(out, field, WireType::kFixed64);
  AppendFixed64(out, value);
}

void AppendBytesField(std::string& out, uint32_t field, std::string_view bytes) {
  AppendTag(out, field, WireType::kLengthDelimited);
  AppendVarint(out, bytes.size());
  out.append(bytes);
}

bool ReadVarint(std::string_view in, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= in.size()) return false;
    const auto byte = static_cast<unsigned char>(in[(*pos)++]);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

bool NextField(std::string_view in, size_t* pos, Field* field) {
  uint64_t key = 0;
  if (!ReadVarint(in, pos, &key)) return false;
  const uint64_t number = key >> 3;
  if (number == 0 || number > 0x1fffffff) return false;
  field->number = static_cast<uint32_t>(number);
  field->scalar = 0;
  field->bytes = {};
  auto read_fixed = [&](size_t width) {
    if (in.size() - *pos < width) return false;
    for (size_t i = 0; i < width; ++i) {
      field->scalar |= static_cast<uint64_t>(static_cast<unsigned char>(in[*pos + i])) << (8 * i);
    }
    *pos += width;
    return true;
  };
  switch (key & 7) {
    case 0:
      field->type = WireType::kVarint;
      return ReadVarint(in, pos, &field->scalar);
    case 1:
      field->type = WireType::kFixed64;
      return read_fixed(8);
    case 5:
      field->type = WireType::kFixed32;
      return read_fixed(4);
    case 2: {
      field->type = WireType::kLengthDelimited;
      uint64_t length = 0;
      if (!ReadVarint(in, pos, &length) || length > in.size() - *pos) return false;
      field->bytes = in.substr(*pos, length);
      *pos += length;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace gpuscope::protowire
