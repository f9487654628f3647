// The Slurm scheduler collector itself: runs the four commands at once, records each run, keeps the
// families of each command's last good output and serves them while fresh, with the self-metrics. The
// family table is in slurm_scheduler_families.cc, the builders from each command's output in
// slurm_scheduler_builders.cc.
#include "src/collectors/slurm/slurm_scheduler_collector.h"

#include <algorithm>
#include <future>
#include <string_view>
#include <utility>

#include "src/collectors/slurm/slurm_scheduler_builders.h"
#include "src/collectors/slurm/slurm_scheduler_families.h"
#include "src/core/log.h"
#include "src/parsers/slurm_scheduler.h"
#include "src/platform/command.h"

namespace gpuscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::array<std::string_view, 4> kCommandNames = {"squeue", "sinfo", "sdiag", "sshare"};

// The category of a run's outcome: "ok", or the reason gpuscope_slurm_error_info reports.
std::string ReasonOf(const CommandResult& run) {
  switch (run.status.code()) {
    case Status::Code::kDeadlineExceeded:
      return "timeout";
    case Status::Code::kOk:
      return "ok";
    default:
      break;
  }
  const std::string& message = run.status.message();
  const std::string& error = run.error;
  if (error.find("Unable to contact slurm controller") != std::string::npos ||
      error.find("Socket timed out") != std::string::npos ||
      error.find("Connection refused") != std::string::npos) {
    return "controller_unreachable";
  }
  if (message.find("could not be run") != std::string::npos) return "not_found";
  if (message.find("printed more than") != std::string::npos) return "output_too_large";
  return "failed";
}

}  // namespace

SlurmSchedulerCollector::SlurmSchedulerCollector(SlurmSchedulerOptions options)
    : options_(std::move(options)) {
  state_[kSdiag].enabled = options_.collect_sdiag;
  state_[kSshare].enabled = options_.collect_sshare;
}

std::vector<MetricDescription> SlurmSchedulerCollector::Describe() const {
  std::vector<MetricDescription> out;
  for (const SlurmFamilySpec& spec : SlurmFamilySpecs()) {
    if (!options_.collect_sdiag && spec.name.starts_with("gpuscope_slurm_scheduler_")) continue;
    if (!options_.collect_sshare &&
        (spec.name.starts_with("gpuscope_slurm_share_") || spec.name == "gpuscope_slurm_fairshare")) {
      continue;
    }
    MetricDescription d;
    d.name = std::string(spec.name);
    d.type = spec.type;
    d.help = std::string(spec.help);
    d.unit = std::string(spec.unit);
    d.labels = spec.labels;
    if (!options_.include_user && spec.name == "gpuscope_slurm_jobs") {
      d.labels.erase(std::remove(d.labels.begin(), d.labels.end(), "user"), d.labels.end());
    }
    d.source = std::string(spec.source);
    out.push_back(std::move(d));
  }
  return out;
}

void SlurmSchedulerCollector::Record(Command c, const CommandResult& run, double seconds,
                                     Clock::time_point now, double now_unix) {
  CommandState& state = state_[c];
  state.last_duration_s = seconds;
  state.reason = ReasonOf(run);
  ++state.runs[state.reason];
  state.ok = run.status.ok();
  if (!state.ok) return;
  uint64_t rejected = 0;
  switch (c) {
    case kSqueue:
      state.families = SqueueFamilies(run.output, options_.include_user, rejected);
      break;
    case kSinfo:
      state.families = SinfoFamilies(run.output, rejected);
      break;
    case kSdiag:
      state.families = SdiagFamilies(run.output, rejected);
      break;
    case kSshare:
      state.families = SshareFamilies(run.output, options_.include_user, rejected);
      break;
    case kCommandCount:
      break;
  }
  state.rejected_lines += rejected;
  if (rejected > 0) {
    Log(LogLevel::kDebug, "slurm: output lines not parsed",
        {{"command", kCommandNames[c]}, {"lines", std::to_string(rejected)}});
  }
  state.last_success = now;
  state.last_success_unix = now_unix;
}

void SlurmSchedulerCollector::LogFailures(bool up, const std::vector<std::pair<int, std::string>>& errors) {
  if (!up && was_up_) {
    for (const auto& [c, message] : errors) {
      Log(LogLevel::kWarn, "slurm: command failed; slurm_up is 0",
          {{"command", kCommandNames[c]}, {"reason", state_[c].reason}, {"message", message}});
    }
  } else if (up && !was_up_) {
    Log(LogLevel::kInfo, "slurm: squeue and sinfo answer again");
  } else {
    for (const auto& [c, message] : errors) {
      Log(LogLevel::kDebug, "slurm: command failed",
          {{"command", kCommandNames[c]}, {"reason", state_[c].reason}, {"message", message}});
    }
  }
  was_up_ = up;
}

