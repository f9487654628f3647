#include "src/platform/dcgm/dcgm_library.h"

#include <dlfcn.h>

#include <utility>

namespace gpuscope {
namespace {

// Marks a symbol that was looked up and is absent, so that the lookup is not repeated.
char missing_marker;
void* const kMissing = &missing_marker;

constexpr std::string_view kFunctionNames[] = {
#define GPUSCOPE_DCGM_NAME(name, params, args) #name,
    GPUSCOPE_DCGM_FUNCTIONS(GPUSCOPE_DCGM_NAME)
#undef GPUSCOPE_DCGM_NAME
};
static_assert(std::size(kFunctionNames) == static_cast<size_t>(DcgmFunction::kCount));

}  // namespace

std::string_view DcgmFunctionName(DcgmFunction fn) { return kFunctionNames[static_cast<size_t>(fn)]; }

Status DcgmLibrary::Open(const std::vector<std::string>& candidates, std::shared_ptr<DcgmLibrary>* out) {
  std::string errors;
  for (const std::string& path : candidates) {
    // RTLD_LOCAL: DCGM's symbols must not satisfy lookups of other libraries loaded later.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      out->reset(new DcgmLibrary(handle, path));
      return Status::Ok();
    }
    const char* error = dlerror();
    if (!errors.empty()) errors += "; ";
    errors += error != nullptr ? error : path + ": unknown dlopen error";
  }
  if (candidates.empty()) errors = "no library to try";
  return Status::Unavailable("cannot load a DCGM library: " + errors);
}

DcgmLibrary::DcgmLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

DcgmLibrary::~DcgmLibrary() { dlclose(handle_); }

void* DcgmLibrary::Resolve(DcgmFunction fn) const {
  std::atomic<void*>& slot = symbols_[static_cast<size_t>(fn)];
  void* address = slot.load(std::memory_order_acquire);
  if (address == nullptr) {
    // Two threads may race to resolve the same symbol; both store the same answer.
    address = dlsym(handle_, std::string(DcgmFunctionName(fn)).c_str());
    if (address == nullptr) address = kMissing;
    slot.store(address, std::memory_order_release);
  }
  return address == kMissing ? nullptr : address;
}

std::string DcgmLibrary::ErrorString(dcgmReturn_t result) const {
  void* address = error_string_.load(std::memory_order_acquire);
  if (address == nullptr) {
    address = dlsym(handle_, "errorString");
    if (address == nullptr) address = kMissing;
    error_string_.store(address, std::memory_order_release);
  }
  if (address != kMissing) {
    const char* text = reinterpret_cast<decltype(&::errorString)>(address)(result);
    if (text != nullptr && *text != '\0') return text;
  }
  return "DCGM error " + std::to_string(static_cast<int>(result));
}

std::string_view DcgmReturnName(dcgmReturn_t result) {
  switch (result) {
#define GPUSCOPE_DCGM_RETURN(code) \
  case code:                       \
    return #code;
    GPUSCOPE_DCGM_RETURN(DCGM_ST_OK)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_BADPARAM)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_GENERIC_ERROR)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_MEMORY)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_NOT_CONFIGURED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_NOT_SUPPORTED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_INIT_ERROR)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_NVML_ERROR)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_PENDING)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_UNINITIALIZED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_TIMEOUT)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_VER_MISMATCH)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_UNKNOWN_FIELD)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_NO_DATA)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_STALE_DATA)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_NOT_WATCHED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_NO_PERMISSION)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_GPU_IS_LOST)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_RESET_REQUIRED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_FUNCTION_NOT_FOUND)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_CONNECTION_NOT_VALID)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_GPU_NOT_SUPPORTED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_GROUP_INCOMPATIBLE)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_MAX_LIMIT)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_LIBRARY_NOT_FOUND)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_DUPLICATE_KEY)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_REQUIRES_ROOT)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_INSUFFICIENT_SIZE)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_FIELD_UNSUPPORTED_BY_API)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_MODULE_NOT_LOADED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_IN_USE)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_GROUP_IS_EMPTY)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_PROFILING_NOT_SUPPORTED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_PROFILING_LIBRARY_ERROR)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_PROFILING_MULTI_PASS)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_INSUFFICIENT_DRIVER_VERSION)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_INSTANCE_NOT_FOUND)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_COMPUTE_INSTANCE_NOT_FOUND)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_PAUSED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_ALREADY_INITIALIZED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_NVML_NOT_LOADED)
    GPUSCOPE_DCGM_RETURN(DCGM_ST_NVML_DRIVER_TIMEOUT)
#undef GPUSCOPE_DCGM_RETURN
  }
  return "DCGM_ST_(unlisted)";
}

}  // namespace gpuscope
