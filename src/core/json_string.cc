#include "src/core/json_string.h"

#include "src/core/utf8.h"

namespace gpuscope {

void AppendJsonString(std::string& out, std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out.append("\\u00");
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          const size_t len = ValidUtf8Length(value, i);
          if (len == 0) {
            out.append(kUtf8ReplacementChar);
          } else {
            out.append(value.substr(i, len));
            i += len;
            continue;
          }
        }
    }
    ++i;
  }
  out.push_back('"');
}

}  // namespace gpuscope
