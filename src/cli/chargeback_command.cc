#include "src/cli/chargeback_command.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/cli/prometheus_flags.h"
#include "src/cli/table_output.h"
#include "src/platform/command.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxCostsFileBytes = 1 << 20;
constexpr size_t kMaxSacctOutputBytes = 256u << 20;

// Slurm's GPU-hours per group over `range`, from sacct run with TZ=UTC (its times are then UTC).
Status SacctGpuHours(ChargebackGrouping grouping, const TimeRange& range,
                     std::map<std::string, double>* hours) {
  auto at = [](double t) {
    std::string s = FormatUtc(t);
    s.pop_back();  // sacct reads "YYYY-MM-DDTHH:MM:SS" in its time zone, UTC here
    return s;
  };
  CommandResult result = RunCommandWithTimeout(
      {"env", "TZ=UTC", "SLURM_TIME_FORMAT=%Y-%m-%dT%H:%M:%S", "sacct", "-X", "-n", "-P", "-a",
       "--format=JobID,Account,User,Partition,AllocTRES,Start,End", "-S", at(range.from), "-E", at(range.to)},
      std::chrono::seconds(60), kMaxSacctOutputBytes);
  if (!result.status.ok()) return Status::Unavailable("sacct failed: " + result.status.message());
  return ParseSacctGpuHours(result.output, grouping, range, hours);
}

int Fail(const std::string& message, int code) {
  std::cerr << "gpuscope chargeback: " << message << "\n";
  return code;
}

int RunChargeback(const CommandLine& line) {
  if (!line.positional.empty())
    return Fail("takes no arguments (see gpuscope chargeback --help)", kExitUsage);
  ChargebackOptions options;
  const std::string& month = line.flags.at("month");
  const std::string& from = line.flags.at("from");
  const std::string& to = line.flags.at("to");
  if (!month.empty()) {
    if (!from.empty() || !to.empty()) return Fail("give --month or --from/--to, not both", kExitUsage);
    Status status = ParseMonth(month, &options.range);
    if (!status.ok()) return Fail(status.message(), kExitUsage);
  } else {
    if (from.empty()) return Fail("give --month YYYY-MM or --from (and --to, default now)", kExitUsage);
    Status status = ParseTimestamp(from, &options.range.from);
    if (!status.ok()) return Fail("--from: " + status.message(), kExitUsage);
    options.range.to = UnixNow();
    if (!to.empty()) {
      status = ParseTimestamp(to, &options.range.to);
      if (!status.ok()) return Fail("--to: " + status.message(), kExitUsage);
    }
  }
  if (!(options.range.to > options.range.from)) return Fail("--to must be after --from", kExitUsage);
  // A month not over yet ends now: the report covers what has happened.
  options.range.to = std::min(options.range.to, UnixNow());
  if (!(options.range.to > options.range.from)) return Fail("the range starts in the future", kExitUsage);

  Status status = ParseGrouping(line.flags.at("by"), &options.grouping);
  if (!status.ok()) return Fail(status.message(), kExitUsage);
  TableFormat format;
  status = ParseTableFormat(line.flags.at("format"), &format);
  if (!status.ok()) return Fail("--format: " + status.message(), kExitUsage);
  double& scrape_interval = options.scrape_interval;
  if (!ParsePositiveSeconds(line.flags.at("scrape-interval"), &scrape_interval)) {
    return Fail("--scrape-interval must be a positive number of seconds", kExitUsage);
  }
  if (!ParsePositiveSeconds(line.flags.at("step"), &options.step) || options.step < 2 * scrape_interval) {
    return Fail("--step must be a number of seconds of at least two scrape intervals", kExitUsage);
  }
  options.selector = line.flags.at("selector");
  const bool with_sacct = line.flags.at("sacct") == "true";
  if (with_sacct && options.grouping == ChargebackGrouping::kNamespace) {
    return Fail("--sacct compares with Slurm's accounting: use it with --by account, user or partition",
                kExitUsage);
  }

  CostTable costs;
  const std::string& costs_path = line.flags.at("costs");
  if (!costs_path.empty()) {
    std::optional<std::string> text = ReadWholeFile(costs_path, kMaxCostsFileBytes);
    if (!text) return Fail("cannot read the cost table " + costs_path, kExitUsage);
    status = ParseCostTable(*text, &costs);
    if (!status.ok()) return Fail(costs_path + ": " + status.message(), kExitUsage);
  }

  std::unique_ptr<PrometheusClient> prometheus;
  status = MakePrometheusClient(line, &prometheus);
  if (!status.ok()) return Fail(status.message(), kExitUsage);
  Usage usage;
  status = CollectChargebackUsage(*prometheus, options, &usage);
  if (!status.ok()) return Fail(status.message(), kExitFailed);
  std::vector<ChargebackRow> rows = SummariseUsage(usage, scrape_interval, costs);
  if (rows.empty()) {
    return Fail("no allocated GPUs between " + FormatUtc(options.range.from) + " and " +
                    FormatUtc(options.range.to) + " in " + line.flags.at("prometheus.url"),
                kExitFailed);
  }

  if (with_sacct) {
    std::map<std::string, double> sacct;
    status = SacctGpuHours(options.grouping, options.range, &sacct);
    if (!status.ok()) {
      std::cerr << "gpuscope chargeback: no comparison with Slurm's accounting: " << status.message() << "\n";
    } else {
      for (ChargebackRow& row : rows) {
        auto it = sacct.find(row.group);
        row.sacct_gpu_hours = it == sacct.end() ? 0.0 : it->second;
      }
      for (const auto& [group, hours] : sacct) {
        bool seen = false;
        for (const ChargebackRow& row : rows) seen = seen || row.group == group;
        if (!seen) {
          ChargebackRow missing;
          missing.group = group;
          missing.sacct_gpu_hours = hours;
          rows.push_back(missing);
        }
      }
    }
  }

  // Models without a price: said once, with their hours, and the cost cells of their groups left empty.
  std::map<std::string, std::vector<std::string>> unpriced;
  for (const ChargebackRow& row : rows) {
    for (const std::string& model : row.unpriced_models)
      unpriced[model].push_back(row.group.empty() ? "(none)" : row.group);
  }
  if (!unpriced.empty()) {
    std::cerr << "gpuscope chargeback: "
              << (costs_path.empty() ? std::string("no --costs given, so no price for")
                                     : "the cost table " + costs_path + " has no price for")
              << ":";
    for (const auto& [model, groups] : unpriced) {
      std::cerr << "\n  " << model << " (used by ";
      for (size_t i = 0; i < groups.size(); ++i) std::cerr << (i ? ", " : "") << groups[i];
      std::cerr << ")";
    }
    std::cerr << "\nthe cost of those groups is left empty.\n";
  }

  const Table table =
      ChargebackTable(rows, options.grouping, costs.currency, with_sacct, format == TableFormat::kText);
  if (format == TableFormat::kText) {
    std::cout << "GPU chargeback by " << GroupingLabel(options.grouping) << ", "
              << FormatUtc(options.range.from) << " .. " << FormatUtc(options.range.to) << " (windows of "
              << options.step << " s, samples x " << scrape_interval << " s)\n\n";
  }
  std::cout << RenderTable(table, format);
  return kExitOk;
}

}  // namespace

