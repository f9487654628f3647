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

namespace {

// Length of the valid UTF-8 sequence starting at in[i], or 0 when it is invalid.
size_t ValidSequenceLength(std::string_view in, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(in[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len = 0;
  uint32_t min = 0;
  uint32_t cp = 0;
  if ((b0 & 0xe0) == 0xc0) {
    len = 2, min = 0x80, cp = b0 & 0x1f;
  } else if ((b0 & 0xf0) == 0xe0) {
    len = 3, min = 0x800, cp = b0 & 0x0f;
  } else if ((b0 & 0xf8) == 0xf0) {
    len = 4, min = 0x10000, cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (in.size() - i < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char b = byte(i + k);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

}  // namespace

bool IsValidUtf8(std::string_view in) {
  for (size_t i = 0; i < in.size();) {
    const size_t n = ValidSequenceLength(in, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view in) {
  if (IsValidUtf8(in)) return std::string(in);
  std::string out;
  out.reserve(in.size() + 16);
  for (size_t i = 0; i < in.size();) {
    const size_t n = ValidSequenceLength(in, i);
    if (n == 0) {
      out.append("\xef\xbf\xbd");  // U+FFFD REPLACEMENT CHARACTER, one per invalid byte
      ++i;
    } else {
      out.append(in.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace gpuscope::protowire
