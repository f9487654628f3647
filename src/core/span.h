// Span: one timed operation of a trace, the agent's model of what leaves the node as a trace (as
// metric.h is of metrics): ids, name, start and end, a status, typed attributes. SpanExporter: where a
// producer of spans (the training collector) hands them, so that the producer knows no wire format and
// no receiver; the OTLP traces sink (src/sinks/otlp/otlp_traces_sink.h) is the one implementation.
//
// Thread-safety: Span is a value. SpanExporter::Export may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace gpuscope {

// A string, integer or floating-point attribute (OTLP AnyValue's string, int and double values).
struct SpanAttribute {
  std::string key;
  std::variant<std::string, int64_t, double> value;
};

// OTLP's Status.code: unset (the default: nothing known against the span), ok, error.
enum class SpanStatusCode : uint8_t { kUnset = 0, kOk = 1, kError = 2 };

struct Span {
  std::array<uint8_t, 16> trace_id{};
  std::array<uint8_t, 8> span_id{};
  std::array<uint8_t, 8> parent_span_id{};  // all zero: a root span
  std::string name;
  uint64_t start_unix_ns = 0;
  uint64_t end_unix_ns = 0;
  SpanStatusCode status = SpanStatusCode::kUnset;
  std::string status_message;  // why, with kError
  std::vector<SpanAttribute> attributes;
};

class SpanExporter {
 public:
  virtual ~SpanExporter() = default;
  // Takes `spans` for sending and returns at once: never waits for a receiver. Spans the exporter cannot
  // keep (not started, its queue failing) are dropped and counted in its own metrics.
  virtual void Export(const std::vector<Span>& spans) = 0;
};

}  // namespace gpuscope
