#include "src/collectors/process/process_collector.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string_view>
#include <vector>

#include "src/core/version.h"
#include "src/parsers/proc_stat.h"
#include "src/parsers/text.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

MetricFamily Single(const MetricDescription& d, double value) {
  MetricFamily family{d.name, d.help, d.type, d.unit, {}};
  family.samples.push_back({{}, value});
  return family;
}

const std::vector<MetricDescription>& Descriptions() {
  static const std::vector<MetricDescription> kDescriptions = {
      {"process_cpu_seconds_total",
       MetricType::kCounter,
       "User and system CPU time spent by the agent.",
       "seconds",
       {},
       "/proc/self/stat"},
      {"process_resident_memory_bytes",
       MetricType::kGauge,
       "Resident memory of the agent.",
       "bytes",
       {},
       "/proc/self/stat"},
      {"process_virtual_memory_bytes",
       MetricType::kGauge,
       "Virtual memory of the agent.",
       "bytes",
       {},
       "/proc/self/stat"},
      {"process_start_time_seconds",
       MetricType::kGauge,
       "Start time of the agent since the Unix epoch.",
       "seconds",
       {},
       "/proc/self/stat, /proc/stat btime"},
      {"process_open_fds",
       MetricType::kGauge,
       "Open file descriptors of the agent.",
       "",
       {},
       "/proc/self/fd"},
      {"process_max_fds", MetricType::kGauge, "File descriptor limit of the agent.", "", {}, "getrlimit"},
      {"gpuscope_build_info",
       MetricType::kInfo,
       "gpuscope build, as labels; the value is always 1.",
       "",
       {"version", "revision", "compiler"},
       "build"},
  };
  return kDescriptions;
}

}  // namespace

ProcessCollector::ProcessCollector(std::string self_dir, std::string proc_stat_path)
    : self_dir_(std::move(self_dir)), proc_stat_path_(std::move(proc_stat_path)) {}

std::optional<double> ProcessCollector::BootTimeSeconds() {
  if (!boot_time_seconds_) {
    const std::string stat = ReadWholeFile(proc_stat_path_, 1u << 20).value_or("");
    for (std::string_view rest = stat; !rest.empty();) {
      const size_t end = rest.find('\n');
      const std::string_view line = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      if (!line.starts_with("btime ")) continue;
      if (const auto btime = text::ParseWhole<uint64_t>(text::Trim(line.substr(6)))) {
        boot_time_seconds_ = static_cast<double>(*btime);
      }
      break;
    }
  }
  return boot_time_seconds_;
}

Status ProcessCollector::Collect(std::vector<MetricFamily>& out) {
  const auto& d = Descriptions();
  out.push_back(MetricFamily{d[6].name,
                             d[6].help,
                             d[6].type,
                             d[6].unit,
                             {{{{"version", std::string(Version())},
                                {"revision", std::string(Revision())},
                                {"compiler", std::string(Compiler())}},
                               1.0}}});

  const std::string stat_path = self_dir_ + "/stat";
  const std::optional<std::string> stat = ReadWholeFile(stat_path);
  const std::optional<std::vector<std::string_view>> fields = stat ? SplitProcStat(*stat) : std::nullopt;
  if (!fields) return Status::Unavailable("cannot parse " + stat_path);
  // utime is field 14, stime 15, starttime 22, vsize 23, rss 24; a missing one counts as 0.
  auto field = [&](int number) { return static_cast<double>(ProcStatNumber(*fields, number).value_or(0)); };
  double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  out.push_back(Single(d[0], (field(14) + field(15)) / ticks));
  out.push_back(Single(d[1], field(24) * page));
  out.push_back(Single(d[2], field(23)));
  if (const std::optional<double> boot = BootTimeSeconds())
    out.push_back(Single(d[3], *boot + field(22) / ticks));

  double open_fds = 0;
  if (DIR* dir = opendir((self_dir_ + "/fd").c_str())) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++open_fds;
    }
    closedir(dir);
    out.push_back(Single(d[4], open_fds - 1));  // minus the descriptor of this listing itself
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) out.push_back(Single(d[5], static_cast<double>(limit.rlim_cur)));
  return Status::Ok();
}

std::vector<MetricDescription> ProcessCollector::Describe() const { return Descriptions(); }

}  // namespace gpuscope
