// Fuzz target for the test-side protobuf reader: any bytes, parsed recursively (every length-delimited
// payload is tried as a nested message, as a receiver walking an unknown schema would), must never read
// out of bounds; every field it returns must lie inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tests/tools/push_receiver/proto_reader.h"

namespace {

void Walk(std::string_view whole, std::string_view message, int depth) {
  if (depth > 32) return;
  auto fields = gpuscope::testing::ParseProtoFields(message);
  if (!fields) return;
  for (const auto& field : *fields) {
    if (field.number == 0) std::abort();
    if (field.wire_type != 2) continue;
    if (field.bytes.data() < whole.data() ||
        field.bytes.data() + field.bytes.size() > whole.data() + whole.size()) {
      std::abort();
    }
    Walk(whole, field.bytes, depth + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Walk(input, input, 0);
  return 0;
}
