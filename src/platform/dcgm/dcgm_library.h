// DcgmLibrary: the DCGM binding. It dlopen()s libdcgm (or the stand-in in sim/dcgm/) at run time and
// resolves each entry point of GPUSCOPE_DCGM_FUNCTIONS (dcgm_api.h) lazily with dlsym on first use. Every
// call goes through a member of the same name as the DCGM function; a symbol the library does not export
// makes that member return DCGM_ST_FUNCTION_NOT_FOUND instead of crashing. DCGM is optional: nothing in the
// agent links it, and a node without it only loses what DCGM alone gives.
//
// Thread-safety: all members are safe to call concurrently (symbol resolution uses atomics; DCGM's API is
// thread-safe). The library stays loaded until the DcgmLibrary is destroyed.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/status.h"
#include "src/platform/dcgm/dcgm_api.h"

namespace gpuscope {

// One enumerator per entry point of GPUSCOPE_DCGM_FUNCTIONS, in list order.
enum class DcgmFunction : int {
#define GPUSCOPE_DCGM_ENUM(name, params, args) name,
  GPUSCOPE_DCGM_FUNCTIONS(GPUSCOPE_DCGM_ENUM)
#undef GPUSCOPE_DCGM_ENUM
      kCount
};

// The DCGM function name of `fn` ("dcgmInit").
std::string_view DcgmFunctionName(DcgmFunction fn);

class DcgmLibrary {
 public:
  // The sonames DCGM installs, newest first: what an empty --dcgm.library tries, in order. DCGM 4 keeps
  // the DCGM 3 API for everything gpuscope calls.
  static std::vector<std::string> DefaultCandidates() { return {"libdcgm.so.4", "libdcgm.so.3"}; }

  // Loads the first of `candidates` that dlopen accepts (a file name searched the dlopen way, or a path).
  // On success stores it in `*out` and returns Ok; on failure returns Unavailable naming every candidate
  // with its dlerror() text, and leaves `*out` untouched. Does not call dcgmInit.
  static Status Open(const std::vector<std::string>& candidates, std::shared_ptr<DcgmLibrary>* out);

  // Closes the library (dlclose). Does not call dcgmShutdown.
  ~DcgmLibrary();
  DcgmLibrary(const DcgmLibrary&) = delete;
  DcgmLibrary& operator=(const DcgmLibrary&) = delete;

  // The candidate that was loaded.
  const std::string& path() const { return path_; }

  // Whether the library exports `fn` (resolves it if not done yet).
  bool Has(DcgmFunction fn) const { return Resolve(fn) != nullptr; }

  // One member per DCGM entry point, same name and parameters: returns what DCGM returns, or
  // DCGM_ST_FUNCTION_NOT_FOUND when the library lacks the symbol.
#define GPUSCOPE_DCGM_MEMBER(name, params, args)                                 \
  dcgmReturn_t name params const {                                               \
    auto* fn = reinterpret_cast<decltype(&::name)>(Resolve(DcgmFunction::name)); \
    if (fn == nullptr) return DCGM_ST_FUNCTION_NOT_FOUND;                        \
    return fn args;                                                              \
  }
  GPUSCOPE_DCGM_FUNCTIONS(GPUSCOPE_DCGM_MEMBER)
#undef GPUSCOPE_DCGM_MEMBER

  // DCGM's errorString(result) when the library has it, else "DCGM error <n>"; never empty.
  std::string ErrorString(dcgmReturn_t result) const;

 private:
  DcgmLibrary(void* handle, std::string path);
  // The symbol's address, or nullptr when the library does not export it.
  void* Resolve(DcgmFunction fn) const;

  void* handle_;
  std::string path_;
  // nullptr: not resolved yet; kMissing: resolved and absent; otherwise the address.
  mutable std::array<std::atomic<void*>, static_cast<size_t>(DcgmFunction::kCount)> symbols_{};
  mutable std::atomic<void*> error_string_{nullptr};
};

// "DCGM_ST_CONNECTION_NOT_VALID"-style name of a return code, for logs, labels and tests.
std::string_view DcgmReturnName(dcgmReturn_t result);

}  // namespace gpuscope
