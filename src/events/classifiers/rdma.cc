// Verbs completion errors printed by the communication layers under a training job other than NCCL (whose
// "NET/IB : Got completion from peer" lines nccl.cc reads): UCX, Open MPI's openib BTL, the verbs
// providers themselves and libfabric. All become class "ib_completion" with a `library` field, so the
// alerts and dashboards that watch NCCL's completion errors see them too. Formats, as these libraries
// print them (hosts, numbers and devices vary):
//   UCX >= 1.8 (uct/ib/mlx5/ib_mlx5_log.c), then a line naming the QP that carries no error word:
//     "[host:pid:0:tid] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend
//      0x81 hw_synd 0/0)"
//   UCX < 1.8:
//     "[host:pid :0:tid] ib_mlx5_log.c:115  FATAL: Error on mlx5_3:1 QP 0xe6d7 wqe[7821]: Transport
//      retry count exceeded (synd 0x15 vend 0x81) opcode SEND"  (the device may be absent)
//   Open MPI openib BTL (BTL_PEER_ERROR + "error polling %s with status %s status number %d ..."):
//     "[host][[jobid,1],rank][btl_openib_component.c:3644:handle_wc] from host to: peer error polling LP
//      CQ with status RETRY EXCEEDED ERROR status number 12 for wr_id 2381120 opcode 0  vendor error 129
//      qp_idx 0"
//   rdma-core's mlx5 provider, before a hex dump of the CQE: "mlx5: host: got completion with error:"
//   libfabric: "libfabric:ofi_rxm:cq:rxm_cq_read_write_error():819<warn> fi_cq_readerr: err: 5,
//     prov_err: remote access error (10)"
//   Others that print ibv_wc_status_str: "CQE ERROR wr_id=3 status=12(transport retry counter exceeded)
//     opcode=1 byte_len=0 vendor_err=0xa qp_num=0x2c10"
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "src/events/classifiers/job_classifier.h"
#include "src/events/classifiers/jobs_text.h"
#include "src/parsers/text.h"

namespace gpuscope {
namespace {

using classifier_text::Contains;
using classifier_text::Find;
using jobs_text::Sanitize;

// mlx5 error CQE syndromes (rdma-core providers/mlx5/mlx5dv.h, MLX5_CQE_SYNDROME_*) as ibv_wc_status.
std::optional<std::uint64_t> StatusOfMlx5Syndrome(std::uint64_t syndrome) {
  switch (syndrome) {
    case 0x01:
      return 1;  // local length
    case 0x02:
      return 2;  // local QP operation
    case 0x04:
      return 4;  // local protection
    case 0x05:
      return 5;  // work request flushed
    case 0x06:
      return 6;  // memory window bind
    case 0x10:
      return 7;  // bad response
    case 0x11:
      return 8;  // local access
    case 0x12:
      return 9;  // remote invalid request
    case 0x13:
      return 10;  // remote access
    case 0x14:
      return 11;  // remote operation
    case 0x15:
      return 12;  // transport retry counter exceeded
    case 0x16:
      return 13;  // RNR retry counter exceeded
    case 0x22:
      return 16;  // remote aborted
    default:
      return std::nullopt;
  }
}

// ibv_wc_status from its wording: libibverbs' ibv_wc_status_str, UCX's texts and Open MPI's upper-case
// names, matched lower-cased. The RNR phrases come before the plain retry ones they contain.
struct Phrase {
  std::string_view words;
  std::uint64_t status;
};
constexpr std::array<Phrase, 25> kPhrases = {{
    {"rnr retry", 13},
    {"receive-no-ready", 13},
    {"transport retry", 12},
    {"retry exceeded", 12},
    {"local length", 1},
    {"local qp operation", 2},
    {"local ee context operation", 3},
    {"local protection", 4},
    {"flushed", 5},
    {"flush error", 5},
    {"memory window bind", 6},
    {"mw bind", 6},
    {"memory management operation", 6},
    {"bad response", 7},
    {"local access", 8},
    {"remote invalid rd request", 15},
    {"remote invalid request", 9},
    {"remote access", 10},
    {"remote operation", 11},
    {"local rdd violation", 14},
    {"aborted", 16},
    {"invalid ee context number", 17},
    {"invalid ee context state", 18},
    {"response timeout", 20},
    {"general error", 21},
}};

std::optional<std::uint64_t> StatusOfWords(std::string_view text) {
  std::string lower(text.substr(0, 256));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  for (const Phrase& phrase : kPhrases) {
    if (Contains(lower, phrase.words)) return phrase.status;
  }
  return std::nullopt;
}

// The text between `open` and the next `close` after it, or empty.
std::string_view Between(std::string_view text, std::string_view open, std::string_view close) {
  const std::size_t start = Find(text, open);
  if (start == std::string_view::npos) return {};
  const std::size_t from = start + open.size();
  const std::size_t end = Find(text, close, from);
  return end == std::string_view::npos ? std::string_view{} : text.substr(from, end - from);
}

// The word (up to a space, comma or ']') after the first `key`, or empty.
std::string_view WordAfter(std::string_view text, std::string_view key) {
  return jobs_text::WordAfter(text, key, " ,]");
}

// A number written "0x15" or "129" after `key`.
std::optional<std::uint64_t> NumberAfter(std::string_view text, std::string_view key) {
  std::string_view word = WordAfter(text, key);
  if (word.starts_with("0x") || word.starts_with("0X")) {
    word.remove_prefix(2);
    std::size_t n = 0;
    while (n < word.size() && n < 16 && text::IsHexDigit(word[n])) ++n;
    return text::ParseWhole<std::uint64_t>(word.substr(0, n), 16);
  }
  return jobs_text::UintAfter(text, key);
}

void AddStatus(Event& event, std::optional<std::uint64_t> status) {
  if (!status) return;
  event.fields.emplace_back("status", std::to_string(*status));
  event.fields.emplace_back("status_name", std::string(jobs_text::IbvWcStatusName(*status)));
}

void AddNumber(Event& event, std::string_view key, std::optional<std::uint64_t> value) {
  if (value) event.fields.emplace_back(key, std::to_string(*value));
}

void AddWord(Event& event, std::string_view key, std::string_view value, std::size_t max = 64) {
  if (!value.empty()) event.fields.emplace_back(key, Sanitize(value, max));
}

// "mlx5_0:1/IB" or "mlx5_3:1": the HCA, its port and (UCX >= 1.8) the link layer.
void AddDevice(Event& event, std::string_view spec) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0) return;
  AddWord(event, "hca", spec.substr(0, colon));
  std::string_view port = spec.substr(colon + 1);
  const std::size_t slash = port.find('/');
  if (slash != std::string_view::npos) {
    AddWord(event, "link_layer", port.substr(slash + 1), 16);
    port = port.substr(0, slash);
  }
  if (const auto n = text::ParseWhole<std::uint32_t>(port)) AddNumber(event, "port", *n);
}

