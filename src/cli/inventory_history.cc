#include "src/cli/inventory_history.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <tuple>
#include <utility>

#include "src/cli/text_format.h"

namespace gpuscope {
namespace {

std::string SlotName(const std::string& node, const std::string& gpu) { return node + "/" + gpu; }

std::string Count(double value) {
  char buf[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g", value);
  }
  return buf;
}

std::string Plural(double n, const std::string& one, const std::string& many) {
  return Count(n) + " " + (n == 1 ? one : many);
}

// Keeps the first non-empty value seen for each identity label, the latest series winning.
void TakeLabel(const std::string& value, std::string* into) {
  if (!value.empty()) *into = value;
}

// Samples of one card in one slot, from every series that names it.
struct Sightings {
  std::vector<double> times;
  std::string serial, model, pci_bus_id;
  double labels_at = -1;  // last time of the series the labels came from
};

using SlotKey = std::pair<std::string, std::string>;  // node, gpu

struct Run {
  std::string uuid, node, gpu, serial, model, pci_bus_id;
  double start = 0, end = 0;
};

std::vector<Run> RunsFromSamples(const std::vector<PromSeries>& gpu_info, double step) {
  std::map<std::tuple<std::string, std::string, std::string>, Sightings> by_card_slot;
  for (const PromSeries& s : gpu_info) {
    const std::string uuid = s.Label("UUID");
    if (uuid.empty() || s.points.empty()) continue;  // a card without a UUID cannot be followed
    Sightings& seen = by_card_slot[{uuid, s.Host(), s.Label("gpu")}];
    for (const auto& [t, v] : s.points) {
      if (!std::isnan(v)) seen.times.push_back(t);
    }
    if (s.points.back().first >= seen.labels_at) {
      seen.labels_at = s.points.back().first;
      TakeLabel(s.Label("serial"), &seen.serial);
      TakeLabel(s.Label("modelName"), &seen.model);
      TakeLabel(s.Label("pci_bus_id"), &seen.pci_bus_id);
    } else {
      if (seen.serial.empty()) seen.serial = s.Label("serial");
      if (seen.model.empty()) seen.model = s.Label("modelName");
      if (seen.pci_bus_id.empty()) seen.pci_bus_id = s.Label("pci_bus_id");
    }
  }
  std::vector<Run> runs;
  for (auto& [key, seen] : by_card_slot) {
    std::sort(seen.times.begin(), seen.times.end());
    seen.times.erase(std::unique(seen.times.begin(), seen.times.end()), seen.times.end());
    const auto& [uuid, node, gpu] = key;
    for (size_t i = 0; i < seen.times.size(); ++i) {
      if (i == 0 || seen.times[i] - seen.times[i - 1] > 1.5 * step) {
        runs.push_back(
            {uuid, node, gpu, seen.serial, seen.model, seen.pci_bus_id, seen.times[i], seen.times[i]});
      } else {
        runs.back().end = seen.times[i];
      }
    }
  }
  return runs;
}

// Whether a card other than `uuid` was seen in the slot between `from` and `to` (exclusive).
bool OtherCardInSlot(const std::vector<const Run*>& slot_runs, const std::string& uuid, double from,
                     double to) {
  for (const Run* r : slot_runs) {
    if (r->uuid != uuid && r->end > from && r->start < to) return true;
  }
  return false;
}

std::vector<Placement> PlacementsFromRuns(const std::vector<Run>& runs, const InventoryOptions& options) {
  std::map<SlotKey, std::vector<const Run*>> by_slot;
  for (const Run& r : runs) by_slot[{r.node, r.gpu}].push_back(&r);
  std::map<std::string, std::vector<const Run*>> by_card;
  for (const Run& r : runs) by_card[r.uuid].push_back(&r);

  std::vector<Placement> placements;
  for (auto& [uuid, card_runs] : by_card) {
    std::sort(card_runs.begin(), card_runs.end(),
              [](const Run* a, const Run* b) { return a->start < b->start; });
    bool open = false;
    for (const Run* r : card_runs) {
      Placement* cur = open ? &placements.back() : nullptr;
      if (cur != nullptr && cur->node == r->node && cur->gpu == r->gpu &&
          r->start - cur->last_seen <= options.max_gap_seconds &&
          !OtherCardInSlot(by_slot[{r->node, r->gpu}], uuid, cur->last_seen, r->start)) {
        cur->last_seen = std::max(cur->last_seen, r->end);
        TakeLabel(r->serial, &cur->serial);
        TakeLabel(r->model, &cur->model);
        TakeLabel(r->pci_bus_id, &cur->pci_bus_id);
        continue;
      }
      placements.push_back(
          {uuid, r->serial, r->model, r->node, r->gpu, r->pci_bus_id, r->start, r->end, false});
      open = true;
    }
  }
  for (Placement& p : placements) p.present = p.last_seen + 1.5 * options.step > options.end;
  return placements;
}

enum class ErrorKind { kDbe, kXid79, kRemapFailure };

struct ErrorPoint {
  double time;
  ErrorKind kind;
  double count;
};

// The card a series' point belongs to: its UUID label, else the card last placed at its node and PCI bus
// id at that time.
std::string CardOf(const PromSeries& series, double time, const std::vector<Placement>& placements) {
  std::string uuid = series.Label("UUID");
  if (!uuid.empty()) return uuid;
  const std::string node = series.Host(), pci = series.Label("pci_bus_id");
  if (pci.empty()) return "";
  const Placement* best = nullptr;
  for (const Placement& p : placements) {
    if (p.node == node && p.pci_bus_id == pci && p.first_seen <= time &&
        (best == nullptr || p.first_seen > best->first_seen)) {
      best = &p;
    }
  }
  return best != nullptr ? best->uuid : "";
}

// Per card, its merged timeline of one metric (largest value at each time).
std::map<std::string, std::map<double, double>> Timelines(const std::vector<PromSeries>& series,
                                                          const std::vector<Placement>& placements) {
  std::map<std::string, std::map<double, double>> out;
  for (const PromSeries& s : series) {
    for (const auto& [t, v] : s.points) {
      if (std::isnan(v)) continue;
      const std::string uuid = CardOf(s, t, placements);
      if (uuid.empty()) continue;
      auto [it, inserted] = out[uuid].emplace(t, v);
      if (!inserted) it->second = std::max(it->second, v);
    }
  }
  return out;
}

void CounterIncreases(const std::vector<PromSeries>& series, ErrorKind kind,
                      const std::vector<Placement>& placements, const InventoryOptions& options,
                      std::map<std::string, std::vector<ErrorPoint>>* errors) {
  for (const auto& [uuid, timeline] : Timelines(series, placements)) {
    double previous = 0;
    bool first = true;
    for (const auto& [t, v] : timeline) {
      double increase = 0;
      if (first) {
        // A series born inside the range counts from zero; one already there at the start is the baseline.
        if (t > options.start + 1.5 * options.step) increase = v;
      } else {
        increase = v >= previous ? v - previous : v;  // a drop is a reset (driver reload, reboot)
      }
      if (increase > 0) (*errors)[uuid].push_back({t, kind, increase});
      previous = v;
      first = false;
    }
  }
}

void RemapFailureOnsets(const std::vector<PromSeries>& series, const std::vector<Placement>& placements,
                        const InventoryOptions& options,
                        std::map<std::string, std::vector<ErrorPoint>>* errors) {
  for (const auto& [uuid, timeline] : Timelines(series, placements)) {
    double previous = 0, previous_time = 0;
    bool first = true;
    for (const auto& [t, v] : timeline) {
      const bool after_gap = first || t - previous_time > 1.5 * options.step;
      if (v > 0 && (after_gap || previous <= 0)) (*errors)[uuid].push_back({t, ErrorKind::kRemapFailure, 1});
      previous = v;
      previous_time = t;
      first = false;
    }
  }
}

void Add(const ErrorPoint& e, CardErrors* into) {
  switch (e.kind) {
    case ErrorKind::kDbe:
      into->dbe += e.count;
      break;
    case ErrorKind::kXid79:
      into->xid79 += e.count;
      break;
    case ErrorKind::kRemapFailure:
      into->remap_failures += e.count;
      break;
  }
}

std::vector<std::string> Reasons(const CardErrors& e, double dbe_threshold) {
  std::vector<std::string> reasons;
  if (e.dbe >= dbe_threshold)
    reasons.push_back(Plural(e.dbe, "double-bit ECC error", "double-bit ECC errors"));
  if (e.remap_failures > 0) reasons.push_back("row-remap failure");
  if (e.xid79 > 0) reasons.push_back("XID 79 (fallen off the bus)");
  return reasons;
}

std::string Join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::string ErrorsText(const CardErrors& e) {
  std::vector<std::string> parts;
  if (e.dbe > 0) parts.push_back(Plural(e.dbe, "double-bit ECC error", "double-bit ECC errors"));
  if (e.remap_failures > 0)
    parts.push_back(Plural(e.remap_failures, "row-remap failure", "row-remap failures"));
  if (e.xid79 > 0) parts.push_back(Plural(e.xid79, "XID 79", "XID 79s"));
  return parts.empty() ? "no errors" : Join(parts, ", ");
}

std::string Card(const std::string& uuid, const std::string& serial) {
  return serial.empty() ? uuid : uuid + " (serial " + serial + ")";
}

}  // namespace

std::string InventoryEventKindName(InventoryEventKind kind) {
  switch (kind) {
    case InventoryEventKind::kReplaced:
      return "replaced";
    case InventoryEventKind::kMoved:
      return "moved";
    case InventoryEventKind::kRmaCandidate:
      return "rma-candidate";
    case InventoryEventKind::kReturned:
      return "returned";
  }
  return "";
}

InventoryReport AnalyzeInventory(const InventoryInput& input, const InventoryOptions& options) {
  InventoryReport report;
  report.start = options.start;
  report.end = options.end;
  report.step = options.step;
  report.placements = PlacementsFromRuns(RunsFromSamples(input.gpu_info, options.step), options);
  const std::vector<Placement>& placements = report.placements;

  std::map<std::string, std::vector<ErrorPoint>> errors;
  CounterIncreases(input.dbe, ErrorKind::kDbe, placements, options, &errors);
  CounterIncreases(input.xid79, ErrorKind::kXid79, placements, options, &errors);
  RemapFailureOnsets(input.remap_failure, placements, options, &errors);

  std::map<std::string, std::vector<const Placement*>> by_card;
  std::map<SlotKey, std::vector<const Placement*>> by_slot;
  for (const Placement& p : placements) {
    by_card[p.uuid].push_back(&p);
    by_slot[{p.node, p.gpu}].push_back(&p);
  }
  auto by_first_seen = [](const Placement* a, const Placement* b) { return a->first_seen < b->first_seen; };
  for (auto& [uuid, list] : by_card) std::sort(list.begin(), list.end(), by_first_seen);
  for (auto& [slot, list] : by_slot) std::sort(list.begin(), list.end(), by_first_seen);

  // RMA candidates: the first time a rule is met, where the card was then, and its next placement.
  std::map<std::string, const Placement*> returned_into;  // card -> placement it came back in
  for (auto& [uuid, card_errors] : errors) {
    auto card = by_card.find(uuid);
    if (card == by_card.end()) continue;  // errors of a card never seen in gpuscope_gpu_info
    std::sort(card_errors.begin(), card_errors.end(),
              [](const ErrorPoint& a, const ErrorPoint& b) { return a.time < b.time; });
    CardErrors so_far;
    double flagged_at = -1;
    for (const ErrorPoint& e : card_errors) {
      Add(e, &so_far);
      if (!Reasons(so_far, options.dbe_threshold).empty()) {
        flagged_at = e.time;
        break;
      }
    }
    if (flagged_at < 0) continue;
    const std::vector<const Placement*>& list = card->second;
    size_t at = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i]->first_seen <= flagged_at) at = i;
    }
    RmaCandidate c;
    c.uuid = uuid;
    c.serial = list[at]->serial;
    c.model = list[at]->model;
    c.node = list[at]->node;
    c.gpu = list[at]->gpu;
    c.placed_at = list[at]->first_seen;
    c.flagged_at = flagged_at;
    CardErrors before_return;
    if (at + 1 < list.size()) {
      const Placement* back = list[at + 1];
      c.returned = true;
      c.returned_at = back->first_seen;
      c.returned_node = back->node;
      c.returned_gpu = back->gpu;
      returned_into[uuid] = back;
    }
    for (const ErrorPoint& e : card_errors) {
      Add(e, &c.errors);
      Add(e, c.returned && e.time >= c.returned_at ? &c.since_return : &before_return);
    }
    c.reasons = Reasons(before_return, options.dbe_threshold);
    report.events.push_back({InventoryEventKind::kRmaCandidate, flagged_at, c.node, c.gpu, uuid, c.serial, "",
                             "", "",
                             Card(uuid, c.serial) + " in " + SlotName(c.node, c.gpu) +
                                 " is an RMA candidate: " + Join(c.reasons, ", ")});
    if (c.returned) {
      report.events.push_back({InventoryEventKind::kReturned, c.returned_at, c.returned_node, c.returned_gpu,
                               uuid, c.serial, "", c.node, c.gpu,
                               "RMA candidate " + Card(uuid, c.serial) + " (left " + SlotName(c.node, c.gpu) +
                                   ") is back in " + SlotName(c.returned_node, c.returned_gpu) +
                                   "; since then: " + ErrorsText(c.since_return)});
    }
    report.candidates.push_back(std::move(c));
  }
  std::sort(report.candidates.begin(), report.candidates.end(),
            [](const RmaCandidate& a, const RmaCandidate& b) {
              return std::tie(a.flagged_at, a.uuid) < std::tie(b.flagged_at, b.uuid);
            });

  // Moves: a card's next placement in another slot (its return, for an RMA candidate, is said above).
  for (const auto& [uuid, list] : by_card) {
    for (size_t i = 1; i < list.size(); ++i) {
      const Placement& from = *list[i - 1];
      const Placement& to = *list[i];
      auto back = returned_into.find(uuid);
      if (back != returned_into.end() && back->second == &to) continue;
      if (from.node == to.node && from.gpu == to.gpu) continue;  // back in its slot: the slot says who left
      report.events.push_back({InventoryEventKind::kMoved, to.first_seen, to.node, to.gpu, uuid, to.serial,
                               "", from.node, from.gpu,
                               Card(uuid, to.serial) + " moved from " + SlotName(from.node, from.gpu) +
                                   " to " + SlotName(to.node, to.gpu)});
    }
  }
  // Replacements: a slot's next placement by another card.
  for (const auto& [slot, list] : by_slot) {
    for (size_t i = 1; i < list.size(); ++i) {
      const Placement& old_card = *list[i - 1];
      const Placement& new_card = *list[i];
      if (old_card.uuid == new_card.uuid) continue;
      report.events.push_back({InventoryEventKind::kReplaced, new_card.first_seen, slot.first, slot.second,
                               new_card.uuid, new_card.serial, old_card.uuid, "", "",
                               "slot " + SlotName(slot.first, slot.second) + ": " + old_card.uuid +
                                   " replaced by " + new_card.uuid});
    }
  }
  std::sort(report.events.begin(), report.events.end(), [](const InventoryEvent& a, const InventoryEvent& b) {
    return std::tie(a.time, a.node, a.gpu, a.kind, a.uuid) < std::tie(b.time, b.node, b.gpu, b.kind, b.uuid);
  });
  std::sort(report.placements.begin(), report.placements.end(), [](const Placement& a, const Placement& b) {
    return std::tie(a.serial, a.uuid, a.first_seen) < std::tie(b.serial, b.uuid, b.first_seen);
  });
  return report;
}

