// PyTorch classifiers: the ProcessGroupNCCL watchdog timeout and the CUDA caching allocator's OOM message.
//
// Watchdog (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, WorkNCCL::checkTimeout): the message
//   "<logPrefix>Watchdog caught collective operation timeout: WorkNCCL(SeqNum=.., OpType=.., NumelIn=..,
//    NumelOut=.., Timeout(ms)=..) ran for N milliseconds before timing out."
// has had the log prefixes "[Rank 3] " (1.x-2.1), "[PG 0 Rank 3] " / "[PG ID 0 PG GUID 0(default_pg)
// Rank 3] " (2.2+), behind glog headers "[E ProcessGroupNCCL.cpp:475] " or, with torchrun's per-rank
// prefix, "[rank3]:[E1129 10:00:00.123456 1234 ProcessGroupNCCL.cpp:616] "; older WorkNCCL has no SeqNum.
//
// OOM (c10/cuda/CUDACachingAllocator.cpp, malloc's OutOfMemoryError text), in two shapes:
//   <= 2.0: "CUDA out of memory. Tried to allocate X (GPU n; T total capacity; A already allocated;
//            F free; R reserved in total by PyTorch) ..."
//   >= 2.1: "CUDA out of memory. Tried to allocate X. GPU n has a total capac(i)ty of T of which F is
//            free. [Process p has M memory in use.] ... Of the allocated memory A is allocated by PyTorch"
//   (2.1 printed "capacty"); the exception is RuntimeError, torch.cuda.OutOfMemoryError (1.13+) or
//   torch.OutOfMemoryError (2.5+).
#include <string>

#include "src/events/classifiers/job_classifier.h"
#include "src/events/classifiers/jobs_text.h"
#include "src/events/classifiers/text.h"
#include "src/parsers/text.h"

namespace gpuscope {
namespace {

using jobs_text::Sanitize;
using jobs_text::UintAfter;

constexpr std::string_view kWatchdogPhrase = "Watchdog caught collective operation timeout";
constexpr std::string_view kOomPhrase = "CUDA out of memory";

// The value of "Key=" up to ',' or ')' inside the WorkNCCL(...) text.
std::string_view KeyValue(std::string_view text, std::string_view key) {
  const std::size_t pos = text.find(key);
  if (pos == std::string_view::npos) return {};
  std::string_view rest = text.substr(pos + key.size());
  const std::size_t end = rest.find_first_of(",)");
  return text::Trim(end == std::string_view::npos ? rest : rest.substr(0, end));
}

void AddNumber(Event& event, std::string_view key, std::optional<std::uint64_t> value) {
  if (value) event.fields.emplace_back(key, std::to_string(*value));
}

// Exception name right before ": CUDA ..." e.g. "torch.OutOfMemoryError"; empty when there is none.
std::string_view ExceptionBefore(std::string_view line, std::size_t phrase_pos) {
  if (phrase_pos < 2 || line[phrase_pos - 1] != ' ' || line[phrase_pos - 2] != ':') return {};
  const std::size_t end = phrase_pos - 2;
  std::size_t begin = end;
  while (begin > 0) {
    const char c = line[begin - 1];
    const bool word =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!word) break;
    --begin;
  }
  if (end - begin > 64) return {};
  return line.substr(begin, end - begin);
}

std::optional<std::uint64_t> SizeAfter(std::string_view text, std::string_view key) {
  const std::size_t pos = text.find(key);
  if (pos == std::string_view::npos) return std::nullopt;
  return jobs_text::ParseByteSize(text.substr(pos + key.size()));
}

// The size printed right before `suffix` ("79.15 GiB total capacity"): scan back over "<num> <unit>".
std::optional<std::uint64_t> SizeBefore(std::string_view text, std::string_view suffix) {
  const std::size_t pos = text.find(suffix);
  if (pos == std::string_view::npos || pos == 0) return std::nullopt;
  // The size starts after the previous "; " or "(" (at most ~24 bytes back).
  const std::size_t from = pos > 24 ? pos - 24 : 0;
  const std::string_view window = text.substr(from, pos - from);
  const std::size_t sep = window.find_last_of(";(");
  const std::string_view size = text::Trim(sep == std::string_view::npos ? window : window.substr(sep + 1));
  return jobs_text::ParseByteSize(size);
}

std::string HumanGiB(std::uint64_t bytes) {
  // One decimal, integer math: "2.0 GiB".
  const std::uint64_t tenths = (bytes * 10 + (1ULL << 29)) >> 30;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " GiB";
}

}  // namespace