// UCX's "[host:pid:...]" prefix (the pid may be padded with a space).
void AddUcxProcess(Event& event, std::string_view line, std::size_t before) {
  const std::size_t close = line.rfind(']', before);
  if (close == std::string_view::npos) return;
  const std::size_t open = line.rfind('[', close);
  if (open == std::string_view::npos) return;
  const std::string_view inside = line.substr(open + 1, close - open - 1);
  const std::size_t c1 = inside.find(':');
  if (c1 == std::string_view::npos || c1 == 0) return;
  AddWord(event, "process_host", inside.substr(0, c1), 128);
  std::string_view pid = inside.substr(c1 + 1);
  pid = text::Trim(pid.substr(0, std::min(pid.find(':'), pid.size())));
  if (text::ParseWhole<std::uint64_t>(pid)) AddWord(event, "pid", pid, 20);
}

Event NewEvent(std::string_view library) {
  Event event;
  event.event_class = "ib_completion";
  event.severity = EventSeverity::kError;
  event.fields.emplace_back("library", std::string(library));
  return event;
}

void Finish(Event& event, std::string_view library_title, std::string_view error, std::string_view line) {
  std::string where;
  for (const auto& [key, value] : event.fields) {
    if (key == "hca") where = " on " + value;
  }
  event.summary = std::string(library_title) + " completion error" + where + ": " +
                  Sanitize(text::Trim(error).empty() ? line : text::Trim(error), 200);
  event.fields.emplace_back("message", Sanitize(line, jobs_text::kMaxMessageBytes));
}