Status FilterInventory(const std::string& node_regex, bool rma_only, InventoryReport* report) {
  std::set<std::string> keep;
  if (node_regex.empty()) {
    for (const Placement& p : report->placements) keep.insert(p.uuid);
  } else {
    std::regex re;
    try {
      re = std::regex(node_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Status::InvalidArgument("--node: '" + node_regex + "' is not a regular expression (" + e.what() +
                                     ")");
    }
    for (const Placement& p : report->placements) {
      if (std::regex_match(p.node, re)) keep.insert(p.uuid);
    }
  }
  if (rma_only) {
    std::set<std::string> candidates;
    for (const RmaCandidate& c : report->candidates) {
      if (keep.count(c.uuid) != 0) candidates.insert(c.uuid);
    }
    keep = std::move(candidates);
  }
  std::erase_if(report->placements, [&](const Placement& p) { return keep.count(p.uuid) == 0; });
  std::erase_if(report->events, [&](const InventoryEvent& e) {
    return keep.count(e.uuid) == 0 && keep.count(e.other_uuid) == 0;
  });
  std::erase_if(report->candidates, [&](const RmaCandidate& c) { return keep.count(c.uuid) == 0; });
  return Status::Ok();
}

Table PlacementsTable(const InventoryReport& report) {
  std::map<std::string, const RmaCandidate*> candidates;
  for (const RmaCandidate& c : report.candidates) candidates[c.uuid] = &c;
  Table table;
  table.columns = {{"serial"},     {"uuid"},      {"model"},  {"node"}, {"gpu"},
                   {"first_seen"}, {"last_seen"}, {"status"}, {"rma"}};
  for (const Placement& p : report.placements) {
    std::string rma;
    auto c = candidates.find(p.uuid);
    if (c != candidates.end() && c->second->returned && p.first_seen >= c->second->returned_at) {
      rma = "returned";
    } else if (c != candidates.end() && p.first_seen == c->second->placed_at) {
      rma = "candidate";
    }
    table.rows.push_back({p.serial, p.uuid, p.model, p.node, p.gpu, FormatUtc(p.first_seen),
                          FormatUtc(p.last_seen), p.present ? "present" : "gone", rma});
  }
  return table;
}

Table EventsTable(const InventoryReport& report) {
  Table table;
  table.columns = {{"time"}, {"event"}, {"node"}, {"gpu"}, {"uuid"}, {"serial"}, {"detail"}};
  for (const InventoryEvent& e : report.events) {
    table.rows.push_back(
        {FormatUtc(e.time), InventoryEventKindName(e.kind), e.node, e.gpu, e.uuid, e.serial, e.detail});
  }
  return table;
}

Table RmaTable(const InventoryReport& report) {
  Table table;
  table.columns = {{"serial"},
                   {"uuid"},
                   {"model"},
                   {"node"},
                   {"gpu"},
                   {"flagged_at"},
                   {"reasons"},
                   {"dbe", true},
                   {"remap_failures", true},
                   {"xid79", true},
                   {"returned_at"},
                   {"returned_to"},
                   {"dbe_since_return", true},
                   {"remap_failures_since_return", true},
                   {"xid79_since_return", true}};
  for (const RmaCandidate& c : report.candidates) {
    std::vector<std::string> row = {c.serial,
                                    c.uuid,
                                    c.model,
                                    c.node,
                                    c.gpu,
                                    FormatUtc(c.flagged_at),
                                    Join(c.reasons, "; "),
                                    Count(c.errors.dbe),
                                    Count(c.errors.remap_failures),
                                    Count(c.errors.xid79)};
    if (c.returned) {
      row.insert(row.end(), {FormatUtc(c.returned_at), SlotName(c.returned_node, c.returned_gpu),
                             Count(c.since_return.dbe), Count(c.since_return.remap_failures),
                             Count(c.since_return.xid79)});
    } else {
      row.insert(row.end(), {"", "", "", "", ""});
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace gpuscope
