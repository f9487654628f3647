// CommandLine: the `gpuscope` command's arguments split into flags and positional arguments. Flags are
// `--name=value` or `--name value` (a flag whose spec says it takes no value is `--name` alone), in any
// position after the subcommand; `--` ends flags. Unknown flags and missing values are errors that name
// the flag.
//
// Thread-safety: value types and free functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/core/status.h"

namespace gpuscope {

struct FlagSpec {
  std::string name;  // without the leading "--"
  std::string help;
  std::string default_value;  // shown in --help; the value when the flag is not given
  bool takes_value = true;
};

struct CommandLine {
  std::map<std::string, std::string>
      flags;  // every spec'd flag: given value or default ("true" for a switch)
  std::vector<std::string> positional;
  bool help = false;  // -h or --help given
};

// InvalidArgument for an unknown flag or a flag that needs a value and has none.
Status ParseCommandLine(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs,
                        CommandLine* out);

// The flags' part of a --help text: one line per flag with its default, help texts in one column.
std::string FlagsHelp(const std::vector<FlagSpec>& specs);

}  // namespace gpuscope
