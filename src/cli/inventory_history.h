// InventoryHistory: `gpuscope inventory`'s analysis of the fleet's GPUs over time, from what Prometheus
// holds: where each card (by UUID, with its serial) was and when (placements in a slot, a slot being a
// node and a GPU index), cards replaced in a slot, cards moved between slots, RMA candidates (repeated
// double-bit ECC errors, a row-remap failure, XID 79 "fallen off the bus", followed per UUID so the
// verdict goes with the card) and candidates that came back later, anywhere, with their errors since.
// Pure (no I/O): inventory_command.cc fills InventoryInput from range queries; the unit tests fill it by
// hand, with gaps and label churn.
//
// How samples become placements:
//  - gpuscope_gpu_info samples are grouped by (UUID, node, GPU index), whatever other labels churn
//    (hpc_job, driver version, serial missing on an old agent, Hostname vs dcgm-compat's hostname);
//    consecutive samples at most 1.5 steps apart form one run;
//  - a card's runs in the same slot form one placement unless the card was absent longer than max_gap
//    or another card was seen in that slot in between (a card sent away and put back is two placements);
//  - a card's next placement in another slot is a move (or its return, for an RMA candidate); a slot's
//    next placement by another card is a replacement.
//
// How errors are counted (per card, inside the range): a counter's increase between consecutive samples
// of the card (all its series merged by time, the largest value kept), a drop counted as a reset (the new
// value is the increase); the first sample counts only when it comes after the range's first step (a
// series born inside the range, e.g. XID 79's counter at its first event). A row-remap failure counts once
// per onset of DCGM_FI_DEV_ROW_REMAP_FAILURE > 0. A counter series without a UUID (an XID read from the
// kernel log for a GPU NVML no longer shows) is given to the card seen on that node at that PCI bus id.
//
// Thread-safety: value types and free functions.
#pragma once

#include <string>
#include <vector>

#include "src/cli/prometheus_client.h"
#include "src/cli/table_output.h"
#include "src/core/status.h"

namespace gpuscope {

// The raw series of the range queries, as Prometheus answers them (any labels; several series per card).
struct InventoryInput {
  std::vector<PromSeries> gpu_info;       // gpuscope_gpu_info
  std::vector<PromSeries> dbe;            // DCGM_FI_DEV_ECC_DBE_VOL_TOTAL
  std::vector<PromSeries> remap_failure;  // DCGM_FI_DEV_ROW_REMAP_FAILURE
  std::vector<PromSeries> xid79;          // gpuscope_xid_errors_total{xid="79"}
};

struct InventoryOptions {
  double start = 0;  // Unix seconds: the range the samples cover, evaluated every `step`
  double end = 0;
  double step = 60;
  double max_gap_seconds = 86400;  // a longer absence ends a placement even when the card stays in its slot
  double dbe_threshold = 2;        // double-bit errors that make a card an RMA candidate
};

// One card in one slot, from its first to its last sample there.
struct Placement {
  std::string uuid, serial, model;
  std::string node, gpu;  // slot: Hostname and GPU index
  std::string pci_bus_id;
  double first_seen = 0, last_seen = 0;
  bool present = false;  // seen at the range's last step
};

enum class InventoryEventKind { kReplaced, kMoved, kRmaCandidate, kReturned };

// Something that happened to a card, at `time`, in slot node/gpu (for kMoved and kReturned: the slot it
// came to; from_node/from_gpu the one it left; for kReplaced: other_uuid is the card that left the slot).
struct InventoryEvent {
  InventoryEventKind kind = InventoryEventKind::kReplaced;
  double time = 0;
  std::string node, gpu, uuid, serial;
  std::string other_uuid;
  std::string from_node, from_gpu;
  std::string detail;  // one sentence for people, e.g. "slot n3/2: GPU-a replaced by GPU-b"
};

// Errors of one card counted over a part of the range.
struct CardErrors {
  double dbe = 0;
  double xid79 = 0;
  double remap_failures = 0;  // onsets of a row-remap failure
};

// A card that met an RMA rule, with its errors and, when it came back, where and what since.
struct RmaCandidate {
  std::string uuid, serial, model;
  std::string node, gpu;  // where it was when it met the rule
  double placed_at = 0;   // first_seen of that placement
  std::vector<std::string>
      reasons;            // "3 double-bit ECC errors", "row-remap failure", "XID 79 (fallen off the bus)"
  double flagged_at = 0;  // when the first rule was met
  CardErrors errors;      // over the whole range
  bool returned = false;
  double returned_at = 0;
  std::string returned_node, returned_gpu;
  CardErrors since_return;
};

struct InventoryReport {
  double start = 0, end = 0, step = 0;
  std::vector<Placement> placements;     // by serial, UUID, then first_seen
  std::vector<InventoryEvent> events;    // by time, then node, gpu
  std::vector<RmaCandidate> candidates;  // by flagged_at, then UUID
};

InventoryReport AnalyzeInventory(const InventoryInput& input, const InventoryOptions& options);

// Keeps the cards with a placement on a node matching `node_regex` (ECMAScript, whole name; empty: all)
// and, with rma_only, only the RMA candidates; their placements, events and candidate rows whole (a card
// that moved off a matching node keeps its later history). InvalidArgument for a bad regex.
Status FilterInventory(const std::string& node_regex, bool rma_only, InventoryReport* report);

std::string InventoryEventKindName(
    InventoryEventKind kind);  // "replaced", "moved", "rma-candidate", "returned"

// The report's three tables (times as FormatUtc of text_format.h: RFC 3339, UTC).
Table PlacementsTable(const InventoryReport& report);
Table EventsTable(const InventoryReport& report);
Table RmaTable(const InventoryReport& report);

}  // namespace gpuscope
