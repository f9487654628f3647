#include "src/cli/job_accounting.h"

#include <charconv>
#include <vector>

#include "src/platform/command.h"

namespace gpuscope {
namespace {

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

}  // namespace

int GpusOfTres(std::string_view tres) {
  int untyped = -1, typed = -1;
  for (std::string_view item : Split(tres, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    int count = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), count);
    if (ec != std::errc() || end != value.data() + value.size() || count < 0) continue;
    if (key == "gres/gpu") {
      untyped = count;
    } else if (key.starts_with("gres/gpu:")) {
      typed = (typed < 0 ? 0 : typed) + count;
    }
  }
  return untyped >= 0 ? untyped : typed;
}

Status ParseSacctOutput(std::string_view output, const std::string& job, JobAccounting* accounting) {
  for (std::string_view line : Split(output, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::vector<std::string_view> fields = Split(line, '|');
    if (fields.size() < 5) {
      return Status::InvalidArgument("sacct line without JobID|State|Elapsed|ExitCode|AllocTRES: '" +
                                     std::string(line) + "'");
    }
    if (fields[0] != job) continue;
    accounting->reachable = true;
    accounting->state = std::string(fields[1]);
    accounting->elapsed = std::string(fields[2]);
    accounting->exit_code = std::string(fields[3]);
    accounting->alloc_tres = std::string(fields[4]);
    accounting->gpus = GpusOfTres(fields[4]);
    return Status::Ok();
  }
  return Status::NotFound("sacct has no record of job " + job);
}

JobAccounting QuerySlurmAccounting(const std::string& sacct_binary, const std::string& job,
                                   std::chrono::milliseconds timeout) {
  JobAccounting accounting;
  accounting.queried = true;
  CommandResult result = RunCommandWithTimeout(
      {sacct_binary, "-X", "-j", job, "--parsable2", "--noheader", "--format=" + std::string(kSacctFormat)},
      timeout, 1 << 20);
  if (!result.status.ok()) {
    accounting.error = result.status.message();
    return accounting;
  }
  Status status = ParseSacctOutput(result.output, job, &accounting);
  if (!status.ok()) accounting.error = status.message();
  return accounting;
}

}  // namespace gpuscope