void SlurmSchedulerCollector::AppendFamilies(bool up, Clock::time_point now, std::vector<MetricFamily>& out) {
  MetricFamily f_up = NewSlurmFamily("gpuscope_slurm_up");
  AddSample(f_up, {}, up ? 1 : 0);
  MetricFamily f_error = NewSlurmFamily("gpuscope_slurm_error_info");
  MetricFamily f_success = NewSlurmFamily("gpuscope_slurm_command_success");
  MetricFamily f_duration = NewSlurmFamily("gpuscope_slurm_command_duration_seconds");
  MetricFamily f_runs = NewSlurmFamily("gpuscope_slurm_command_runs_total");
  MetricFamily f_last = NewSlurmFamily("gpuscope_slurm_command_last_success_timestamp_seconds");
  MetricFamily f_age = NewSlurmFamily("gpuscope_slurm_data_age_seconds");
  MetricFamily f_rejected = NewSlurmFamily("gpuscope_slurm_parse_rejected_lines_total");
  std::vector<MetricFamily> data;
  for (int c = 0; c < kCommandCount; ++c) {
    CommandState& state = state_[c];
    if (!state.enabled) continue;
    std::string command(kCommandNames[c]);
    AddSample(f_success, {{"command", command}}, state.ok ? 1 : 0);
    if (!state.ok) AddSample(f_error, {{"command", command}, {"reason", state.reason}}, 1);
    AddSample(f_duration, {{"command", command}}, state.last_duration_s);
    for (const auto& [result, n] : state.runs) {
      AddSample(f_runs, {{"command", command}, {"result", result}}, static_cast<double>(n));
    }
    AddSample(f_rejected, {{"command", command}}, static_cast<double>(state.rejected_lines));
    if (!state.last_success) continue;
    AddSample(f_last, {{"command", command}}, state.last_success_unix);
    const double age = std::chrono::duration<double>(now - *state.last_success).count();
    if (state.ok || now - *state.last_success <= options_.max_staleness) {
      AddSample(f_age, {{"command", command}}, state.ok ? 0 : age);
      for (const MetricFamily& f : state.families) data.push_back(f);  // copies: the cache keeps its own
    } else {
      state.families.clear();  // too old to be shown as current; never served again
    }
  }
  for (MetricFamily* f : {&f_up, &f_error, &f_success, &f_duration, &f_runs, &f_last, &f_age, &f_rejected}) {
    out.push_back(std::move(*f));
  }
  for (MetricFamily& f : data) out.push_back(std::move(f));
}

Status SlurmSchedulerCollector::Collect(std::vector<MetricFamily>& out) {
  const std::array<std::vector<std::string>, kCommandCount> argv = {{
      {options_.squeue_path, "-h", "-r", "-o", std::string(kSqueueFormat)},
      {options_.sinfo_path, "-N", "-h", "-O", std::string(kSinfoFormat)},
      {options_.sdiag_path},
      {options_.sshare_path, "-h", "-P", "-a", "-o", std::string(kSshareFields)},
  }};
  // All four at once: a cycle lasts at most one timeout even when slurmctld does not answer.
  std::array<std::future<std::pair<CommandResult, double>>, kCommandCount> runs;
  for (int c = 0; c < kCommandCount; ++c) {
    if (!state_[c].enabled) continue;
    runs[c] = std::async(std::launch::async, [this, args = argv[c]] {
      Clock::time_point began = Clock::now();
      CommandResult result = RunCommandWithTimeout(args, options_.timeout, options_.max_output_bytes);
      return std::make_pair(std::move(result), std::chrono::duration<double>(Clock::now() - began).count());
    });
  }
  const Clock::time_point now = Clock::now();
  const double now_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<std::pair<int, std::string>> errors;  // command, message
  int not_found = 0;
  int enabled = 0;
  for (int c = 0; c < kCommandCount; ++c) {
    if (!state_[c].enabled) continue;
    ++enabled;
    auto [run, seconds] = runs[c].get();
    Record(static_cast<Command>(c), run, seconds, now, now_unix);
    if (!state_[c].ok) {
      if (state_[c].reason == "not_found") ++not_found;
      errors.emplace_back(c, run.status.message());
    }
  }
  if (enabled > 0 && not_found == enabled) {
    Log(LogLevel::kDebug, "slurm: no Slurm client commands on this host");
    return Status::NoData("Slurm client commands not found");
  }

  const bool up = state_[kSqueue].ok && state_[kSinfo].ok;
  LogFailures(up, errors);
  AppendFamilies(up, now, out);
  if (!up) {
    std::string why;
    for (const auto& [c, message] : errors) {
      if (c != kSqueue && c != kSinfo) continue;
      if (!why.empty()) why += "; ";
      why += message;
    }
    return Status::Unavailable("slurm unreachable: " + why);
  }
  return Status::Ok();
}

}  // namespace gpuscope
