// The one JSON string writer: every JSON (and JSON-compatible) text the agent writes quotes its strings
// here: the JSON log format, Loki's JSON push body, the YAML reference in docs/.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

namespace gpuscope {

// Appends `value` to `out` as a double-quoted JSON string (RFC 8259): '"' and '\' backslash-escaped,
// LF, CR and tab as \n, \r and \t, other control characters and DEL as \u00XX, bytes that are not valid
// UTF-8 as U+FFFD, so the result is always valid JSON and valid UTF-8 whatever the input. The same text
// is a valid YAML double-quoted scalar.
void AppendJsonString(std::string& out, std::string_view value);

}  // namespace gpuscope
