#include "src/cli/chargeback_report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <set>

#include "src/cli/text_format.h"
#include "src/core/yaml_config.h"

namespace gpuscope {
namespace {

std::string Join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// A PromQL range duration one millisecond shorter than the window: Prometheus 2 selects [t - d, t] and
// Prometheus 3 (t - d, t], so a sample exactly on a window boundary would count in two windows on 2.x;
// with d - 1 ms it counts once on both (only a sample exactly 1 ms after a boundary is left out, on 3.x).
std::string RangeOf(double window_seconds) {
  const int64_t ms = std::llround(window_seconds * 1000.0) - 1;
  return "[" + std::to_string(std::max<int64_t>(ms, 1)) + "ms]";
}

// The energy a counter series recorded in the window: the difference between its last sample in the
// window and its last sample before the window (looking back kEnergyLookbackSeconds, or one window when
// longer), which bridges a scrape gap or agent restart across the window's start exactly; where there is
// no earlier sample (the series starts in the window) or the counter reset in the window or the lookback
// before it (a driver reload), increase() over the window: it counts a reset as a new start, and its
// extrapolation adds at most half a scrape interval at a series' start or end.
constexpr double kEnergyLookbackSeconds = 3600;

std::string EnergyOfWindow(const std::string& series, double window_seconds) {
  const double lookback = std::max(window_seconds, kEnergyLookbackSeconds);
  const std::string w = RangeOf(window_seconds);
  const std::string back = "[" + std::to_string(std::llround(lookback * 1000.0)) + "ms] offset " +
                           std::to_string(std::llround(window_seconds * 1000.0)) + "ms";
  return "((last_over_time(" + series + w + ") - last_over_time(" + series + back + ")) unless resets(" +
         series + RangeOf(window_seconds + lookback) + ") > 0) or increase(" + series + w + ")";
}

std::string Matchers(std::string base, const std::string& selector) {
  if (!selector.empty()) base += "," + selector;
  return "{" + base + "}";
}

}  // namespace

const GpuPrice* CostTable::Find(const std::string& model) const {
  auto it = models.find(model);
  return it == models.end() ? nullptr : &it->second;
}

Status ParseCostTable(std::string_view yaml, CostTable* table) {
  *table = CostTable();
  return WalkYamlDocument(yaml, "the cost table", [&](const YAML::Node& root) -> Status {
    bool has_models = false;
    Status status =
        ForEachYamlEntry(root, "the cost table", [&](const std::string& key, const YAML::Node& value) {
          if (key == "currency") {
            Status s = ReadYamlString(value, "currency", &table->currency);
            if (s.ok() && table->currency.empty())
              return Status::InvalidArgument("currency: empty" + YamlLine(value));
            return s;
          }
          if (key != "models") return UnknownYamlKey("the cost table", key, value);
          has_models = true;
          return ForEachYamlEntry(
              value, "models", [&](const std::string& model, const YAML::Node& fields) -> Status {
                const std::string path = "models[\"" + model + "\"]";
                if (model.empty())
                  return Status::InvalidArgument("models: a model with an empty name" + YamlLine(fields));
                if (!fields.IsMap()) {
                  return Status::InvalidArgument(path + ": expected {gpu_hour: PRICE, kwh: PRICE}" +
                                                 YamlLine(fields));
                }
                GpuPrice price;
                bool has_gpu_hour = false;
                Status s = ForEachYamlEntry(
                    fields, path, [&](const std::string& name, const YAML::Node& field) -> Status {
                      if (name != "gpu_hour" && name != "kwh") return UnknownYamlKey(path, name, field);
                      const std::string field_path = path + "." + name;
                      std::string text;
                      Status read = ReadYamlString(field, field_path, &text);
                      if (!read.ok()) return read;
                      double number = 0;
                      if (!ParseFiniteNumber(text, &number) || number < 0) {
                        return Status::InvalidArgument(field_path +
                                                       ": a price must be a number >= 0, not \"" + text +
                                                       "\"" + YamlLine(field));
                      }
                      if (name == "gpu_hour") {
                        price.per_gpu_hour = number;
                        has_gpu_hour = true;
                      } else {
                        price.per_kwh = number;
                      }
                      return Status::Ok();
                    });
                if (!s.ok()) return s;
                if (!has_gpu_hour)
                  return Status::InvalidArgument(path + ": gpu_hour is missing" + YamlLine(fields));
                table->models.emplace(model, price);
                return Status::Ok();
              });
        });
    if (!status.ok()) return status;
    if (!has_models || table->models.empty()) {
      return Status::InvalidArgument(
          "the cost table needs 'models': a map of GPU model name (modelName) to {gpu_hour: PRICE, kwh: "
          "PRICE}");
    }
    return Status::Ok();
  });
}

Status ParseGrouping(std::string_view text, ChargebackGrouping* grouping) {
  if (text == "account") {
    *grouping = ChargebackGrouping::kAccount;
  } else if (text == "user") {
    *grouping = ChargebackGrouping::kUser;
  } else if (text == "partition") {
    *grouping = ChargebackGrouping::kPartition;
  } else if (text == "namespace") {
    *grouping = ChargebackGrouping::kNamespace;
  } else {
    return Status::InvalidArgument("--by wants account, user, partition or namespace, not '" +
                                   std::string(text) + "'");
  }
  return Status::Ok();
}

std::string GroupingLabel(ChargebackGrouping grouping) {
  switch (grouping) {
    case ChargebackGrouping::kAccount:
      return "account";
    case ChargebackGrouping::kUser:
      return "user";
    case ChargebackGrouping::kPartition:
      return "partition";
    case ChargebackGrouping::kNamespace:
      return "namespace";
  }
  return "account";
}

int WindowBatch::Windows() const { return static_cast<int>(std::llround((last_end - first_end) / step)) + 1; }

std::vector<WindowBatch> PlanWindows(const TimeRange& range, double step, int max_windows) {
  std::vector<WindowBatch> batches;
  if (!(range.to > range.from) || !(step > 0) || max_windows < 1) return batches;
  const int64_t whole = static_cast<int64_t>(std::floor((range.to - range.from) / step + 1e-9));
  for (int64_t done = 0; done < whole;) {
    const int64_t n = std::min<int64_t>(max_windows, whole - done);
    batches.push_back({range.from + static_cast<double>(done + 1) * step,
                       range.from + static_cast<double>(done + n) * step, step});
    done += n;
  }
  const double covered = range.from + static_cast<double>(whole) * step;
  const double rest = range.to - covered;
  if (rest > 1e-3) batches.push_back({range.to, range.to, rest});
  return batches;
}

std::string ChargebackQuery(ChargebackFigure figure, ChargebackGrouping grouping, double window_seconds,
                            double scrape_interval, const std::string& selector) {
  const std::string w = RangeOf(window_seconds);
  const std::string label = GroupingLabel(grouping);
  auto sel = [&](const std::string& base) { return Matchers(base, selector); };

  if (grouping == ChargebackGrouping::kNamespace) {
    // The GPU series of a Kubernetes node carry no pod: each scrape's figure is joined to the pods that
    // held the GPU at that scrape, in a subquery stepping by the scrape interval whose every step sees
    // the one sample of the interval before it (last_over_time over one interval less 1 ms).
    const std::string i = RangeOf(scrape_interval);
    const std::string sub = "[" + RangeOf(window_seconds).substr(1, RangeOf(window_seconds).size() - 2) +
                            ":" + std::to_string(std::llround(scrape_interval * 1000.0)) + "ms]";
    const std::string alloc = "gpuscope_k8s_gpu_allocation_info";
    const std::string shared = "last_over_time(" + alloc + sel("GPU_I_ID=\"\",shared=\"true\"") + i + ")";
    // A pod's share of a GPU at one scrape: 1, or 1/n for each of n time-sliced replicas holding it.
    const std::string held =
        "(" + shared + " / on (instance, UUID) group_left () count by (instance, UUID) (" + shared +
        ") or last_over_time(" + alloc + sel("GPU_I_ID=\"\",shared!=\"true\"") + i + "))";
    auto over_window = [&](const std::string& per_scrape) {
      return "sum by (" + label + ", modelName) (sum_over_time((" + per_scrape + ")" + sub + "))";
    };
    const std::string gpu = sel("GPU_I_ID=\"\"");
    switch (figure) {
      case ChargebackFigure::kAllocatedSamples:
        return over_window(held);
      case ChargebackFigure::kUsedSamples:
        // The agent gives each pod holding a GPU its own copy of the GPU's series (as dcgm-exporter does):
        // one value per GPU and scrape.
        return over_window(
            held + " * on (instance, UUID) group_left () (max by (instance, UUID) (last_over_time(" +
            "DCGM_FI_PROF_SM_ACTIVE" + gpu + i + ")) or on (instance, UUID) max by (instance, UUID) " +
            "(last_over_time(DCGM_FI_DEV_GPU_UTIL" + gpu + i + ")) / 100)");
      case ChargebackFigure::kIdleSamples:
        return over_window(held +
                           " * on (instance, UUID, namespace, pod, container) group_left () last_over_time(" +
                           "gpuscope_k8s_gpu_allocated_idle" + gpu + i + ")");
      case ChargebackFigure::kEnergyJoules: {
        // The GPU's energy in the window, split by the scrapes each pod held it of the GPU's scrapes (the
        // per-pod copies of its counter add to the numerator and the denominator alike).
        const std::string energy = "gpuscope_gpu_energy_joules_total" + gpu;
        return "sum by (" + label + ", modelName) (sum_over_time((" + held + ")" + sub +
               ") * on (instance, UUID) group_left () (sum by (instance, UUID) (" +
               EnergyOfWindow(energy, window_seconds) + ") / sum by (instance, UUID) (count_over_time(" +
               energy + w + "))))";
      }
    }
  }

  // Slurm: every series of an allocated GPU carries hpc_job; the job's info names its group.
  const std::string job = "max by (cluster, hpc_job, " + label + ") (max_over_time(gpuscope_job_info" +
                          sel("hpc_job!=\"\"") + w + "))";
  auto attributed = [&](const std::string& x) {
    return "sum by (" + label + ", modelName) ((" + x + ") * on (cluster, hpc_job) group_left (" + label +
           ") " + job + " or ((" + x + ") unless on (cluster, hpc_job) " + job + "))";
  };
  const std::string gpu = "GPU_I_ID=\"\",hpc_job!=\"\"";
  switch (figure) {
    case ChargebackFigure::kAllocatedSamples:
      return attributed("count_over_time(gpuscope_gpu_allocation_info" + sel(gpu) + w + ")");
    case ChargebackFigure::kUsedSamples:
      return attributed("sum_over_time(DCGM_FI_PROF_SM_ACTIVE" + sel(gpu) + w +
                        ") or on (instance, UUID) sum_over_time(DCGM_FI_DEV_GPU_UTIL" + sel(gpu) + w +
                        ") / 100");
    case ChargebackFigure::kIdleSamples:
      return attributed("sum_over_time(gpuscope_gpu_allocated_idle" + sel(gpu) + w + ")");
    case ChargebackFigure::kEnergyJoules:
      return attributed(EnergyOfWindow("gpuscope_gpu_energy_joules_total" + sel(gpu), window_seconds));
  }
  return "";
}

void AddAnswer(ChargebackFigure figure, const std::string& group_label, const std::vector<PromSeries>& answer,
               Usage* usage) {
  for (const PromSeries& series : answer) {
    UsageSums& sums = (*usage)[{series.Label(group_label), series.Label("modelName")}];
    for (const auto& [time, value] : series.points) {
      (void)time;
      if (!std::isfinite(value)) continue;
      switch (figure) {
        case ChargebackFigure::kAllocatedSamples:
          sums.allocated_samples += value;
          break;
        case ChargebackFigure::kUsedSamples:
          sums.used_samples += value;
          break;
        case ChargebackFigure::kIdleSamples:
          sums.idle_samples += value;
          break;
        case ChargebackFigure::kEnergyJoules:
          sums.energy_joules += value;
          break;
      }
    }
  }
}

std::vector<ChargebackRow> SummariseUsage(const Usage& usage, double scrape_interval,
                                          const CostTable& costs) {
  std::map<std::string, ChargebackRow> by_group;
  for (const auto& [key, sums] : usage) {
    const auto& [group, model] = key;
    ChargebackRow& row = by_group[group];
    row.group = group;
    const double allocated = sums.allocated_samples * scrape_interval / 3600.0;
    const double kwh = sums.energy_joules / 3.6e6;
    row.gpu_hours_allocated += allocated;
    row.gpu_hours_used += sums.used_samples * scrape_interval / 3600.0;
    row.gpu_hours_idle += sums.idle_samples * scrape_interval / 3600.0;
    row.energy_kwh += kwh;
    row.models.push_back(model.empty() ? "(unknown model)" : model);
    const GpuPrice* price = costs.Find(model);
    if (price == nullptr) {
      row.unpriced_models.push_back(model.empty() ? "(unknown model)" : model);
      continue;
    }
    row.cost = row.cost.value_or(0) + allocated * price->per_gpu_hour + kwh * price->per_kwh.value_or(0);
  }
  std::vector<ChargebackRow> rows;
  for (auto& [group, row] : by_group) {
    if (!row.unpriced_models.empty()) row.cost.reset();
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ChargebackRow& a, const ChargebackRow& b) {
    const double ca = a.cost.value_or(-1), cb = b.cost.value_or(-1);
    if (ca != cb) return ca > cb;
    return a.gpu_hours_allocated > b.gpu_hours_allocated;
  });
  return rows;
}

