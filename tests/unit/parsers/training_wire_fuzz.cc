// libFuzzer entry point for the training socket's datagram decoder (see src/parsers/training_wire.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/parsers/training_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuscope::TrainingDatagram datagram;
  (void)gpuscope::DecodeTrainingDatagram(std::string_view(reinterpret_cast<const char*>(data), size),
                                         &datagram);
  return 0;
}
