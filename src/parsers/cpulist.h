// Parser of the kernel's CPU list format ("0-3,8-11", as in sysfs local_cpulist and the
// Cpus_allowed_list line of /proc/<pid>/status; see Documentation/admin-guide/cgroup-v2.rst "cpuset"
// and lib/bitmap.c bitmap_parselist). A CpuSet is a sorted list of CPU numbers.
//
// Thread-safety: pure functions and value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

// CPU numbers above this are rejected as malformed: it bounds the memory a hostile or corrupt list can make
// us allocate (the kernel's own NR_CPUS limit is 8192).
inline constexpr uint32_t kMaxCpuNumber = 65535;

// Sorted, without duplicates.
using CpuSet = std::vector<uint32_t>;

// Parses "0-3,8-11\n" (ranges and single CPUs separated by commas, optional trailing newline; an empty
// list is the empty set). Also accepts the kernel's stride form "0-15:2/4" (first 2 of every 4).
// Returns nullopt for anything else (non-digits, reversed ranges, CPU numbers above kMaxCpuNumber).
std::optional<CpuSet> ParseCpuList(std::string_view text);

// The canonical kernel spelling of a set: "0-3,8-11"; "" for the empty set.
std::string FormatCpuList(const CpuSet& cpus);

// Whether the two sorted sets share at least one CPU.
bool CpuSetsIntersect(const CpuSet& a, const CpuSet& b);

// Whether every CPU of `inner` is in `outer` (true when `inner` is empty).
bool CpuSetIsSubset(const CpuSet& inner, const CpuSet& outer);

bool CpuSetContains(const CpuSet& cpus, uint32_t cpu);

}  // namespace gpuscope