std::optional<Event> ClassifyUcx(std::string_view line, std::size_t synd) {
  Event event = NewEvent("ucx");
  // The message starts after "ib_mlx5_log.c:NNN" (or the last "] " when the file is absent).
  std::size_t start = Find(line, ".c:");
  if (start == std::string_view::npos || start > synd) return std::nullopt;
  AddUcxProcess(event, line, start);
  start = line.find(' ', start);
  if (start == std::string_view::npos || start > synd) return std::nullopt;
  const std::string_view message = text::Trim(line.substr(start, synd - start));
  std::string_view error;
  if (message.starts_with("FATAL: Error on ")) {  // UCX < 1.8
    const std::string_view rest = message.substr(16);
    if (!rest.starts_with("QP ")) AddDevice(event, rest.substr(0, std::min(rest.find(' '), rest.size())));
    const std::size_t colon = rest.find("]: ");
    error = colon == std::string_view::npos ? rest : rest.substr(colon + 3);
    AddWord(event, "qp", WordAfter(rest, "QP "), 20);
    AddNumber(event, "wqe", jobs_text::UintAfter(rest, "wqe["));
    AddWord(event, "opcode", WordAfter(line.substr(synd), ") opcode "), 32);
  } else {
    const std::size_t on = message.rfind(" on ");
    if (on == std::string_view::npos) return std::nullopt;
    error = message.substr(0, on);
    const std::string_view spec = message.substr(on + 4);
    AddDevice(event, spec.substr(0, std::min(spec.find(' '), spec.size())));
  }
  const std::string_view tail = line.substr(synd);
  const auto syndrome = NumberAfter(tail, "synd ");
  std::optional<std::uint64_t> status = syndrome ? StatusOfMlx5Syndrome(*syndrome) : std::nullopt;
  if (!status) status = StatusOfWords(error);
  AddStatus(event, status);
  if (syndrome) event.fields.emplace_back("syndrome", std::to_string(*syndrome));
  AddNumber(event, "vendor_err", NumberAfter(tail, "vend "));
  AddWord(event, "error", error, 128);
  Finish(event, "UCX", error, line);
  return event;
}

std::optional<Event> ClassifyOpenMpi(std::string_view line, std::size_t polling) {
  Event event = NewEvent("openmpi");
  // "[host][[jobid,vpid],rank][file:line:func] from host to: peer error polling ..."
  if (line.starts_with('[')) AddWord(event, "process_host", line.substr(1, line.find(']') - 1), 128);
  const std::string_view rank = Between(line, "],", "]");
  if (text::ParseWhole<std::uint32_t>(rank)) AddWord(event, "rank", rank, 10);
  AddWord(event, "peer", WordAfter(line, " to: "), 128);
  const std::string_view rest = line.substr(polling);
  AddWord(event, "cq", Between(rest, "error polling ", " with status"), 16);
  const std::string_view error = Between(rest, " with status ", " status number");
  auto status = jobs_text::UintAfter(rest, "status number ");
  if (!status) status = StatusOfWords(error);
  AddStatus(event, status);
  AddNumber(event, "opcode", jobs_text::UintAfter(rest, " opcode "));
  AddNumber(event, "vendor_err", jobs_text::UintAfter(rest, "vendor error "));
  AddNumber(event, "qp_idx", jobs_text::UintAfter(rest, "qp_idx "));
  AddWord(event, "error", error, 128);
  Finish(event, "Open MPI", error, line);
  return event;
}

std::optional<Event> ClassifyVerbsProvider(std::string_view line, std::size_t got) {
  Event event = NewEvent("verbs");
  // "mlx5: host: got completion with error:" (rdma-core providers/mlx5/cq.c); launchers may prefix it.
  std::string_view head = text::Trim(line.substr(0, got));
  if (head.ends_with(':')) head.remove_suffix(1);
  const std::size_t colon = head.rfind(": ");
  if (colon != std::string_view::npos) {
    AddWord(event, "process_host", text::Trim(head.substr(colon + 2)), 128);
    head = head.substr(0, colon);
    const std::size_t space = head.rfind(' ');
    AddWord(event, "provider", space == std::string_view::npos ? head : head.substr(space + 1), 32);
  }
  Finish(event, "verbs", "got completion with error", line);
  return event;
}

std::optional<Event> ClassifyLibfabric(std::string_view line, std::size_t readerr) {
  Event event = NewEvent("libfabric");
  // "libfabric:<pid>?:<provider>:cq:<function>...": the provider is the ofi_* or verbs-like word.
  const std::size_t lib = Find(line, "libfabric:");
  if (lib != std::string_view::npos) {
    std::string_view rest = line.substr(lib + 10);
    std::string_view provider = rest.substr(0, std::min(rest.find(':'), rest.size()));
    if (text::ParseWhole<std::uint64_t>(provider)) {  // newer releases print the pid first
      rest = rest.substr(std::min(provider.size() + 1, rest.size()));
      provider = rest.substr(0, std::min(rest.find(':'), rest.size()));
    }
    AddWord(event, "provider", provider, 32);
  }
  const std::string_view rest = line.substr(readerr);
  AddNumber(event, "fi_errno", jobs_text::UintAfter(rest, ": err: "));
  std::string_view error;
  if (const std::size_t at = Find(rest, "prov_err: "); at != std::string_view::npos)
    error = rest.substr(at + 10);
  const std::size_t paren = error.rfind(" (");
  if (paren != std::string_view::npos) {
    AddNumber(event, "prov_errno", jobs_text::UintAfter(error.substr(paren), "("));
    error = error.substr(0, paren);
  }
  AddStatus(event, StatusOfWords(error));
  AddWord(event, "error", error, 128);
  Finish(event, "libfabric", error, line);
  return event;
}

