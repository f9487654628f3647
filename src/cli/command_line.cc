#include "src/cli/command_line.h"

#include <algorithm>

namespace gpuscope {

Status ParseCommandLine(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs,
                        CommandLine* out) {
  *out = CommandLine();
  for (const FlagSpec& spec : specs) out->flags[spec.name] = spec.takes_value ? spec.default_value : "";
  bool flags_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_ended || arg.size() < 2 || arg[0] != '-') {
      out->positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_ended = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      out->help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0)
      return Status::InvalidArgument("unknown flag " + arg + " (flags start with --)");
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const FlagSpec& s) { return s.name == name; });
    if (spec == specs.end()) return Status::InvalidArgument("unknown flag --" + name + " (see --help)");
    if (!spec->takes_value) {
      if (equals != std::string::npos) return Status::InvalidArgument("flag --" + name + " takes no value");
      out->flags[name] = "true";
    } else if (equals != std::string::npos) {
      out->flags[name] = arg.substr(equals + 1);
    } else if (i + 1 < args.size()) {
      out->flags[name] = args[++i];
    } else {
      return Status::InvalidArgument("flag --" + name + " needs a value");
    }
  }
  return Status::Ok();
}

std::string FlagsHelp(const std::vector<FlagSpec>& specs) {
  auto left = [](const FlagSpec& spec) { return "  --" + spec.name + (spec.takes_value ? "=VALUE" : ""); };
  size_t column = 0;
  for (const FlagSpec& spec : specs) column = std::max(column, left(spec).size() + 2);
  std::string out;
  for (const FlagSpec& spec : specs) {
    std::string line = left(spec);
    line.resize(column, ' ');
    out += line + spec.help;
    if (!spec.default_value.empty()) out += " (default " + spec.default_value + ")";
    out += "\n";
  }
  return out;
}

}  // namespace gpuscope
