#include "sim/cuda/visible_devices.h"

#include <algorithm>
#include <charconv>

namespace gpuscope::sim::cuda {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The scenario index an entry names; nullopt when it names none.
std::optional<unsigned> Resolve(std::string_view entry, const std::vector<std::string>& uuids) {
  unsigned index = 0;
  const auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), index);
  if (!entry.empty() && ec == std::errc() && end == entry.data() + entry.size()) {
    if (index < uuids.size()) return index;
    return std::nullopt;
  }
  const auto it = std::find(uuids.begin(), uuids.end(), entry);
  if (it == uuids.end()) return std::nullopt;
  return static_cast<unsigned>(it - uuids.begin());
}

}  // namespace

std::vector<unsigned> VisibleGpus(std::optional<std::string_view> value,
                                  const std::vector<std::string>& uuids) {
  std::vector<unsigned> visible;
  if (!value) {
    for (unsigned i = 0; i < uuids.size(); ++i) visible.push_back(i);
    return visible;
  }
  std::string_view rest = *value;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view entry = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::optional<unsigned> gpu = Resolve(entry, uuids);
    if (!gpu || std::find(visible.begin(), visible.end(), *gpu) != visible.end()) break;
    visible.push_back(*gpu);
  }
  return visible;
}

}  // namespace gpuscope::sim::cuda
