#include "src/cli/inventory_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "src/cli/prometheus_flags.h"
#include "src/cli/table_output.h"
#include "src/cli/text_format.h"

namespace gpuscope {
namespace {

// The labels that say which card and which slot; every other label (hpc_job, driver version, ...) is
// aggregated away in Prometheus so job churn does not multiply the series.
constexpr char kIdentity[] = "UUID, Hostname, hostname, gpu, pci_bus_id";

const char* const kSections[] = {"all", "gpus", "events", "rma"};

}  // namespace

double InventoryStep(double start, double end, double requested, int target_points) {
  if (requested > 0) return requested;
  const double minutes = std::ceil((end - start) / std::max(1, target_points) / 60.0);
  return std::max(1.0, minutes) * 60.0;
}

Status QueryRangeChunked(PrometheusClient& prometheus, const std::string& expr, double start, double end,
                         double step, int max_points, std::vector<PromSeries>* series) {
  series->clear();
  std::map<std::map<std::string, std::string>, size_t> index;
  const double chunk = step * (std::max(1, max_points) - 1);
  for (double from = start; from <= end; from += chunk + step) {
    std::vector<PromSeries> part;
    Status status = prometheus.QueryRange(expr, from, std::min(end, from + chunk), step, &part);
    if (!status.ok()) return status;
    for (PromSeries& s : part) {
      auto [it, inserted] = index.emplace(s.labels, series->size());
      if (inserted) {
        series->push_back(std::move(s));
      } else {
        std::vector<std::pair<double, double>>& points = (*series)[it->second].points;
        points.insert(points.end(), s.points.begin(), s.points.end());
      }
    }
  }
  return Status::Ok();
}

Status CollectInventory(PrometheusClient& prometheus, InventoryQueryOptions* options, InventoryInput* input) {
  options->step = InventoryStep(options->start, options->end, options->step, options->target_points);
  const std::string by = std::string("max by (") + kIdentity;
  const std::pair<std::string, std::vector<PromSeries>*> queries[] = {
      {by + ", serial, modelName) (gpuscope_gpu_info)", &input->gpu_info},
      {by + ") (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL)", &input->dbe},
      // Only the steps with a failure: an onset after an absence is counted as one (see inventory_history.h).
      {by + ") (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0", &input->remap_failure},
      {by + ") (gpuscope_xid_errors_total{xid=\"79\"})", &input->xid79},
  };
  for (const auto& [expr, into] : queries) {
    Status status = QueryRangeChunked(prometheus, expr, options->start, options->end, options->step,
                                      options->max_points_per_query, into);
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

std::string RenderInventory(const InventoryReport& report, TableFormat format, const std::string& section) {
  const std::pair<std::string, Table> tables[] = {
      {"gpus", PlacementsTable(report)}, {"events", EventsTable(report)}, {"rma", RmaTable(report)}};
  if (format == TableFormat::kJson) {
    nlohmann::json doc;
    doc["from"] = FormatUtc(report.start);
    doc["to"] = FormatUtc(report.end);
    doc["step_seconds"] = report.step;
    for (const auto& [name, table] : tables) {
      if (section == "all" || section == name) doc[name] = nlohmann::json::parse(RenderTableJson(table));
    }
    return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string out;
  if (format == TableFormat::kText) {
    out = "GPU inventory from " + FormatUtc(report.start) + " to " + FormatUtc(report.end) +
          ", sampled every " + std::to_string(std::lround(report.step)) + " s\n";
  }
  const std::map<std::string, std::string> titles = {
      {"gpus", "GPUs: where each card was (one row per card and slot)"},
      {"events", "Events: replacements, moves, RMA candidates and returns"},
      {"rma", "RMA candidates: repeated double-bit ECC errors, row-remap failures, XID 79"}};
  for (const auto& [name, table] : tables) {
    if (section != "all" && section != name) continue;
    if (format == TableFormat::kCsv) {
      // One CSV table per section; with all three, each follows a "# name" line and a blank line.
      if (section == "all") out += (out.empty() ? "# " : "\n# ") + name + "\n";
      out += RenderTableCsv(table);
      continue;
    }
    out += "\n" + titles.at(name) + "\n";
    out += table.rows.empty() ? "  none\n" : RenderTableText(table);
  }
  return out;
}

namespace {

int Usage(const std::string& message) {
  std::cerr << "gpuscope inventory: " << message << "\n";
  return kExitUsage;
}

int RunInventory(const CommandLine& line) {
  if (!line.positional.empty()) return Usage("takes no arguments (see gpuscope inventory --help)");
  TableFormat format = TableFormat::kText;
  Status status = ParseTableFormat(line.flags.at("format"), &format);
  if (!status.ok()) return Usage(status.message());
  const std::string section = line.flags.at("section");
  if (std::find(std::begin(kSections), std::end(kSections), section) == std::end(kSections)) {
    return Usage("--section must be all, gpus, events or rma, not '" + section + "'");
  }
  InventoryQueryOptions query;
  query.end = UnixNow();
  if (!line.flags.at("to").empty() && !ParseTimestamp(line.flags.at("to"), &query.end).ok()) {
    return Usage("--to: '" + line.flags.at("to") +
                 "' is not a time (Unix seconds, 2026-11-03 or 2026-11-03T14:00:00Z)");
  }
  double lookback = 0;
  if (!ParsePositiveSeconds(line.flags.at("lookback"), &lookback)) {
    return Usage("--lookback must be a positive number of seconds");
  }
  query.start = query.end - lookback;
  if (!line.flags.at("from").empty() && !ParseTimestamp(line.flags.at("from"), &query.start).ok()) {
    return Usage("--from: '" + line.flags.at("from") +
                 "' is not a time (Unix seconds, 2026-11-03 or 2026-11-03T14:00:00Z)");
  }
  if (!(query.start < query.end)) return Usage("--from must be before --to");
  if (line.flags.at("resolution") != "auto" &&
      !ParsePositiveSeconds(line.flags.at("resolution"), &query.step)) {
    return Usage("--resolution must be auto or a positive number of seconds");
  }
  InventoryOptions analysis;
  if (!ParsePositiveSeconds(line.flags.at("max-gap"), &analysis.max_gap_seconds)) {
    return Usage("--max-gap must be a positive number of seconds");
  }
  if (!ParsePositiveSeconds(line.flags.at("dbe-threshold"), &analysis.dbe_threshold)) {
    return Usage("--dbe-threshold must be a positive number of errors");
  }
  InventoryReport nothing;  // the filter's regex is checked before any query
  status = FilterInventory(line.flags.at("node"), false, &nothing);
  if (!status.ok()) return Usage(status.message());
  std::unique_ptr<PrometheusClient> prometheus;
  status = MakePrometheusClient(line, &prometheus);
  if (!status.ok()) return Usage(status.message());

  InventoryInput input;
  status = CollectInventory(*prometheus, &query, &input);
  if (!status.ok()) {
    std::cerr << "gpuscope inventory: " << status.message() << "\n";
    return kExitFailed;
  }
  analysis.start = query.start;
  analysis.end = query.end;
  analysis.step = query.step;
  InventoryReport report = AnalyzeInventory(input, analysis);
  if (report.placements.empty()) {
    std::cerr << "gpuscope inventory: no gpuscope_gpu_info in Prometheus from " << FormatUtc(query.start)
              << " to " << FormatUtc(query.end) << " (see --from, --to, --lookback)\n";
    return kExitFailed;
  }
  status = FilterInventory(line.flags.at("node"), line.flags.at("rma-only") == "true", &report);
  if (!status.ok()) return Usage(status.message());  // not reached: checked above
  std::cout << RenderInventory(report, format, section);
  return kExitOk;
}

}  // namespace

Command InventoryCommand() {
  return {
      "inventory",
      "inventory [flags]",
      "the fleet's GPUs by serial and UUID over time: slots, replacements, moves, RMA candidates",
      "Reads gpuscope_gpu_info's history and prints where each card (UUID, serial) was and when, cards\n"
      "replaced in a slot (node/GPU index), cards moved between slots, RMA candidates (repeated\n"
      "double-bit ECC errors, a row-remap failure, XID 79) followed per card, and candidates that came\n"
      "back later, anywhere, with their errors since. Times are UTC; samples are taken every\n"
      "--resolution seconds, so a shorter absence or stay can be missed.\n",
      WithPrometheusFlags({
          {"from", "start: Unix seconds, 2026-11-03 or 2026-11-03T14:00:00Z (default: --to minus --lookback)",
           ""},
          {"to", "end, as --from (default: now)", ""},
          {"lookback", "seconds before --to to start at when --from is not given", "2592000"},
          {"node", "only cards ever placed on a node matching this regular expression (whole name)", ""},
          {"rma-only", "only RMA candidates", "", false},
          {"format", "table, csv or json", "table"},
          {"section", "all, gpus, events or rma", "all"},
          {"resolution", "seconds between samples, or auto (about 1000 per range)", "auto"},
          {"max-gap", "seconds a card may be absent from its slot and still be the same placement", "86400"},
          {"dbe-threshold", "double-bit ECC errors that make a card an RMA candidate", "2"},
      }),
      RunInventory};
}

}  // namespace gpuscope
