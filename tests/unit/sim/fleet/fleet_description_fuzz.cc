// Fuzz target: ParseFleetDescription on arbitrary bytes (never crashes, never throws; an accepted
// description has what the runner relies on).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/fleet/fleet_description.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpuscope::fleet::FleetDescription d;
  const gpuscope::Status status =
      gpuscope::fleet::ParseFleetDescription(std::string_view(reinterpret_cast<const char*>(data), size), &d);
  if (status.ok()) {
    if (d.nodes < 1 || d.nodes > gpuscope::fleet::kMaxNodes || d.jobs.sizes.empty() ||
        d.jobs.accounts.empty() || d.jobs.max_duration < d.jobs.min_duration) {
      std::abort();
    }
    gpuscope::fleet::AssignGroups(d.groups, d.nodes);
  }
  return 0;
}
