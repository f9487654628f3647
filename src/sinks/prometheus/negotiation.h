// Content negotiation for /metrics: which exposition format (Accept) and whether to gzip
// (Accept-Encoding), following what Prometheus' client libraries do; and gzip compression itself.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "src/sinks/prometheus/exposition.h"

namespace gpuscope {

// OpenMetrics when the highest-q acceptable media range we can serve is application/openmetrics-text
// (version 1.0.0, 0.0.1 or none); text 0.0.4 when it is text/plain (version 0.0.4 or none), and text
// 0.0.4 for anything else, including an empty header. q=0 ranges are never chosen.
ExpositionFormat NegotiateExpositionFormat(std::string_view accept);

// True when Accept-Encoding lists gzip (or *) with a non-zero q value.
bool AcceptsGzip(std::string_view accept_encoding);

// Compresses `in` into a gzip member (RFC 1952) in `out`. False only when zlib fails (out of memory).
bool GzipCompress(std::string_view in, std::string& out);

}  // namespace gpuscope
