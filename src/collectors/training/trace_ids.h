// Trace and span ids of training telemetry, derived from what every node knows about a step, so that the
// agents of a job's nodes put their ranks' spans into one trace without talking to each other: the trace
// of step N of job J is the same 16 bytes on every node, and so is the id of rank R's span in it. The
// step histogram's exemplars (OpenMetrics) carry the same trace id, so a slow bucket links to the trace.
//
// Ids are the leading bytes of SHA-256 over a domain tag and the length-prefixed parts (no two inputs
// share an encoding). A job requeued under the same id that replays step numbers gets the same ids again;
// trace backends keep both runs' spans in one trace, told apart by their times.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuscope {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

// The trace of one step of a job: every rank's step span and its collectives.
TraceId TrainingStepTraceId(std::string_view job, uint64_t step);
// The step span of one rank.
SpanId TrainingStepSpanId(std::string_view job, uint64_t step, int32_t rank);
// A collective of one rank, a child of the step span it ran in.
SpanId TrainingCollectiveSpanId(std::string_view job, int32_t rank, uint64_t comm, uint64_t seq);

// Lower-case hex, as OpenMetrics exemplars and OTLP/JSON write ids.
std::string IdHex(const uint8_t* bytes, size_t size);
template <size_t N>
std::string IdHex(const std::array<uint8_t, N>& id) {
  return IdHex(id.data(), N);
}

}  // namespace gpuscope
