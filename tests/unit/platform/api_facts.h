// The facts api_facts.py generates about each declaration of one of our headers of an NVIDIA API
// (src/platform/nvml/nvml_api.h, src/platform/dcgm/dcgm_api.h), once compiled against our header and once
// against NVIDIA's own, and their comparison. Shared by nvml/nvml_api_check_test and
// dcgm/dcgm_api_check_test.
//
// Thread-safety: immutable data; ExpectSameApiFacts runs on a test's thread.
#pragma once

#include <bit>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace gpuscope {

struct ApiFact {
  const char* category;  // "function", "struct", "field", "typedef", "enum", "enumerator", "constant"
  const char* name;      // "offsetof(nvmlPciInfo_t, busId)", "NVML_SUCCESS", ...
  unsigned long long value;
};

// What kind of type T is, as one number: floating point, integral, signed, enum, class, union and pointer
// bits of the type (of the element type for an array, of the pointee for a pointer in the high bits),
// and an array's extent, so that `int` against `unsigned int` or `char[16]` against `char[32]` differ.
template <typename T>
constexpr unsigned long long ApiTypeKind() {
  auto bits = []<typename U>() -> unsigned long long {
    return (std::is_floating_point_v<U> ? 1u : 0u) | (std::is_integral_v<U> ? 2u : 0u) |
           (std::is_signed_v<U> ? 4u : 0u) | (std::is_enum_v<U> ? 8u : 0u) | (std::is_class_v<U> ? 16u : 0u) |
           (std::is_union_v<U> ? 32u : 0u) | (std::is_pointer_v<U> ? 64u : 0u) | (sizeof(U) << 8);
  };
  using Element = std::remove_cv_t<std::remove_all_extents_t<T>>;
  unsigned long long kind = bits.template operator()<Element>();
  if constexpr (std::is_pointer_v<Element>) {
    using Pointee = std::remove_cv_t<std::remove_pointer_t<Element>>;
    if constexpr (std::is_void_v<Pointee> || !std::is_object_v<Pointee> || !requires { sizeof(Pointee); }) {
      kind |= 1ull << 40;  // void, a function or an opaque (incomplete) struct
    } else {
      kind |= bits.template operator()<Pointee>() << 24;
    }
  }
  return kind | (static_cast<unsigned long long>(std::is_array_v<T> ? std::extent_v<T> : 0) << 48);
}

// A macro's value as one number: an integer or enumerator converted, a floating-point value's bits (as a
// double), so that 2^47 and 2^47 + 0.5 differ.
template <typename T>
constexpr unsigned long long ApiConstant(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::bit_cast<unsigned long long>(static_cast<double>(value));
  } else {
    return static_cast<unsigned long long>(value);
  }
}

// Expects `ours` and `nvidias` (generated from the same declarations) to agree fact by fact: a GoogleTest
// failure for each that differs, naming it and both values. Also expects every category to be there (a
// generator that missed a kind of declaration would show), records the count of each as the test's
// "checked" property and prints it. `nvidia_header` names NVIDIA's header in the messages.
void ExpectSameApiFacts(const std::vector<ApiFact>& ours, const std::vector<ApiFact>& nvidias,
                        const char* nvidia_header);

}  // namespace gpuscope
