// Command: one `gpuscope` subcommand — its name, help, flags and the function that runs it. Each
// command's file exposes one `Command XxxCommand()`; main.cc lists them in the one table of commands.
// Exit codes a command returns: kExitOk when done, kExitFailed when a query failed or found nothing,
// kExitUsage for a usage error (`gpuscope check` maps its own verdicts onto 0/1/2, as documented there).
//
// Thread-safety: value types.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "src/cli/command_line.h"

namespace gpuscope {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

struct Command {
  std::string name;
  std::string usage;    // after "gpuscope "
  std::string summary;  // one line for the command list
  std::string details;  // more help after the usage line
  std::vector<FlagSpec> flags;
  std::function<int(const CommandLine&)> run;
};

}  // namespace gpuscope
