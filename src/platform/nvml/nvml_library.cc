#include "src/platform/nvml/nvml_library.h"

#include <dlfcn.h>

#include <utility>

namespace gpuscope {
namespace {

// Marks a symbol that was looked up and is absent, so that the lookup is not repeated.
char missing_marker;
void* const kMissing = &missing_marker;

constexpr std::string_view kFunctionNames[] = {
#define GPUSCOPE_NVML_NAME(name, params, args) #name,
    GPUSCOPE_NVML_FUNCTIONS(GPUSCOPE_NVML_NAME)
#undef GPUSCOPE_NVML_NAME
};
static_assert(std::size(kFunctionNames) == static_cast<size_t>(NvmlFunction::kCount));

}  // namespace

std::string_view NvmlFunctionName(NvmlFunction fn) { return kFunctionNames[static_cast<size_t>(fn)]; }

Status NvmlLibrary::Open(const std::string& path, std::shared_ptr<NvmlLibrary>* out) {
  // RTLD_LOCAL: NVML's symbols must not satisfy lookups of other libraries loaded later.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return Status::Unavailable("cannot load NVML library " + path + ": " +
                               (error != nullptr ? error : "unknown dlopen error"));
  }
  out->reset(new NvmlLibrary(handle, path));
  return Status::Ok();
}

Status NvmlLibrary::OpenBound(const std::string& path, const char* bind_symbol, void* context,
                              std::shared_ptr<NvmlLibrary>* out) {
  std::shared_ptr<NvmlLibrary> library;
  Status status = Open(path, &library);
  if (!status.ok()) return status;
  void* bind = dlsym(library->handle_, bind_symbol);
  if (bind == nullptr) {
    return Status::Unavailable("NVML library " + path + " does not export " + bind_symbol +
                               ": it cannot serve several simulated nodes");
  }
  library->bind_ = reinterpret_cast<void (*)(void*)>(bind);
  library->context_ = context;
  *out = std::move(library);
  return Status::Ok();
}

NvmlLibrary::NvmlLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

NvmlLibrary::~NvmlLibrary() { dlclose(handle_); }

void* NvmlLibrary::Resolve(NvmlFunction fn) const {
  std::atomic<void*>& slot = symbols_[static_cast<size_t>(fn)];
  void* address = slot.load(std::memory_order_acquire);
  if (address == nullptr) {
    // Two threads may race to resolve the same symbol; both store the same answer.
    address = dlsym(handle_, std::string(NvmlFunctionName(fn)).c_str());
    if (address == nullptr) address = kMissing;
    slot.store(address, std::memory_order_release);
  }
  return address == kMissing ? nullptr : address;
}

nvmlReturn_t NvmlLibrary::GetClocksEventReasons(nvmlDevice_t device, unsigned long long* reasons) const {
  nvmlReturn_t result = nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
  if (result != NVML_ERROR_FUNCTION_NOT_FOUND) return result;
  return nvmlDeviceGetCurrentClocksThrottleReasons(device, reasons);
}

std::string NvmlLibrary::ErrorString(nvmlReturn_t result) const {
  void* address = error_string_.load(std::memory_order_acquire);
  if (address == nullptr) {
    address = dlsym(handle_, "nvmlErrorString");
    if (address == nullptr) address = kMissing;
    error_string_.store(address, std::memory_order_release);
  }
  if (address != kMissing) {
    const char* text = reinterpret_cast<decltype(&::nvmlErrorString)>(address)(result);
    if (text != nullptr) return text;
  }
  return "NVML error " + std::to_string(static_cast<int>(result));
}

std::string_view NvmlReturnName(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "NVML_ERROR_ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND:
      return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "NVML_ERROR_INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT:
      return "NVML_ERROR_TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE:
      return "NVML_ERROR_IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "NVML_ERROR_CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED:
      return "NVML_ERROR_RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "NVML_ERROR_OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE:
      return "NVML_ERROR_IN_USE";
    case NVML_ERROR_MEMORY:
      return "NVML_ERROR_MEMORY";
    case NVML_ERROR_NO_DATA:
      return "NVML_ERROR_NO_DATA";
    case NVML_ERROR_UNKNOWN:
      return "NVML_ERROR_UNKNOWN";
  }
  return "NVML_ERROR_(unlisted)";
}

double FieldValueAsDouble(const nvmlFieldValue_t& fv) {
  switch (fv.valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
      return fv.value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return fv.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(fv.value.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(fv.value.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(fv.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return fv.value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return fv.value.usVal;
  }
  return 0;
}

uint64_t FieldValueAsU64(const nvmlFieldValue_t& fv) {
  switch (fv.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return fv.value.ullVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return fv.value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return fv.value.uiVal;
    default: {
      double d = FieldValueAsDouble(fv);
      return d > 0 ? static_cast<uint64_t>(d) : 0;
    }
  }
}

}  // namespace gpuscope