// "status=12(transport retry counter exceeded)": only when the words are a completion status.
std::optional<Event> ClassifyStatusWords(std::string_view line, std::size_t status_at) {
  const std::string_view rest = line.substr(status_at + 7);
  std::size_t digits = 0;
  const auto status = classifier_text::ParseUint(rest, &digits);
  if (!status || digits >= rest.size() || rest[digits] != '(') return std::nullopt;
  const std::string_view words = rest.substr(digits + 1, rest.find(')', digits) - digits - 1);
  const auto by_words = StatusOfWords(words);
  if (!by_words || *by_words != *status) return std::nullopt;
  Event event = NewEvent("other");
  AddStatus(event, status);
  AddNumber(event, "opcode", NumberAfter(line, "opcode="));
  AddNumber(event, "vendor_err", NumberAfter(line, "vendor_err="));
  AddWord(event, "qp", WordAfter(line, "qp_num="), 20);
  AddWord(event, "error", words, 128);
  Finish(event, "RDMA", words, line);
  return event;
}

}  // namespace

namespace {

// Whether `check(line, i)` holds at some offset i where `line[i] == anchor` (found with memchr).
template <typename Check>
bool AnyAt(std::string_view line, char anchor, Check check) {
  const char* const begin = line.data();
  const char* const end = begin + line.size();
  for (const char* p = begin; p < end; ++p) {
    p = static_cast<const char*>(std::memchr(p, anchor, static_cast<std::size_t>(end - p)));
    if (p == nullptr) return false;
    if (check(static_cast<std::size_t>(p - begin))) return true;
  }
  return false;
}

bool At(std::string_view line, std::size_t pos, std::string_view word) {
  return line.substr(std::min(pos, line.size())).starts_with(word);
}

}  // namespace

// Every shape holds a byte that ordinary training output seldom does, next to a fixed word: memchr jumps
// between those bytes, so a line that is none of ours costs a few vectorised scans, not substring
// searches for common letters.
bool MayBeRdmaCompletionLine(std::string_view line) {
  // '(': UCX's "(synd 0x", and "status=12(" with the status words.
  if (AnyAt(line, '(', [&](std::size_t i) {
        if (At(line, i, "(synd 0x")) return true;
        std::size_t d = i;
        while (d > 0 && text::IsDigit(line[d - 1])) --d;
        return d < i && d >= 7 && At(line, d - 7, "status=");
      })) {
    return true;
  }
  // 'Q': Open MPI's "error polling LP CQ" / "HP CQ".
  if (AnyAt(line, 'Q', [&](std::size_t i) { return i >= 3 && At(line, i - 3, "P CQ "); })) return true;
  // 'q': libfabric's "fi_cq_readerr".
  if (AnyAt(line, 'q', [&](std::size_t i) { return i >= 4 && At(line, i - 4, "fi_cq_readerr"); }))
    return true;
  // 'x': rdma-core's "mlx5: <host>: got completion with error".
  return AnyAt(line, 'x', [&](std::size_t i) { return i >= 2 && At(line, i - 2, "mlx5: "); }) &&
         Contains(line, "got completion with error");
}

std::optional<Event> ClassifyRdmaCompletionLine(std::string_view line) {
  line = jobs_text::Head(line);
  if (const std::size_t at = Find(line, " (synd 0x"); at != std::string_view::npos)
    return ClassifyUcx(line, at);
  if (const std::size_t at = Find(line, "error polling ");
      at != std::string_view::npos && Contains(line.substr(at), " with status ")) {
    return ClassifyOpenMpi(line, at);
  }
  if (const std::size_t at = Find(line, "got completion with error"); at != std::string_view::npos) {
    return ClassifyVerbsProvider(line, at);
  }
  if (const std::size_t at = Find(line, "fi_cq_readerr");
      at != std::string_view::npos && Contains(line.substr(at), "prov_err: ")) {
    return ClassifyLibfabric(line, at);
  }
  if (const std::size_t at = Find(line, "status="); at != std::string_view::npos) {
    return ClassifyStatusWords(line, at);
  }
  return std::nullopt;
}

}  // namespace gpuscope
