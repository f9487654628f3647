// TextfileCollector: metrics that site scripts write as *.prom files (health checks, burn-in results,
// firmware audits), merged into the agent's own, as node_exporter's textfile collector does: every
// cycle each regular file DIRECTORY/*.prom is read whole and parsed as text format 0.0.4
// (src/parsers/prom_text.h: counters, gauges, untyped; no explicit timestamps); its families go out with
// the agent's on /metrics, remote_write and OTLP. Writers must replace a file atomically (write a
// temporary file, then rename it over *.prom), as for node_exporter.
//
// A file is refused whole, logged once per distinct problem at warn level and counted in
// gpuscope_textfile_files_refused_total{reason}, and gpuscope_textfile_scrape_error is 1 for the cycle,
// when it is larger than the size cap (too_large), not valid UTF-8 (invalid_utf8), not valid text
// format (invalid), names a family of the agent's own (gpuscope_*, DCGM_*) or repeats a series, or
// disagrees on a family's type or help with an earlier file (conflict), or cannot be read (unreadable).
// The other files still count. gpuscope_textfile_mtime_seconds{file} is each file's modification time.
// No directory configured: NoData, nothing read.
//
// Thread-safety: Collect() from the scheduler thread only; Name() and Describe() from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "src/core/collector.h"

namespace gpuscope {

struct TextfileCollectorOptions {
  std::string directory;             // empty: the collector reads nothing
  size_t max_file_bytes = 4u << 20;  // larger files are refused whole
};

class TextfileCollector : public Collector {
 public:
  explicit TextfileCollector(TextfileCollectorOptions options);

  std::string_view Name() const override { return "textfile"; }
  // Ok with the files' families and the self-metrics; NoData without a directory; Unavailable (with the
  // self-metrics, scrape error 1) when the directory cannot be listed.
  Status Collect(std::vector<MetricFamily>& out) override;
  std::vector<MetricDescription> Describe() const override;

 private:
  // Counts the refusal and logs it when the file's problem changed since the last cycle.
  void Refuse(const std::string& file, const std::string& reason, const std::string& detail);

  TextfileCollectorOptions options_;
  std::map<std::string, uint64_t> refused_;          // by reason, since start
  std::map<std::string, std::string> last_problem_;  // by file: what was last logged
};

}  // namespace gpuscope
