// Parsers of the two facts about where a process may run and where it last ran (proc(5)): the
// Cpus_allowed_list line of /proc/<pid>/status and field 39 (processor) of /proc/<pid>/stat.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "src/parsers/cpulist.h"

namespace gpuscope {

// The CPUs of "Cpus_allowed_list:\t0-3,8-11". Returns nullopt when the line is missing or malformed.
std::optional<CpuSet> ParseProcStatusCpusAllowed(std::string_view content);

// Field 39 (processor: the CPU the task last ran on) of /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may hold spaces and ')', so fields are counted from the last ')'. Returns nullopt when
// the field is missing or malformed.
std::optional<uint32_t> ParseProcStatLastCpu(std::string_view content);

}  // namespace gpuscope