Table ChargebackTable(const std::vector<ChargebackRow>& rows, ChargebackGrouping grouping,
                      const std::string& currency, bool with_sacct, bool with_total) {
  Table table;
  table.columns = {{GroupingLabel(grouping), false},
                   {"gpu_hours_allocated", true},
                   {"gpu_hours_used", true},
                   {"gpu_hours_idle", true},
                   {"energy_kwh", true},
                   {"cost_" + currency, true},
                   {"gpu_models", false},
                   {"unpriced_models", false}};
  if (with_sacct) {
    table.columns.push_back({"sacct_gpu_hours", true});
    table.columns.push_back({"sacct_diff_percent", true});
  }
  ChargebackRow total;
  total.group = "TOTAL";
  total.cost = 0;
  bool total_unpriced = false;
  double sacct_total = 0;
  bool any_sacct = false;
  auto add = [&](const ChargebackRow& row, const std::string& name) {
    std::vector<std::string> cells = {name,
                                      FormatFixed(row.gpu_hours_allocated, 2),
                                      FormatFixed(row.gpu_hours_used, 2),
                                      FormatFixed(row.gpu_hours_idle, 2),
                                      FormatFixed(row.energy_kwh, 3),
                                      row.cost ? FormatFixed(*row.cost, 2) : "",
                                      Join(row.models, ";"),
                                      Join(row.unpriced_models, ";")};
    if (with_sacct) {
      cells.push_back(row.sacct_gpu_hours ? FormatFixed(*row.sacct_gpu_hours, 2) : "");
      cells.push_back(
          row.sacct_gpu_hours && *row.sacct_gpu_hours > 0
              ? FormatFixed(100.0 * (row.gpu_hours_allocated - *row.sacct_gpu_hours) / *row.sacct_gpu_hours,
                            1)
              : "");
    }
    table.rows.push_back(std::move(cells));
  };
  std::set<std::string> models, unpriced;
  for (const ChargebackRow& row : rows) {
    add(row, row.group.empty() ? "(none)" : row.group);
    total.gpu_hours_allocated += row.gpu_hours_allocated;
    total.gpu_hours_used += row.gpu_hours_used;
    total.gpu_hours_idle += row.gpu_hours_idle;
    total.energy_kwh += row.energy_kwh;
    if (row.cost) {
      *total.cost += *row.cost;
    } else {
      total_unpriced = true;
    }
    models.insert(row.models.begin(), row.models.end());
    unpriced.insert(row.unpriced_models.begin(), row.unpriced_models.end());
    if (row.sacct_gpu_hours) {
      sacct_total += *row.sacct_gpu_hours;
      any_sacct = true;
    }
  }
  if (with_total) {
    if (total_unpriced) total.cost.reset();
    total.models.assign(models.begin(), models.end());
    total.unpriced_models.assign(unpriced.begin(), unpriced.end());
    if (any_sacct) total.sacct_gpu_hours = sacct_total;
    add(total, "TOTAL");
  }
  return table;
}

