// The OTLP traces request (src/sinks/otlp/otlp_traces.h) decoded field by field with the test-side
// protobuf reader, at the numbers of opentelemetry-proto's trace.proto: ids as bytes, parent only on a
// child, kind INTERNAL, times, typed attributes, the status only when set; spans encoded one by one and
// wrapped later make the same request.
#include "src/sinks/otlp/otlp_traces.h"

#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <string>
#include <vector>

#include "tests/tools/push_receiver/proto_reader.h"

namespace gpuscope {
namespace {

using testing::FieldsNumbered;
using testing::ParseProtoFields;
using testing::ProtoField;

std::vector<ProtoField> MustParse(std::string_view bytes) {
  auto fields = ParseProtoFields(bytes);
  EXPECT_TRUE(fields.has_value());
  return fields.value_or(std::vector<ProtoField>{});
}

// The single field numbered `number`, which must be present exactly once with `wire_type`.
ProtoField One(const std::vector<ProtoField>& fields, uint32_t number, uint8_t wire_type) {
  const auto matches = FieldsNumbered(fields, number);
  EXPECT_EQ(matches.size(), 1u) << "field " << number;
  if (matches.size() != 1) return {};
  EXPECT_EQ(matches[0].wire_type, wire_type) << "field " << number;
  return matches[0];
}

// KeyValue{key = 1, AnyValue value = 2} as "key" -> "s:text" | "i:123" | "d:1.5".
std::map<std::string, std::string> DecodeAttributes(const std::vector<ProtoField>& key_values) {
  std::map<std::string, std::string> out;
  for (const ProtoField& kv_field : key_values) {
    const auto kv = MustParse(kv_field.bytes);
    const std::string key(One(kv, 1, 2).bytes);
    const auto any = MustParse(One(kv, 2, 2).bytes);
    EXPECT_EQ(any.size(), 1u) << key;
    if (any.size() != 1) continue;
    if (any[0].number == 1 && any[0].wire_type == 2) {
      out[key] = "s:" + std::string(any[0].bytes);
    } else if (any[0].number == 3 && any[0].wire_type == 0) {
      out[key] = "i:" + std::to_string(static_cast<int64_t>(any[0].scalar));
    } else if (any[0].number == 4 && any[0].wire_type == 1) {
      out[key] = "d:" + std::to_string(std::bit_cast<double>(any[0].scalar));
    } else {
      ADD_FAILURE() << key << ": AnyValue field " << any[0].number;
    }
  }
  return out;
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::vector<Span> SampleSpans() {
  Span step;
  for (uint8_t i = 0; i < 16; ++i) step.trace_id[i] = static_cast<uint8_t>(0xa0 + i);
  for (uint8_t i = 0; i < 8; ++i) step.span_id[i] = static_cast<uint8_t>(0x10 + i);
  step.name = "train.step";
  step.start_unix_ns = 1'700'000'000'000'000'000ull;
  step.end_unix_ns = 1'700'000'002'500'000'000ull;
  step.attributes = {
      {"hpc_job", std::string("4242")}, {"rank", int64_t{3}}, {"gpuscope.compute_seconds", 1.5}};
  Span child;
  child.trace_id = step.trace_id;
  child.parent_span_id = step.span_id;
  for (uint8_t i = 0; i < 8; ++i) child.span_id[i] = static_cast<uint8_t>(0x20 + i);
  child.name = std::string("collective.all_reduce\xff", 22);  // an invalid byte: repaired
  child.start_unix_ns = 1'700'000'002'000'000'000ull;
  child.end_unix_ns = 1'700'000'002'500'000'000ull;
  child.status = SpanStatusCode::kError;
  child.status_message = "entered, no completion";
  child.attributes = {{"bytes", int64_t{-1}}};  // int64 as two's complement varint
  return {step, child};
}

TEST(WireOtlpTraces, TheRequestHasEverySpanFieldAtItsNumber) {
  const std::vector<Span> spans = SampleSpans();
  std::vector<std::string> encoded;
  for (const Span& span : spans) encoded.push_back(EncodeOtlpSpan(span));
  const std::string body = EncodeOtlpTracesRequest({{"service.name", "gpuscope-agent"}, {"host.name", "n1"}},
                                                   "gpuscope", "1.2.3", encoded);

  const auto request = MustParse(body);  // ExportTraceServiceRequest
  ASSERT_EQ(request.size(), 1u);
  const auto resource_spans = MustParse(One(request, 1, 2).bytes);  // resource_spans = 1
  ASSERT_EQ(resource_spans.size(), 2u);
  const auto resource = MustParse(One(resource_spans, 1, 2).bytes);  // ResourceSpans.resource = 1
  EXPECT_EQ(
      DecodeAttributes(FieldsNumbered(resource, 1)),
      (std::map<std::string, std::string>{{"service.name", "s:gpuscope-agent"}, {"host.name", "s:n1"}}));
  const auto scope_spans = MustParse(One(resource_spans, 2, 2).bytes);  // scope_spans = 2
  const auto scope = MustParse(One(scope_spans, 1, 2).bytes);           // ScopeSpans.scope = 1
  EXPECT_EQ(One(scope, 1, 2).bytes, "gpuscope");
  EXPECT_EQ(One(scope, 2, 2).bytes, "1.2.3");
  const auto span_fields = FieldsNumbered(scope_spans, 2);  // ScopeSpans.spans = 2
  ASSERT_EQ(span_fields.size(), 2u);

  const auto step = MustParse(span_fields[0].bytes);
  EXPECT_EQ(Hex(One(step, 1, 2).bytes), "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");  // trace_id
  EXPECT_EQ(Hex(One(step, 2, 2).bytes), "1011121314151617");                  // span_id
  EXPECT_TRUE(FieldsNumbered(step, 4).empty()) << "a root span has no parent_span_id";
  EXPECT_EQ(One(step, 5, 2).bytes, "train.step");
  EXPECT_EQ(One(step, 6, 0).scalar, 1u);  // SPAN_KIND_INTERNAL
  EXPECT_EQ(One(step, 7, 1).scalar, 1'700'000'000'000'000'000ull);
  EXPECT_EQ(One(step, 8, 1).scalar, 1'700'000'002'500'000'000ull);
  EXPECT_EQ(DecodeAttributes(FieldsNumbered(step, 9)),
            (std::map<std::string, std::string>{
                {"hpc_job", "s:4242"}, {"rank", "i:3"}, {"gpuscope.compute_seconds", "d:1.500000"}}));
  EXPECT_TRUE(FieldsNumbered(step, 15).empty()) << "an unset status is left out";

  const auto child = MustParse(span_fields[1].bytes);
  EXPECT_EQ(Hex(One(child, 1, 2).bytes), "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  EXPECT_EQ(Hex(One(child, 2, 2).bytes), "2021222324252627");
  EXPECT_EQ(Hex(One(child, 4, 2).bytes), "1011121314151617");  // parent_span_id: the step
  EXPECT_EQ(One(child, 5, 2).bytes, "collective.all_reduce\xef\xbf\xbd");
  EXPECT_EQ(DecodeAttributes(FieldsNumbered(child, 9)),
            (std::map<std::string, std::string>{{"bytes", "i:-1"}}));
  const auto status = MustParse(One(child, 15, 2).bytes);  // Status{message = 2, code = 3}
  EXPECT_EQ(One(status, 2, 2).bytes, "entered, no completion");
  EXPECT_EQ(One(status, 3, 0).scalar, 2u);  // STATUS_CODE_ERROR
}

TEST(WireOtlpTraces, ARequestOfNoSpansIsStillAValidRequest) {
  const std::string body = EncodeOtlpTracesRequest({{"host.name", "n1"}}, "gpuscope", "", {});
  const auto resource_spans = MustParse(One(MustParse(body), 1, 2).bytes);
  const auto scope_spans = MustParse(One(resource_spans, 2, 2).bytes);
  EXPECT_TRUE(FieldsNumbered(scope_spans, 2).empty());
}

}  // namespace
}  // namespace gpuscope
