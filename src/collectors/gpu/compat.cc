#include "src/collectors/gpu/compat.h"

namespace gpuscope {

bool ParseDcgmCompat(std::string_view text, DcgmCompat* out) {
  if (text.starts_with("dcgm")) text.remove_prefix(4);
  if (text == "3" || text == "3.x") {
    *out = DcgmCompat::kDcgm3;
    return true;
  }
  if (text == "4.9" || text == "4") {
    *out = DcgmCompat::kDcgm49;
    return true;
  }
  return false;
}

std::string_view DcgmCompatName(DcgmCompat compat) { return compat == DcgmCompat::kDcgm3 ? "3" : "4.9"; }

std::string_view HostnameLabelName(DcgmCompat compat) {
  // dcgm-exporter renamed the label in 4.x (commit "Rename Hostname label to hostname").
  return compat == DcgmCompat::kDcgm3 ? "Hostname" : "hostname";
}

double ViolationValue(DcgmCompat compat, uint64_t violation_ns) {
  // DCGM 3 divided NVML's nanoseconds by 1000; DCGM 4 passes them through.
  // The integer division is DCGM 3's own: it truncated to whole microseconds.
  return compat == DcgmCompat::kDcgm3
             ? static_cast<double>(violation_ns / 1000)  // NOLINT(bugprone-integer-division)
             : static_cast<double>(violation_ns);
}

std::string_view ViolationUnit(DcgmCompat compat) { return compat == DcgmCompat::kDcgm3 ? "us" : "ns"; }

}  // namespace gpuscope
