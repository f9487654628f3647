// Encodes spans (src/core/span.h) as an OTLP/HTTP traces request body: the protobuf message
// opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest, POSTed to /v1/traces with
// Content-Type application/x-protobuf. One ResourceSpans (the agent's resource attributes) holding one
// ScopeSpans (the agent as instrumentation scope) holding the spans in the order given. Field numbers
// follow opentelemetry-proto (trace/v1/trace.proto, collector/trace/v1/trace_service.proto).
//
// The work is split in two so that the traces sink can queue spans one by one: EncodeOtlpSpan gives one
// Span message (a queue record), EncodeOtlpTracesRequest wraps already encoded spans into a request.
//
// Thread-safety: pure functions; safe to call concurrently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/core/span.h"
#include "src/sinks/otlp/otlp_logs.h"

namespace gpuscope {

// The Span message: ids as bytes, kind INTERNAL, times as fixed64, typed attributes (strings made valid
// UTF-8), Status{message, code} when the status is not unset. Never fails.
std::string EncodeOtlpSpan(const Span& span);

// The ExportTraceServiceRequest holding `encoded_spans` (each the output of EncodeOtlpSpan) under one
// resource and scope. Never fails.
std::string EncodeOtlpTracesRequest(const std::vector<OtlpAttribute>& resource_attributes,
                                    std::string_view scope_name, std::string_view scope_version,
                                    const std::vector<std::string>& encoded_spans);

}  // namespace gpuscope