Status ParseSacctGpuHours(std::string_view sacct_output, ChargebackGrouping grouping, const TimeRange& range,
                          std::map<std::string, double>* gpu_hours) {
  gpu_hours->clear();
  int line_number = 0;
  while (!sacct_output.empty()) {
    const size_t newline = sacct_output.find('\n');
    std::string_view line = sacct_output.substr(0, newline);
    sacct_output = newline == std::string_view::npos ? std::string_view() : sacct_output.substr(newline + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<std::string_view> fields;
    for (size_t start = 0;;) {
      const size_t bar = line.find('|', start);
      fields.push_back(
          line.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start));
      if (bar == std::string_view::npos) break;
      start = bar + 1;
    }
    if (fields.size() == 8 && fields.back().empty())
      fields.pop_back();  // sacct -P ends lines with '|' sometimes
    if (fields.size() != 7) {
      return Status::InvalidArgument(
          "sacct line " + std::to_string(line_number) +
          " does not have the 7 fields JobID|Account|User|Partition|AllocTRES|Start|End: '" +
          std::string(line) + "'");
    }
    // AllocTRES: "billing=4,cpu=4,gres/gpu=2,mem=8G,node=1" (gres/gpu:TYPE=N entries add to gres/gpu=N).
    double gpus = 0;
    std::string_view tres = fields[4];
    for (size_t start = 0; start <= tres.size();) {
      const size_t comma = tres.find(',', start);
      std::string_view item =
          tres.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (item.substr(0, 9) == "gres/gpu=") {
        double n = 0;
        if (ParseFiniteNumber(item.substr(9), &n)) gpus = n;
      }
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (gpus <= 0) continue;
    double start = 0, end = range.to;
    if (!ParseTimestamp(std::string(fields[5]) + "Z", &start).ok()) continue;  // "None": not started
    if (fields[6] != "Unknown" && !ParseTimestamp(std::string(fields[6]) + "Z", &end).ok()) continue;
    const double overlap = std::min(end, range.to) - std::max(start, range.from);
    if (overlap <= 0) continue;
    std::string_view group = grouping == ChargebackGrouping::kUser        ? fields[2]
                             : grouping == ChargebackGrouping::kPartition ? fields[3]
                                                                          : fields[1];
    (*gpu_hours)[std::string(group)] += gpus * overlap / 3600.0;
  }
  return Status::Ok();
}

}  // namespace gpuscope
