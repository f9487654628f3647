// The facts nvml_api_facts.py generates about each NVML declaration, once compiled against our
// src/platform/nvml/nvml_api.h and once against NVIDIA's nvml.h; nvml_api_check_test.cc compares them.
//
// Thread-safety: immutable data.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

namespace gpuscope {

struct NvmlFact {
  const char* category;  // "function", "struct", "field", "typedef", "enum", "enumerator", "constant"
  const char* name;      // "offsetof(nvmlPciInfo_t, busId)", "NVML_SUCCESS", ...
  unsigned long long value;
};

// What kind of type T is, as one number: floating point, integral, signed, enum, class, union and pointer
// bits of the type (of the element type for an array, of the pointee for a pointer in the high bits),
// and an array's extent, so that `int` against `unsigned int` or `char[16]` against `char[32]` differ.
template <typename T>
constexpr unsigned long long NvmlTypeKind() {
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

const std::vector<NvmlFact>& OurNvmlFacts();     // compiled against src/platform/nvml/nvml_api.h
const std::vector<NvmlFact>& NvidiaNvmlFacts();  // compiled against NVIDIA's nvml.h

}  // namespace gpuscope
