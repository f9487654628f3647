// Formats from Slurm's source: slurmstepd (src/slurmd/slurmstepd/req.c) prints
// "*** %s ON %s CANCELLED AT %s DUE TO TIME LIMIT|PREEMPTION|NODE FAILURE, SEE SLURMCTLD LOG FOR
// DETAILS|JOB REQUEUE ***" or "*** %s ON %s CANCELLED AT %s ***" (scancel), where %s is "JOB <id>" or
// "STEP <job>.<step>"; srun (src/srun) prints "*** STEP %u.%u CANCELLED AT %s DUE TO TIME LIMIT ***";
// older releases leave out " ON node". The cgroup plugins print "Detected %u oom_kill event(s) in
// StepId=%u.%u" (older: "oom-kill event(s) in step %u.%u cgroup"). srun's task exit reporting prints
// "srun: error: NODE: task(s) LIST: Exited with exit code N" or ": SIGNAL NAME" (e.g. "Killed").
#include "src/events/classifiers/slurm_lines.h"

#include <string>

#include "src/events/classifiers/kernel_text.h"
#include "src/events/classifiers/text.h"
#include "src/parsers/text.h"

namespace gpuscope {
namespace {

using classifier_text::Find;
using classifier_text::ParseDecimal;
using kernel_text::CleanField;
using kernel_text::kMaxNameBytes;
using kernel_text::LeadingDigits;

struct StepRef {
  std::string job_id;
  std::string step_id;
};

// Parses "42", "42.0", "42.batch", "42+1.0" (het job component dropped) from the front of `s`.
std::optional<StepRef> TakeStepRef(std::string_view& s) {
  std::string_view job = LeadingDigits(s);
  if (!ParseDecimal(job)) return std::nullopt;
  StepRef ref{std::string(job), ""};
  s.remove_prefix(job.size());
  if (s.starts_with('+')) {
    s.remove_prefix(1);
    s.remove_prefix(LeadingDigits(s).size());
  }
  if (s.starts_with('.')) {
    s.remove_prefix(1);
    size_t n = 0;
    while (n < s.size() && n < 16 && (classifier_text::IsDigit(s[n]) || (s[n] >= 'a' && s[n] <= 'z'))) ++n;
    ref.step_id = std::string(s.substr(0, n));
    s.remove_prefix(n);
  }
  return ref;
}

Event Interruption(EventSeverity severity, std::string summary) {
  Event event;
  event.event_class = "slurm_interruption";
  event.severity = severity;
  event.summary = std::move(summary);
  return event;
}

}  // namespace

std::optional<Event> ClassifySlurmCancelLine(std::string_view line) {
  size_t pos = Find(line, "*** ");
  if (pos == std::string_view::npos) return std::nullopt;
  std::string_view s = line.substr(pos + 4);
  bool is_step;
  if (s.starts_with("JOB ")) {
    is_step = false;
  } else if (s.starts_with("STEP ")) {
    is_step = true;
  } else {
    return std::nullopt;
  }
  s.remove_prefix(is_step ? 5 : 4);
  std::optional<StepRef> ref = TakeStepRef(s);
  if (!ref) return std::nullopt;
  size_t close = Find(s, " ***");
  if (close == std::string_view::npos) return std::nullopt;
  s = s.substr(0, close);

  std::string node;
  if (s.starts_with(" ON ")) {
    std::string_view n = s.substr(4);
    n = n.substr(0, n.find(' '));
    node = CleanField(n, kMaxNameBytes);
  }
  std::string reason;
  std::string signal;
  EventSeverity severity = EventSeverity::kWarning;
  size_t due = Find(s, " DUE TO ");
  std::string_view why = due == std::string_view::npos ? std::string_view() : s.substr(due + 8);
  if (Find(s, " STEPD TERMINATED ") != std::string_view::npos) {
    reason = "stepd_terminated";
    severity = EventSeverity::kError;
  } else if (Find(s, " CANCELLED AT ") != std::string_view::npos) {
    if (why.empty()) {
      reason = "cancelled";
    } else if (why.starts_with("TIME LIMIT")) {
      reason = "time_limit";
    } else if (why.starts_with("PREEMPTION")) {
      reason = "preemption";
    } else if (why.starts_with("NODE FAILURE")) {
      reason = "node_failure";
      severity = EventSeverity::kError;
    } else if (why.starts_with("JOB REQUEUE")) {
      reason = "job_requeue";
    } else if (why.starts_with("SIGNAL")) {
      reason = "signal";
      signal = CleanField(why.substr(6), kMaxNameBytes);
    } else {
      reason = "other";
    }
  } else if (s.starts_with(" FAILED")) {
    reason = "failed";
    severity = EventSeverity::kError;
  } else {
    return std::nullopt;
  }

  std::string what = is_step ? "Slurm step " + ref->job_id + "." + ref->step_id : "Slurm job " + ref->job_id;
  std::string summary = what + (node.empty() ? "" : " on " + node) + " interrupted: " + reason;
  Event event = Interruption(severity, std::move(summary));
  event.fields.emplace_back("job_id", ref->job_id);
  if (!ref->step_id.empty()) event.fields.emplace_back("step_id", ref->step_id);
  if (!node.empty()) event.fields.emplace_back("node", std::move(node));
  event.fields.emplace_back("reason", std::move(reason));
  if (!signal.empty()) event.fields.emplace_back("signal", std::move(signal));
  return event;
}

std::optional<Event> ClassifySlurmOomLine(std::string_view line) {
  size_t pos = Find(line, "oom_kill event");
  if (pos == std::string_view::npos) pos = Find(line, "oom-kill event");
  if (pos == std::string_view::npos) return std::nullopt;
  // The count: "Detected N " just before.
  std::string count;
  std::string_view before = line.substr(0, pos);
  if (before.ends_with(' ')) {
    before.remove_suffix(1);
    size_t n = 0;
    while (n < before.size() && n < 10 && classifier_text::IsDigit(before[before.size() - 1 - n])) ++n;
    if (n > 0) count = std::string(before.substr(before.size() - n));
  }
  std::string_view after = line.substr(pos);
  std::optional<StepRef> ref;
  size_t id = Find(after, "StepId=");
  if (id != std::string_view::npos) {
    std::string_view s = after.substr(id + 7);
    ref = TakeStepRef(s);
  } else if ((id = Find(after, " in step ")) != std::string_view::npos) {
    std::string_view s = after.substr(id + 9);
    ref = TakeStepRef(s);
  }
  if (!ref) return std::nullopt;
  std::string summary = "Slurm " + std::string(ref->step_id.empty() ? "job " : "step ") + ref->job_id +
                        (ref->step_id.empty() ? "" : "." + ref->step_id) + " interrupted: oom_kill";
  Event event = Interruption(EventSeverity::kError, std::move(summary));
  event.fields.emplace_back("job_id", ref->job_id);
  if (!ref->step_id.empty()) event.fields.emplace_back("step_id", ref->step_id);
  event.fields.emplace_back("reason", "oom_kill");
  if (!count.empty()) event.fields.emplace_back("count", std::move(count));
  return event;
}

std::optional<Event> ClassifySrunTaskLine(std::string_view line) {
  size_t pos = Find(line, "srun: error: ");
  if (pos == std::string_view::npos) return std::nullopt;
  std::string_view s = line.substr(pos + 13);
  // "NODE: task 3: WHAT" or "NODE: tasks 0-3,5: WHAT".
  size_t colon = s.find(": task");
  if (colon == std::string_view::npos || colon == 0 || colon > 128) return std::nullopt;
  std::string_view node = s.substr(0, colon);
  if (node.find(' ') != std::string_view::npos) return std::nullopt;
  s.remove_prefix(colon + 6);
  if (s.starts_with('s')) s.remove_prefix(1);
  if (!s.starts_with(' ')) return std::nullopt;
  s.remove_prefix(1);
  size_t end = s.find(": ");
  if (end == std::string_view::npos || end == 0 || end > 256) return std::nullopt;
  std::string_view tasks = s.substr(0, end);
  for (char c : tasks) {
    if (!classifier_text::IsDigit(c) && c != '-' && c != ',') return std::nullopt;
  }
  const std::string_view what = text::Trim(s.substr(end + 2));
  if (what.empty()) return std::nullopt;

  std::string node_text = CleanField(node, kMaxNameBytes);
  std::string tasks_text = CleanField(tasks, kMaxNameBytes);
  constexpr std::string_view kExited = "Exited with exit code ";
  Event event;
  if (what.starts_with(kExited)) {
    std::string_view code = LeadingDigits(what.substr(kExited.size()));
    if (!ParseDecimal(code)) return std::nullopt;
    event = Interruption(EventSeverity::kError, "Slurm task(s) " + tasks_text + " on " + node_text +
                                                    " exited with code " + std::string(code));
    event.fields.emplace_back("node", std::move(node_text));
    event.fields.emplace_back("tasks", std::move(tasks_text));
    event.fields.emplace_back("reason", "task_exit");
    event.fields.emplace_back("exit_code", std::string(code));
    return event;
  }
  std::string signal = CleanField(what, kMaxNameBytes);
  event = Interruption(EventSeverity::kError,
                       "Slurm task(s) " + tasks_text + " on " + node_text + " ended by signal: " + signal);
  event.fields.emplace_back("node", std::move(node_text));
  event.fields.emplace_back("tasks", std::move(tasks_text));
  event.fields.emplace_back("reason", "task_signal");
  event.fields.emplace_back("signal", std::move(signal));
  return event;
}

}  // namespace gpuscope
