// `gpuscope inventory`: the fleet's GPUs by serial and UUID over a range (--from/--to or --lookback):
// range queries of gpuscope_gpu_info and of the RMA signals (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL,
// DCGM_FI_DEV_ROW_REMAP_FAILURE, gpuscope_xid_errors_total{xid="79"}) at a step that bounds the points per
// series, in chunks of at most InventoryQueryOptions::max_points_per_query steps, analysed by
// AnalyzeInventory and printed as tables (text, CSV or JSON).
//
// Thread-safety: one call at a time (it uses the caller's PrometheusClient).
#pragma once

#include <string>
#include <vector>

#include "src/cli/command.h"
#include "src/cli/inventory_history.h"
#include "src/cli/prometheus_client.h"
#include "src/cli/table_output.h"
#include "src/core/status.h"

namespace gpuscope {

struct InventoryQueryOptions {
  double start = 0, end = 0;  // Unix seconds
  double step = 0;            // 0: chosen so a series has at most target_points points
  int target_points = 1000;
  int max_points_per_query = 2000;  // longer ranges are asked for in consecutive chunks
};

// The step for a range: `requested` when > 0, else range / target_points rounded up to whole minutes
// (at least 60 s).
double InventoryStep(double start, double end, double requested, int target_points);

// Runs `expr` from start to end every step, in chunks of at most max_points steps (no step asked twice),
// and merges each series' points (by its labels) in time order into *series.
Status QueryRangeChunked(PrometheusClient& prometheus, const std::string& expr, double start, double end,
                         double step, int max_points, std::vector<PromSeries>* series);

// Fills *input from Prometheus over the options' range (options->step set when it was 0).
Status CollectInventory(PrometheusClient& prometheus, InventoryQueryOptions* options, InventoryInput* input);

// The report as text (three titled tables), CSV or JSON (an object with from, to, step_seconds and
// an array per section); `section` is all, gpus, events or rma. CSV of all three sections puts a
// "# name" line before each table and a blank line between them.
std::string RenderInventory(const InventoryReport& report, TableFormat format, const std::string& section);

// The `gpuscope inventory` entry of the command table.
Command InventoryCommand();

}  // namespace gpuscope
