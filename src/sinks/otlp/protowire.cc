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

void AppendFixed64Field(std::string& out, uint32_t field, uint64_t value) {
  AppendTag(out, field, WireType::kFixed64);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void AppendBytesField(std::string& out, uint32_t field, std::string_view bytes) {
  AppendTag(out, field, WireType::kLengthDelimited);
  AppendVarint(out, bytes.size());
  out.append(bytes);
}

}  // namespace gpuscope::protowire
