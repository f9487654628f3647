#include "src/sinks/otlp/otlp_traces.h"

#include <bit>
#include <type_traits>

#include "src/core/utf8.h"
#include "src/sinks/otlp/protowire.h"

namespace gpuscope {
namespace {

using protowire::AppendBytesField;
using protowire::AppendFixed64Field;
using protowire::AppendVarintField;

constexpr uint64_t kSpanKindInternal = 1;

std::string_view Bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// AnyValue { string string_value = 1; int64 int_value = 3; double double_value = 4; }
std::string EncodeAnyValue(const SpanAttribute& attribute) {
  std::string out;
  std::visit(
      [&out](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          AppendBytesField(out, 1, ToValidUtf8(value));
        } else if constexpr (std::is_same_v<T, int64_t>) {
          AppendVarintField(out, 3, static_cast<uint64_t>(value));
        } else {
          AppendFixed64Field(out, 4, std::bit_cast<uint64_t>(value));
        }
      },
      attribute.value);
  return out;
}

// KeyValue { string key = 1; AnyValue value = 2; }
std::string EncodeKeyValue(const SpanAttribute& attribute) {
  std::string out;
  AppendBytesField(out, 1, ToValidUtf8(attribute.key));
  AppendBytesField(out, 2, EncodeAnyValue(attribute));
  return out;
}

}  // namespace

// Span { bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5;
//        SpanKind kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
//        repeated KeyValue attributes = 9; Status status = 15; }
// Status { string message = 2; StatusCode code = 3; }
std::string EncodeOtlpSpan(const Span& span) {
  std::string out;
  out.reserve(128 + 32 * span.attributes.size());
  AppendBytesField(out, 1, Bytes(span.trace_id.data(), span.trace_id.size()));
  AppendBytesField(out, 2, Bytes(span.span_id.data(), span.span_id.size()));
  if (span.parent_span_id != std::array<uint8_t, 8>{}) {
    AppendBytesField(out, 4, Bytes(span.parent_span_id.data(), span.parent_span_id.size()));
  }
  AppendBytesField(out, 5, ToValidUtf8(span.name));
  AppendVarintField(out, 6, kSpanKindInternal);
  AppendFixed64Field(out, 7, span.start_unix_ns);
  AppendFixed64Field(out, 8, span.end_unix_ns);
  for (const SpanAttribute& attribute : span.attributes) AppendBytesField(out, 9, EncodeKeyValue(attribute));
  if (span.status != SpanStatusCode::kUnset) {
    std::string status;
    if (!span.status_message.empty()) AppendBytesField(status, 2, ToValidUtf8(span.status_message));
    AppendVarintField(status, 3, static_cast<uint64_t>(span.status));
    AppendBytesField(out, 15, status);
  }
  return out;
}

std::string EncodeOtlpTracesRequest(const std::vector<OtlpAttribute>& resource_attributes,
                                    std::string_view scope_name, std::string_view scope_version,
                                    const std::vector<std::string>& encoded_spans) {
  // ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
  std::string scope_spans;
  AppendBytesField(scope_spans, 1, EncodeOtlpScope(scope_name, scope_version));
  for (const std::string& span : encoded_spans) AppendBytesField(scope_spans, 2, span);
  // ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
  std::string resource_spans;
  AppendBytesField(resource_spans, 1, EncodeOtlpResource(resource_attributes));
  AppendBytesField(resource_spans, 2, scope_spans);
  // ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
  std::string request;
  AppendBytesField(request, 1, resource_spans);
  return request;
}

}  // namespace gpuscope
