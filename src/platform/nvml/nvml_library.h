// NvmlLibrary: the NVML binding. It dlopen()s libnvidia-ml (or the simulator, or any stand-in) at run
// time and resolves each entry point of GPUSCOPE_NVML_FUNCTIONS (nvml_api.h) lazily with dlsym on first
// use. Every call goes through a member of the same name as the NVML function; a symbol the library does
// not export (an old driver) makes that member return NVML_ERROR_FUNCTION_NOT_FOUND instead of crashing.
//
// Thread-safety: all members are safe to call concurrently (symbol resolution uses atomics; NVML itself
// is thread-safe). The library stays loaded until the NvmlLibrary is destroyed; callers that may still
// be inside an NVML call on another thread must keep it alive (hold the shared_ptr).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/core/status.h"
#include "src/platform/nvml/nvml_api.h"

namespace gpuscope {

// One enumerator per entry point of GPUSCOPE_NVML_FUNCTIONS, in list order.
enum class NvmlFunction : int {
#define GPUSCOPE_NVML_ENUM(name, params, args) name,
  GPUSCOPE_NVML_FUNCTIONS(GPUSCOPE_NVML_ENUM)
#undef GPUSCOPE_NVML_ENUM
      kCount
};

// The NVML function name of `fn` ("nvmlInit_v2").
std::string_view NvmlFunctionName(NvmlFunction fn);

class NvmlLibrary {
 public:
  // The soname the NVIDIA driver installs; what --nvml.library defaults to.
  static constexpr const char* kDefaultPath = "libnvidia-ml.so.1";

  // Loads the library at `path` (a file name searched the dlopen way, or a path). On success stores it
  // in `*out` and returns Ok; on failure returns Unavailable with the dlerror() text and leaves `*out`
  // untouched. Does not call nvmlInit_v2.
  static Status Open(const std::string& path, std::shared_ptr<NvmlLibrary>* out);
  // The library at `path`, every call through this instance made on behalf of `context`: before each
  // call the calling thread is bound to it with the library's exported `bind_symbol`, a `void(void*)`.
  // The simulator's gpuscopeSimBindThread (sim/control.h) makes one loaded simulator answer as many
  // simulated nodes in one process (the fleet runner), while the agent's threads stay unaware of nodes.
  // Unavailable when the library cannot be loaded or lacks `bind_symbol`. A thread stays bound after a
  // call through a bound instance, so a process uses either bound instances of a library or plain ones.
  static Status OpenBound(const std::string& path, const char* bind_symbol, void* context,
                          std::shared_ptr<NvmlLibrary>* out);

  // Closes the library (dlclose). Does not call nvmlShutdown.
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const std::string& path() const { return path_; }

  // Whether the library exports `fn` (resolves it if not done yet).
  bool Has(NvmlFunction fn) const { return Resolve(fn) != nullptr; }

  // One member per NVML entry point, same name and parameters: returns what NVML returns, or
  // NVML_ERROR_FUNCTION_NOT_FOUND when the library lacks the symbol.
#define GPUSCOPE_NVML_MEMBER(name, params, args)                                 \
  nvmlReturn_t name params const {                                               \
    auto* fn = reinterpret_cast<decltype(&::name)>(Resolve(NvmlFunction::name)); \
    if (fn == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;                     \
    if (bind_ != nullptr) bind_(context_);                                       \
    return fn args;                                                              \
  }
  GPUSCOPE_NVML_FUNCTIONS(GPUSCOPE_NVML_MEMBER)
#undef GPUSCOPE_NVML_MEMBER

  // nvmlDeviceGetCurrentClocksEventReasons (drivers 535+), falling back to the older name
  // nvmlDeviceGetCurrentClocksThrottleReasons; FUNCTION_NOT_FOUND when neither exists.
  nvmlReturn_t GetClocksEventReasons(nvmlDevice_t device, unsigned long long* reasons) const;

  // nvmlErrorString(result) when the library has it, else "NVML error <n>"; never null.
  std::string ErrorString(nvmlReturn_t result) const;

 private:
  NvmlLibrary(void* handle, std::string path);
  // The symbol's address, or nullptr when the library does not export it.
  void* Resolve(NvmlFunction fn) const;

  void* handle_;
  std::string path_;
  void (*bind_)(void*) = nullptr;  // OpenBound: binds the calling thread to context_ before each call
  void* context_ = nullptr;
  // nullptr: not resolved yet; kMissing: resolved and absent; otherwise the address.
  mutable std::array<std::atomic<void*>, static_cast<size_t>(NvmlFunction::kCount)> symbols_{};
  mutable std::atomic<void*> error_string_{nullptr};
};

// "NVML_ERROR_GPU_IS_LOST"-style name of a return code, for logs and tests.
std::string_view NvmlReturnName(nvmlReturn_t result);

// The value of a field from nvmlDeviceGetFieldValues, whatever its valueType: as a double, and as an
// unsigned count (negative and fractional values clamp and truncate).
double FieldValueAsDouble(const nvmlFieldValue_t& fv);
uint64_t FieldValueAsU64(const nvmlFieldValue_t& fv);

}  // namespace gpuscope
