#include "src/collectors/textfile/textfile_collector.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/core/log.h"
#include "src/core/utf8.h"
#include "src/parsers/prom_text.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr std::string_view kScrapeError = "gpuscope_textfile_scrape_error";
constexpr std::string_view kMtime = "gpuscope_textfile_mtime_seconds";
constexpr std::string_view kRefused = "gpuscope_textfile_files_refused_total";
// The reasons of gpuscope_textfile_files_refused_total, every one reported from the start (0 until seen).
constexpr std::string_view kReasons[] = {"too_large", "invalid_utf8", "invalid", "conflict", "unreadable"};

const std::vector<MetricDescription>& Descriptions() {
  static const std::vector<MetricDescription> kDescriptions = {
      {std::string(kScrapeError),
       MetricType::kGauge,
       "1 when a *.prom file of the textfile directory was refused this cycle (or the directory could not "
       "be listed), else 0: node_exporter's node_textfile_scrape_error.",
       "",
       {},
       "--collector.textfile.directory"},
      {std::string(kMtime),
       MetricType::kGauge,
       "Modification time of each *.prom file read from the textfile directory.",
       "seconds",
       {"file"},
       "stat(2)"},
      {std::string(kRefused),
       MetricType::kCounter,
       "*.prom files refused whole by the textfile collector, by reason: too_large (over the size cap), "
       "invalid_utf8, invalid (not text format 0.0.4, or a timestamp, histogram or summary), conflict (a "
       "family of the agent's own, a repeated series, or another type or help than an earlier file), "
       "unreadable.",
       "",
       {"reason"},
       "--collector.textfile.directory"},
  };
  return kDescriptions;
}

std::vector<std::string> LabelNames(const Sample& sample) {
  std::vector<std::string> names;
  for (const auto& [name, value] : sample.labels) names.push_back(name);
  return names;
}

std::string SeriesKey(const Labels& labels) {
  std::string key;
  for (const auto& [name, value] : labels) {
    key.append(name);
    key.push_back('\xff');
    key.append(value);
    key.push_back('\xfe');
  }
  return key;
}

// The families of all accepted files so far, merged by name.
struct Merged {
  std::vector<MetricFamily> families;
  std::vector<bool> explicit_help;
  std::unordered_map<std::string, size_t> index;
  std::vector<std::set<std::string>> series;

  // Why `file_families` cannot join what is merged; empty when they can.
  std::string Conflict(const std::vector<MetricFamily>& file_families) const {
    for (const MetricFamily& family : file_families) {
      if (family.name.starts_with("gpuscope_") || family.name.starts_with("DCGM_")) {
        return family.name + " is a name of the agent's own";
      }
      auto it = index.find(family.name);
      if (it == index.end()) continue;
      const MetricFamily& earlier = families[it->second];
      if (earlier.type != family.type) return family.name + " has another type in an earlier file";
      if (explicit_help[it->second] && !family.help.empty() && earlier.help != family.help) {
        return family.name + " has another help in an earlier file";
      }
      if (LabelNames(earlier.samples.front()) != LabelNames(family.samples.front())) {
        return family.name + " has other label names, or another order, in an earlier file";
      }
      for (const Sample& sample : family.samples) {
        if (series[it->second].contains(SeriesKey(sample.labels))) {
          return family.name + " repeats a series of an earlier file";
        }
      }
    }
    return "";
  }

  void Add(std::vector<MetricFamily> file_families, const std::string& file) {
    for (MetricFamily& family : file_families) {
      auto [it, inserted] = index.try_emplace(family.name, families.size());
      if (inserted) {
        families.emplace_back();
        explicit_help.push_back(false);
        series.emplace_back();
        families.back().name = family.name;
        families.back().type = family.type;
      }
      const size_t i = it->second;
      if (!family.help.empty() && !explicit_help[i]) {
        families[i].help = family.help;
        explicit_help[i] = true;
      }
      if (families[i].help.empty()) families[i].help = "Metric read from " + file + " (textfile collector).";
      for (Sample& sample : family.samples) {
        series[i].insert(SeriesKey(sample.labels));
        families[i].samples.push_back(std::move(sample));
      }
    }
  }
};

}  // namespace

