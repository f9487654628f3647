// gpuscope: the command-line reader of what the agents exported, through Prometheus. Subcommands come
// from one table (Commands()); each names its flags, its help and the function that runs it. Exit codes:
// 0 done, 1 the query failed or found nothing, 2 a usage error.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "src/cli/chargeback_command.h"
#include "src/cli/check_command.h"
#include "src/cli/command.h"
#include "src/cli/command_line.h"
#include "src/cli/inventory_command.h"
#include "src/cli/job_command.h"
#include "src/cli/profile_command.h"
#include "src/cli/top_command.h"
#include "src/core/version.h"

namespace gpuscope {
namespace {

// The one table of commands.
const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      JobCommand(),       TopCommand(),          ChargebackCommand(),    CheckCommand(),
      InventoryCommand(), ProfilePauseCommand(), ProfileResumeCommand(), ProfileStatusCommand(),
  };
  return commands;
}

std::string MainHelp() {
  std::string out =
      "gpuscope: read the GPU fleet's metrics (as gpuscope-agent exports them) from Prometheus.\n\n"
      "Usage: gpuscope COMMAND [flags] [arguments]\n       gpuscope --version\n\nCommands:\n";
  size_t width = 0;
  for (const Command& c : Commands()) width = std::max(width, c.name.size());
  for (const Command& c : Commands()) {
    out += "  " + c.name + std::string(width + 2 - c.name.size(), ' ') + c.summary + "\n";
  }
  out += "\nRun 'gpuscope COMMAND --help' for a command's flags.\n";
  return out;
}

int Main(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << MainHelp();
    return args.empty() ? kExitUsage : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "gpuscope " << Version() << " (revision " << Revision() << ")\n";
    return 0;
  }
  for (const Command& command : Commands()) {
    if (command.name != args[0]) continue;
    const std::vector<FlagSpec>& specs = command.flags;
    CommandLine line;
    Status status = ParseCommandLine(std::vector<std::string>(args.begin() + 1, args.end()), specs, &line);
    if (!status.ok()) {
      std::cerr << "gpuscope " << command.name << ": " << status.message() << "\n";
      return kExitUsage;
    }
    if (line.help) {
      std::cout << "Usage: gpuscope " << command.usage << "\n\n"
                << command.details << "\nFlags:\n"
                << FlagsHelp(specs);
      return 0;
    }
    return command.run(line);
  }
  std::cerr << "gpuscope: unknown command '" << args[0] << "'\n\n" << MainHelp();
  return kExitUsage;
}

}  // namespace
}  // namespace gpuscope

int main(int argc, char** argv) { return gpuscope::Main(std::vector<std::string>(argv + 1, argv + argc)); }
