// Parses the two facts ProcResolver needs from /proc/<pid>/stat and /proc/<pid>/status (proc(5)):
// the start time (field 22 of stat, clock ticks since boot), which together with the pid identifies one
// process across pid reuse, and the real uid (first number of status's "Uid:" line).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpuscope {

// Field 22 (starttime) of /proc/<pid>/stat. The command name (field 2) is in parentheses and may itself
// contain spaces and ')', so fields are counted from the last ')'. Returns nullopt for malformed content.
std::optional<uint64_t> ParseProcStatStartTime(std::string_view content);

// The real uid from /proc/<pid>/status ("Uid:\t1001\t1001\t1001\t1001"). Returns nullopt when the line is
// missing or malformed.
std::optional<uint32_t> ParseProcStatusUid(std::string_view content);

}  // namespace gpuscope