TextfileCollector::TextfileCollector(TextfileCollectorOptions options) : options_(std::move(options)) {
  for (std::string_view reason : kReasons) refused_[std::string(reason)] = 0;
}

std::vector<MetricDescription> TextfileCollector::Describe() const { return Descriptions(); }

void TextfileCollector::Refuse(const std::string& file, const std::string& reason,
                               const std::string& detail) {
  ++refused_[reason];
  const std::string problem = reason + ": " + detail;
  auto [it, inserted] = last_problem_.try_emplace(file, problem);
  if (!inserted && it->second == problem) return;  // logged already; the counter keeps counting
  it->second = problem;
  Log(LogLevel::kWarn, "textfile collector refused a file",
      {{"file", file}, {"reason", reason}, {"error", detail}});
}

Status TextfileCollector::Collect(std::vector<MetricFamily>& out) {
  if (options_.directory.empty()) return Status::NoData("no textfile directory configured");
  namespace fs = std::filesystem;
  const auto& d = Descriptions();
  MetricFamily scrape_error = FamilyOf(d[0]);
  MetricFamily mtimes = FamilyOf(d[1]);
  bool failed = false;
  Status status = Status::Ok();

  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(options_.directory, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 5 && name.ends_with(".prom")) names.push_back(name);
  }
  if (ec) {
    failed = true;
    status = Status::Unavailable("textfile directory " + options_.directory + ": " + ec.message());
    names.clear();
  }
  std::sort(names.begin(), names.end());

  Merged merged;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    const std::string path = options_.directory + "/" + name;
    seen.insert(name);
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // removed since the listing
      failed = true;
      Refuse(name, "unreadable", std::strerror(errno));
      continue;
    }
    if (!S_ISREG(st.st_mode)) continue;  // a directory or socket named *.prom is not a metrics file
    if (static_cast<uint64_t>(st.st_size) > options_.max_file_bytes) {
      failed = true;
      Refuse(name, "too_large",
             std::to_string(st.st_size) + " bytes, the cap is " + std::to_string(options_.max_file_bytes));
      continue;
    }
    std::string content;
    if (const int err = ReadFileInto(path, &content, options_.max_file_bytes + 1); err != 0) {
      if (err == ENOENT) continue;
      failed = true;
      Refuse(name, "unreadable", std::strerror(err));
      continue;
    }
    if (content.size() > options_.max_file_bytes) {  // grew since stat
      failed = true;
      Refuse(name, "too_large", "more than " + std::to_string(options_.max_file_bytes) + " bytes");
      continue;
    }
    if (!IsValidUtf8(content)) {
      failed = true;
      Refuse(name, "invalid_utf8", ParsePromText(content).error);
      continue;
    }
    PromTextParse parsed = ParsePromText(content);
    if (!parsed.error.empty()) {
      failed = true;
      Refuse(name, "invalid", parsed.error);
      continue;
    }
    if (std::string conflict = merged.Conflict(parsed.families); !conflict.empty()) {
      failed = true;
      Refuse(name, "conflict", conflict);
      continue;
    }
    if (auto was = last_problem_.find(name); was != last_problem_.end()) {
      Log(LogLevel::kInfo, "textfile collector reads a file it refused before", {{"file", name}});
      last_problem_.erase(was);
    }
    merged.Add(std::move(parsed.families), name);
    const double mtime =
        static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
    mtimes.samples.push_back({Labels{{"file", name}}, mtime});
  }
  // A file that is gone is forgotten: if it comes back with the same problem, that is logged again.
  std::erase_if(last_problem_, [&](const auto& entry) { return !seen.contains(entry.first); });

  for (MetricFamily& family : merged.families) out.push_back(std::move(family));
  scrape_error.samples.push_back({{}, failed ? 1.0 : 0.0});
  out.push_back(std::move(scrape_error));
  if (!mtimes.samples.empty()) out.push_back(std::move(mtimes));
  MetricFamily refused = FamilyOf(d[2]);
  for (const auto& [reason, count] : refused_) {
    refused.samples.push_back({Labels{{"reason", reason}}, static_cast<double>(count)});
  }
  out.push_back(std::move(refused));
  return status;
}

}  // namespace gpuscope
