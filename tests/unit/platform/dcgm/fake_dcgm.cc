// A tiny stand-in libdcgm for the loader's test (dcgm_library_test): two GPUs and a handful of entry
// points, so that every other one of GPUSCOPE_DCGM_FUNCTIONS is a missing symbol. Built twice, under the
// names DCGM installs: libdcgm.so.4 with errorString, libdcgm.so.3 without it
// (GPUSCOPE_FAKE_DCGM_WITHOUT_ERROR_STRING), so that a test can tell which one was loaded.
#include "src/platform/dcgm/dcgm_api.h"

namespace {

constexpr dcgmHandle_t kEmbeddedHandle = 7;
bool initialized = false;

}  // namespace

extern "C" {

dcgmReturn_t dcgmInit(void) {
  initialized = true;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmShutdown(void) {
  if (!initialized) return DCGM_ST_UNINITIALIZED;
  initialized = false;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmStartEmbedded(dcgmOperationMode_t mode, dcgmHandle_t* handle) {
  if (!initialized) return DCGM_ST_UNINITIALIZED;
  if (handle == nullptr || mode != DCGM_OPERATION_MODE_MANUAL) return DCGM_ST_BADPARAM;
  *handle = kEmbeddedHandle;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t handle, unsigned int* gpu_ids, int* count) {
  if (handle != kEmbeddedHandle) return DCGM_ST_CONNECTION_NOT_VALID;
  gpu_ids[0] = 0;
  gpu_ids[1] = 1;
  *count = 2;
  return DCGM_ST_OK;
}

#ifndef GPUSCOPE_FAKE_DCGM_WITHOUT_ERROR_STRING
// Text for one code only; nullptr for the others, as for a code the library does not know.
const char* errorString(dcgmReturn_t result) {
  return result == DCGM_ST_CONNECTION_NOT_VALID ? "fake DCGM: the connection is gone" : nullptr;
}
#endif

}  // extern "C"