std::optional<Event> ClassifyTorchWatchdogLine(std::string_view line) {
  line = jobs_text::Head(line);
  const std::size_t phrase = line.find(kWatchdogPhrase);
  if (phrase == std::string_view::npos) return std::nullopt;
  const std::string_view before = line.substr(0, phrase);
  const std::string_view after = line.substr(phrase + kWatchdogPhrase.size());

  Event event;
  event.event_class = "nccl_watchdog";
  event.severity = EventSeverity::kError;

  // Rank: the log prefix's "Rank N]" wins over torchrun's "[rankN]:".
  std::optional<std::uint64_t> rank;
  if (const std::size_t r = before.rfind("Rank "); r != std::string_view::npos) {
    rank = classifier_text::ParseUint(before.substr(r + 5));
  }
  if (!rank) rank = UintAfter(before, "[rank");
  AddNumber(event, "rank", rank);
  if (const std::size_t pg = before.rfind("[PG "); pg != std::string_view::npos) {
    std::string_view rest = before.substr(pg + 4);
    if (rest.starts_with("ID ")) rest.remove_prefix(3);
    const std::size_t end = rest.find(' ');
    if (end != std::string_view::npos && end > 0)
      event.fields.emplace_back("pg", Sanitize(rest.substr(0, end), 64));
  }
  const std::string_view op = KeyValue(after, "OpType=");
  if (!op.empty()) event.fields.emplace_back("op", Sanitize(op, 32));
  AddNumber(event, "seq", UintAfter(after, "SeqNum="));
  AddNumber(event, "numel_in", UintAfter(after, "NumelIn="));
  AddNumber(event, "numel_out", UintAfter(after, "NumelOut="));
  const auto timeout_ms = UintAfter(after, "Timeout(ms)=");
  AddNumber(event, "timeout_ms", timeout_ms);
  const auto ran_ms = UintAfter(after, "ran for ");
  AddNumber(event, "ran_ms", ran_ms);

  event.summary = "NCCL watchdog timeout";
  if (rank) event.summary += " on rank " + std::to_string(*rank);
  if (!op.empty()) event.summary += ": " + Sanitize(op, 32);
  if (const auto seq = UintAfter(after, "SeqNum=")) event.summary += " seq " + std::to_string(*seq);
  if (ran_ms) event.summary += " ran " + std::to_string(*ran_ms) + " ms";
  if (timeout_ms) event.summary += " (timeout " + std::to_string(*timeout_ms) + " ms)";
  return event;
}

std::optional<Event> ClassifyCudaOomLine(std::string_view line) {
  line = jobs_text::Head(line);
  const std::size_t phrase = line.find(kOomPhrase);
  if (phrase == std::string_view::npos) return std::nullopt;
  const std::string_view text = line.substr(phrase);

  Event event;
  event.event_class = "cuda_oom";
  event.severity = EventSeverity::kError;
  const std::string_view exception = ExceptionBefore(line, phrase);
  if (!exception.empty()) event.fields.emplace_back("error", Sanitize(exception, 64));

  std::optional<std::uint64_t> gpu = UintAfter(text, "(GPU ");
  if (!gpu) gpu = UintAfter(text, ". GPU ");
  AddNumber(event, "gpu", gpu);
  const auto tried = SizeAfter(text, "Tried to allocate ");
  AddNumber(event, "tried_bytes", tried);

  std::optional<std::uint64_t> total, free, allocated;
  if (text.find(" total capacity;") != std::string_view::npos) {
    total = SizeBefore(text, " total capacity;");
    free = SizeBefore(text, " free;");
    allocated = SizeBefore(text, " already allocated");
  } else {
    total = SizeAfter(text, "total capacity of ");
    if (!total) total = SizeAfter(text, "total capacty of ");
    free = SizeAfter(text, " of which ");
    allocated = SizeAfter(text, "Of the allocated memory ");
  }
  AddNumber(event, "total_bytes", total);
  AddNumber(event, "free_bytes", free);
  AddNumber(event, "allocated_bytes", allocated);

  event.summary = "CUDA out of memory";
  if (gpu) event.summary += " on GPU " + std::to_string(*gpu);
  if (tried) event.summary += ": tried to allocate " + HumanGiB(*tried);
  if (free && total) event.summary += ", " + HumanGiB(*free) + " free of " + HumanGiB(*total);
  return event;
}

}  // namespace gpuscope
