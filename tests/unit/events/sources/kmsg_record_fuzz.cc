// Fuzz target: the /dev/kmsg record parser and record splitter must accept any bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/events/sources/kmsg_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto record = gpuscope::ParseKmsgRecord(text);
  if (record) (void)record->Find("DEVICE");
  std::string_view rest = text;
  while (size_t len = gpuscope::KmsgRecordLength(rest, true)) {
    if (len > rest.size()) __builtin_trap();
    (void)gpuscope::ParseKmsgRecord(rest.substr(0, len));
    rest.remove_prefix(len);
  }
  return 0;
}
