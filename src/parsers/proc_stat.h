// The one reader of /proc/<pid>/stat lines (proc(5)): its fields by number, and the two facts
// ProcResolver needs from stat and /proc/<pid>/status: the start time (field 22 of stat, clock ticks since
// boot), which together with the pid identifies one process across pid reuse, and the real uid (first
// number of status's "Uid:" line).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace gpuscope {

// Fields 3 onward of a /proc/<pid>/stat line (state, ppid, ...): element i is field i + 3. The command
// name (field 2) is in parentheses and may itself hold spaces, '(' and ')', so fields are counted from the
// last ')'. Fields are separated by blanks; a newline ends the line. nullopt when there is no "(...)".
std::optional<std::vector<std::string_view>> SplitProcStat(std::string_view content);

// Field `number` (numbered as proc(5) does, 3 or more) of SplitProcStat's result as an unsigned integer;
// nullopt when the line is shorter or the field is not a whole number.
std::optional<uint64_t> ProcStatNumber(const std::vector<std::string_view>& fields, int number);

// Field 22 (starttime) of /proc/<pid>/stat. Returns nullopt for malformed content.
std::optional<uint64_t> ParseProcStatStartTime(std::string_view content);

// The real uid from /proc/<pid>/status ("Uid:\t1001\t1001\t1001\t1001"). Returns nullopt when the line is
// missing or malformed.
std::optional<uint32_t> ParseProcStatusUid(std::string_view content);

}  // namespace gpuscope