Status CollectChargebackUsage(PrometheusClient& prometheus, const ChargebackOptions& options, Usage* usage) {
  usage->clear();
  const std::string label = GroupingLabel(options.grouping);
  for (const WindowBatch& batch : PlanWindows(options.range, options.step, options.windows_per_query)) {
    for (ChargebackFigure figure : kChargebackFigures) {
      const std::string query =
          ChargebackQuery(figure, options.grouping, batch.step, options.scrape_interval, options.selector);
      std::vector<PromSeries> answer;
      Status status = batch.Windows() == 1 ? prometheus.Query(query, batch.last_end, &answer)
                                           : prometheus.QueryRange(query, batch.first_end, batch.last_end,
                                                                   batch.step, &answer);
      if (!status.ok()) return status;
      AddAnswer(figure, label, answer, usage);
    }
  }
  return Status::Ok();
}

Command ChargebackCommand() {
  return {
      "chargeback",
      "chargeback (--month YYYY-MM | --from TIME [--to TIME]) [--by account|user|partition|namespace] "
      "[--costs costs.yaml] [flags]",
      "GPU-hours allocated, used and idle, energy and cost per account, user, partition or namespace",
      "Sums, per group and GPU model, the GPU-hours allocated (samples of gpuscope_gpu_allocation_info x\n"
      "the scrape interval), used (the same weighted by utilisation), idle (gpuscope_gpu_allocated_idle),\n"
      "the energy (gpuscope_gpu_energy_joules_total's rise, across resets) and the cost from the cost table, "
      "over\n"
      "windows of --step seconds. TIME: 2026-11-03, 2026-11-03T12:00:00Z or Unix seconds.\n"
      "Exit: 0 done, 1 a query failed or found no allocated GPU, 2 bad flags or cost table.\n",
      WithPrometheusFlags(
          {{"month", "a calendar month in UTC, YYYY-MM", ""},
           {"from", "start of the range", ""},
           {"to", "end of the range (default now)", ""},
           {"by", "account, user, partition (Slurm) or namespace (Kubernetes)", "account"},
           {"costs", "cost table YAML (price per GPU-hour and per kWh for each GPU model)", ""},
           {"format", "table, csv or json", "table"},
           {"step", "window length in seconds (each query sums raw samples per window)", "3600"},
           {"scrape-interval", "Prometheus' scrape interval of the agents, in seconds", "30"},
           {"selector", "extra PromQL label matchers for every series, e.g. cluster=\"a\"", ""},
           {"sacct", "also print Slurm's GPU-hours (sacct) and the difference", "", false}}),
      RunChargeback};
}

}  // namespace gpuscope
