#include "src/events/event_attribution.h"

#include <cctype>

namespace gpuscope {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Digits at the start of `s` (at most 20), with an optional "_<digits>" array task suffix.
std::string_view LeadingJobId(std::string_view s, bool allow_array) {
  size_t n = 0;
  while (n < s.size() && n < 20 && IsDigit(s[n])) ++n;
  if (n == 0) return {};
  if (allow_array && n + 1 < s.size() && s[n] == '_' && IsDigit(s[n + 1])) {
    size_t m = n + 1;
    while (m < s.size() && m - n < 12 && IsDigit(s[m])) ++m;
    return s.substr(0, m);
  }
  return s.substr(0, n);
}

}  // namespace

std::string JobIdFromPath(std::string_view path) {
  // Walk the components from the file name upwards: the file name is the most specific.
  while (!path.empty()) {
    size_t slash = path.rfind('/');
    std::string_view component = slash == std::string_view::npos ? path : path.substr(slash + 1);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
    if (component.starts_with("slurm-")) {
      std::string_view id = LeadingJobId(component.substr(6), true);
      if (!id.empty()) return std::string(id);
    }
    if (component.starts_with("job")) {
      std::string_view rest = component.substr(3);
      if (rest.starts_with('_') || rest.starts_with('-')) rest.remove_prefix(1);
      std::string_view id = LeadingJobId(rest, false);
      // "job_1234", "job_1234.log": the id must end the name or be followed by a separator.
      if (!id.empty() &&
          (id.size() == rest.size() || !std::isalnum(static_cast<unsigned char>(rest[id.size()])))) {
        return std::string(id);
      }
    }
  }
  return "";
}

EventAttribution AttributeEvent(const Event& event, std::string_view origin_path, const JobTable::View* jobs,
                                const GpuDirectory* gpus) {
  EventAttribution out;
  if (std::string_view bus = event.Field("pci_bus_id");
      !bus.empty() && gpus != nullptr && event.Field("nvswitch").empty()) {
    if (auto gpu = gpus->Find(bus)) {
      out.gpu = gpu->index;
      out.uuid = gpu->uuid;
    }
  }
  // An event that names its GPU by UUID (the agent's own detectors: a training rank's GPU).
  if (std::string_view uuid = event.Field("UUID"); out.gpu.empty() && !uuid.empty() && gpus != nullptr) {
    if (auto key = gpus->GpuKeyOfUuid(uuid)) {
      out.gpu = *key;
      out.uuid = std::string(uuid);
    }
  }
  out.job_id = std::string(event.Field("job_id"));
  if (out.job_id.empty()) out.job_id = JobIdFromPath(origin_path);
  if (out.job_id.empty() && !out.gpu.empty() && jobs != nullptr) {
    std::vector<const Allocation*> on = jobs->JobsOn(out.gpu);
    if (on.size() == 1) out.job_id = on.front()->job_id;  // a shared GPU names no single job
  }
  if (!out.job_id.empty() && jobs != nullptr) {
    if (const JobInfo* job = jobs->Job(out.job_id)) {
      out.user = job->user;
      out.account = job->account;
    }
  }
  return out;
}

}  // namespace gpuscope
