#include "src/events/classifiers/jobs_text.h"

#include <algorithm>
#include <array>
#include <limits>

namespace gpuscope::jobs_text {

// ibv_wc_status names (rdma-core libibverbs/verbs.h, enum ibv_wc_status), indexed by value.
constexpr std::array<std::string_view, 22> kIbvWcStatus = {
    "IBV_WC_SUCCESS",           "IBV_WC_LOC_LEN_ERR",
    "IBV_WC_LOC_QP_OP_ERR",     "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR",      "IBV_WC_WR_FLUSH_ERR",
    "IBV_WC_MW_BIND_ERR",       "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR",    "IBV_WC_REM_INV_REQ_ERR",
    "IBV_WC_REM_ACCESS_ERR",    "IBV_WC_REM_OP_ERR",
    "IBV_WC_RETRY_EXC_ERR",     "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR",  "IBV_WC_REM_INV_RD_REQ_ERR",
    "IBV_WC_REM_ABORT_ERR",     "IBV_WC_INV_EECN_ERR",
    "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR",  "IBV_WC_GENERAL_ERR"};

std::string_view IbvWcStatusName(std::uint64_t status) {
  return status < kIbvWcStatus.size() ? kIbvWcStatus[status] : "unknown";
}

std::optional<std::uint64_t> UintAfter(std::string_view text, std::string_view key) {
  const std::size_t pos = classifier_text::Find(text, key);
  if (pos == std::string_view::npos) return std::nullopt;
  return classifier_text::ParseUint(text.substr(pos + key.size()));
}

std::string_view WordAfter(std::string_view text, std::string_view key, std::string_view stops) {
  const std::size_t pos = classifier_text::Find(text, key);
  if (pos == std::string_view::npos) return {};
  const std::string_view rest = text.substr(pos + key.size());
  return rest.substr(0, std::min(rest.find_first_of(stops), rest.size()));
}

std::optional<std::uint64_t> ParseByteSize(std::string_view text) {
  std::size_t int_digits = 0;
  const auto whole = classifier_text::ParseUint(text, &int_digits);
  if (!whole) return std::nullopt;
  std::size_t i = int_digits;
  // Fraction: at most 6 digits kept, in millionths, so the arithmetic stays exact in integers.
  std::uint64_t micro = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    std::uint64_t scale = 100000;
    while (i < text.size() && classifier_text::IsDigit(text[i])) {
      micro += static_cast<std::uint64_t>(text[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
  }
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string_view unit = text.substr(i);
  std::uint64_t multiplier = 0;
  if (unit.starts_with("bytes") || unit.starts_with("B")) {
    multiplier = 1;
  } else if (unit.starts_with("KiB")) {
    multiplier = 1ULL << 10;
  } else if (unit.starts_with("MiB")) {
    multiplier = 1ULL << 20;
  } else if (unit.starts_with("GiB")) {
    multiplier = 1ULL << 30;
  } else if (unit.starts_with("TiB")) {
    multiplier = 1ULL << 40;
  } else {
    return std::nullopt;
  }
  // Capacity of one GPU fits easily; reject absurd values rather than overflow.
  if (*whole > (std::numeric_limits<std::uint64_t>::max() / multiplier) / 2) return std::nullopt;
  // Rounded to the nearest byte: "2.00 GiB" is exactly 2 GiB, "79.15 GiB" is 79.15 * 2^30.
  const unsigned __int128 frac = static_cast<unsigned __int128>(micro) * multiplier + 500000;
  return *whole * multiplier + static_cast<std::uint64_t>(frac / 1000000);
}

}  // namespace gpuscope::jobs_text
