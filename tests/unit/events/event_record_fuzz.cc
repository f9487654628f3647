// Fuzz target: the decoder of queue payloads (EventRecords) must reject or accept any bytes without
// crashing, and what it accepts must encode back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/events/event_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto record = gpuscope::DecodeEventRecord(bytes)) {
    if (gpuscope::EncodeEventRecord(*record) != bytes) std::abort();
    (void)gpuscope::EventRecordMetadata(*record);
  }
  return 0;
}
