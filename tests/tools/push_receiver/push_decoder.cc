#include "tests/tools/push_receiver/push_decoder.h"

#include <snappy.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

// The receiver parses what the agent sent with its own readers; only the lines it writes for the tests
// use the agent's JSON string writer (a fault there would make those lines fail to parse, not pass).
#include "src/core/json_string.h"
#include "src/core/utf8.h"
#include "tests/tools/push_receiver/proto_reader.h"

namespace gpuscope::testing {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// ---- JSON output ----

// Builds one JSON object; values are appended already rendered.
class JsonObject {
 public:
  JsonObject& Raw(std::string_view key, std::string_view rendered) {
    out_ += out_.size() == 1 ? "" : ",";
    AppendJsonString(out_, key);
    out_ += ':';
    out_ += rendered;
    return *this;
  }
  JsonObject& String(std::string_view key, std::string_view value) {
    std::string rendered;
    AppendJsonString(rendered, value);
    return Raw(key, rendered);
  }
  JsonObject& Object(std::string_view key, const Pairs& pairs) {
    JsonObject inner;
    for (const auto& [k, v] : pairs) inner.String(k, v);
    return Raw(key, inner.Done());
  }
  std::string Done() const { return out_ + "}"; }

 private:
  std::string out_ = "{";
};

// ---- a small strict JSON reader (RFC 8259) for the Loki JSON form ----

struct JsonMember;

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // string value, or the number as written
  std::vector<Json> items;
  // std::vector of an incomplete type is fine; a std::pair of one is not (clang with libstdc++).
  std::vector<JsonMember> members;
};

struct JsonMember {
  std::string first;  // key
  Json second;
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view in) : in_(in) {}

  bool ParseDocument(Json* out) {
    if (!ParseValue(out, 0)) return false;
    SkipSpace();
    return pos_ == in_.size();
  }

 private:
  static constexpr int kMaxDepth = 64;

  void SkipSpace() {
    while (pos_ < in_.size() &&
           (in_[pos_] == ' ' || in_[pos_] == '\t' || in_[pos_] == '\n' || in_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < in_.size() && in_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Literal(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool Hex4(uint32_t* value) {
    if (pos_ + 4 > in_.size()) return false;
    *value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = in_[pos_++];
      *value <<= 4;
      if (c >= '0' && c <= '9') {
        *value |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        *value |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        *value |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    return true;
  }
  bool ParseString(std::string* out) {
    if (!Consume('"')) return false;
    while (pos_ < in_.size()) {
      const char c = in_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= in_.size()) return false;
      const char e = in_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          *out += e;
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // high surrogate: a low one must follow
            uint32_t low;
            if (!Literal("\\u") || !Hex4(&low) || low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return false;
          }
          AppendUtf8(*out, cp);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool ParseValue(Json* out, int depth) {
    if (depth > kMaxDepth) return false;
    SkipSpace();
    if (pos_ >= in_.size()) return false;
    const char c = in_[pos_];
    if (c == '{') {
      ++pos_;
      out->kind = Json::Kind::kObject;
      if (Consume('}')) return true;
      do {
        std::string key;
        Json value;
        if (!ParseString(&key) || !Consume(':') || !ParseValue(&value, depth + 1)) return false;
        out->members.push_back(JsonMember{std::move(key), std::move(value)});
      } while (Consume(','));
      return Consume('}');
    }
    if (c == '[') {
      ++pos_;
      out->kind = Json::Kind::kArray;
      if (Consume(']')) return true;
      do {
        Json value;
        if (!ParseValue(&value, depth + 1)) return false;
        out->items.push_back(std::move(value));
      } while (Consume(','));
      return Consume(']');
    }
    if (c == '"') {
      out->kind = Json::Kind::kString;
      return ParseString(&out->text);
    }
    if (Literal("true") || Literal("false")) {
      out->kind = Json::Kind::kBool;
      out->boolean = in_[pos_ - 1] == 'e' && in_[pos_ - 2] == 'u';
      return true;
    }
    if (Literal("null")) return true;
    const size_t start = pos_;
    while (pos_ < in_.size() && std::strchr("0123456789+-.eE", in_[pos_]) != nullptr && in_[pos_] != '\0')
      ++pos_;
    if (pos_ == start) return false;
    out->kind = Json::Kind::kNumber;
    out->text = std::string(in_.substr(start, pos_ - start));
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
};

const Json* Member(const Json& object, std::string_view key) {
  for (const auto& [k, v] : object.members) {
    if (k == key) return &v;
  }
  return nullptr;
}

// Loki's stream selector {a="b", c="d"} (Prometheus label syntax; \\, \" and \n escaped in values).
bool ParseLokiSelector(std::string_view s, Pairs* labels) {
  size_t i = 0;
  auto skip = [&] {
    while (i < s.size() && s[i] == ' ') ++i;
  };
  skip();
  if (i >= s.size() || s[i++] != '{') return false;
  skip();
  if (i < s.size() && s[i] == '}') return ++i == s.size();
  while (true) {
    skip();
    const size_t name_start = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    if (i == name_start) return false;
    std::string name(s.substr(name_start, i - name_start));
    skip();
    if (i >= s.size() || s[i++] != '=') return false;
    skip();
    if (i >= s.size() || s[i++] != '"') return false;
    std::string value;
    while (true) {
      if (i >= s.size()) return false;
      const char c = s[i++];
      if (c == '"') break;
      if (c == '\\') {
        if (i >= s.size()) return false;
        const char e = s[i++];
        value += e == 'n' ? '\n' : e;
      } else {
        value += c;
      }
    }
    labels->emplace_back(std::move(name), std::move(value));
    skip();
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') return ++i == s.size();
    return false;
  }
}

std::optional<std::vector<ProtoField>> Fields(std::string_view bytes) { return ParseProtoFields(bytes); }

bool DecodeLokiProtobuf(std::string_view body, std::vector<std::string>* lines, std::string* error) {
  std::string raw;
  size_t raw_length = 0;
  constexpr size_t kMaxUncompressed = 256 << 20;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &raw_length) ||
      raw_length > kMaxUncompressed || !snappy::Uncompress(body.data(), body.size(), &raw)) {
    *error = "body is not snappy block-compressed";
    return false;
  }
  const auto request = Fields(raw);
  if (!request) {
    *error = "PushRequest is not valid protobuf";
    return false;
  }
  for (const auto& stream_field : *request) {
    if (stream_field.number != 1) continue;  // PushRequest.streams
    if (stream_field.wire_type != 2) {
      *error = "PushRequest.streams has the wrong wire type";
      return false;
    }
    const auto stream = Fields(stream_field.bytes);
    if (!stream) {
      *error = "StreamAdapter is not valid protobuf";
      return false;
    }
    Pairs labels;
    const auto label_fields = FieldsNumbered(*stream, 1);  // StreamAdapter.labels
    if (label_fields.size() == 1 && !IsValidUtf8(label_fields[0].bytes)) {
      *error = "StreamAdapter.labels is not valid UTF-8 (a protobuf string; receivers reject it)";
      return false;
    }
    if (label_fields.size() != 1 || label_fields[0].wire_type != 2 ||
        !ParseLokiSelector(label_fields[0].bytes, &labels)) {
      *error = "StreamAdapter.labels missing or not a label selector";
      return false;
    }
    for (const auto& entry_field : FieldsNumbered(*stream, 2)) {  // StreamAdapter.entries
      const auto entry = entry_field.wire_type == 2 ? Fields(entry_field.bytes) : std::nullopt;
      if (!entry) {
        *error = "EntryAdapter is not valid protobuf";
        return false;
      }
      int64_t seconds = 0;
      int64_t nanos = 0;
      std::string line;
      Pairs metadata;
      for (const auto& f : *entry) {
        if (f.number == 1 && f.wire_type == 2) {  // EntryAdapter.timestamp (google.protobuf.Timestamp)
          const auto ts = Fields(f.bytes);
          if (!ts) {
            *error = "Timestamp is not valid protobuf";
            return false;
          }
          for (const auto& t : *ts) {
            if (t.number == 1 && t.wire_type == 0) seconds = static_cast<int64_t>(t.scalar);
            if (t.number == 2 && t.wire_type == 0) nanos = static_cast<int32_t>(t.scalar);
          }
        } else if (f.number == 2 && f.wire_type == 2) {  // EntryAdapter.line
          if (!IsValidUtf8(f.bytes)) {
            *error = "EntryAdapter.line is not valid UTF-8 (a protobuf string; receivers reject it)";
            return false;
          }
          line = std::string(f.bytes);
        } else if (f.number == 3 && f.wire_type == 2) {  // EntryAdapter.structuredMetadata
          const auto pair = Fields(f.bytes);
          if (!pair) {
            *error = "LabelPairAdapter is not valid protobuf";
            return false;
          }
          const auto name = FieldsNumbered(*pair, 1);
          const auto value = FieldsNumbered(*pair, 2);
          if ((!name.empty() && !IsValidUtf8(name[0].bytes)) ||
              (!value.empty() && !IsValidUtf8(value[0].bytes))) {
            *error = "LabelPairAdapter is not valid UTF-8 (protobuf strings; receivers reject it)";
            return false;
          }
          metadata.emplace_back(name.empty() ? "" : std::string(name[0].bytes),
                                value.empty() ? "" : std::string(value[0].bytes));
        } else {
          *error = "unexpected EntryAdapter field " + std::to_string(f.number);
          return false;
        }
      }
      lines->push_back(JsonObject()
                           .String("sink", "loki")
                           .String("format", "protobuf")
                           .Object("stream", labels)
                           .String("timestamp_ns", std::to_string(static_cast<int64_t>(
                                                       static_cast<uint64_t>(seconds) * 1000000000u +
                                                       static_cast<uint64_t>(nanos))))
                           .String("line", line)
                           .Object("metadata", metadata)
                           .Done());
    }
  }
  return true;
}

bool DecodeLokiJson(std::string_view body, std::vector<std::string>* lines, std::string* error) {
  Json doc;
  if (!JsonReader(body).ParseDocument(&doc) || doc.kind != Json::Kind::kObject) {
    *error = "body is not a JSON object";
    return false;
  }
  const Json* streams = Member(doc, "streams");
  if (streams == nullptr || streams->kind != Json::Kind::kArray) {
    *error = "no streams array";
    return false;
  }
  for (const Json& stream : streams->items) {
    const Json* labels_json = stream.kind == Json::Kind::kObject ? Member(stream, "stream") : nullptr;
    const Json* values = stream.kind == Json::Kind::kObject ? Member(stream, "values") : nullptr;
    if (labels_json == nullptr || labels_json->kind != Json::Kind::kObject || values == nullptr ||
        values->kind != Json::Kind::kArray) {
      *error = "stream without a stream object or values array";
      return false;
    }
    Pairs labels;
    for (const auto& [k, v] : labels_json->members) {
      if (v.kind != Json::Kind::kString) {
        *error = "stream label value is not a string";
        return false;
      }
      labels.emplace_back(k, v.text);
    }
    for (const Json& value : values->items) {
      if (value.kind != Json::Kind::kArray || value.items.size() < 2 || value.items.size() > 3 ||
          value.items[0].kind != Json::Kind::kString || value.items[1].kind != Json::Kind::kString) {
        *error = "value is not [\"<ns>\", \"<line>\", {metadata}?]";
        return false;
      }
      const std::string& ns = value.items[0].text;
      if (ns.empty() || ns.find_first_not_of("0123456789") != std::string::npos) {
        *error = "timestamp is not a string of nanoseconds";
        return false;
      }
      Pairs metadata;
      if (value.items.size() == 3) {
        if (value.items[2].kind != Json::Kind::kObject) {
          *error = "structured metadata is not an object";
          return false;
        }
        for (const auto& [k, v] : value.items[2].members) {
          if (v.kind != Json::Kind::kString) {
            *error = "structured metadata value is not a string";
            return false;
          }
          metadata.emplace_back(k, v.text);
        }
      }
      lines->push_back(JsonObject()
                           .String("sink", "loki")
                           .String("format", "json")
                           .Object("stream", labels)
                           .String("timestamp_ns", ns)
                           .String("line", value.items[1].text)
                           .Object("metadata", metadata)
                           .Done());
    }
  }
  return true;
}

// AnyValue rendered as JSON: string, bool, int, double as themselves; array, kvlist and bytes as a
// marker string (the sinks send strings only).
bool RenderAnyValue(std::string_view bytes, std::string* rendered) {
  const auto fields = Fields(bytes);
  if (!fields) return false;
  rendered->clear();
  if (fields->empty()) {
    *rendered = "null";
    return true;
  }
  const ProtoField& f = fields->back();
  switch (f.number) {
    case 1:  // string_value; a protobuf string must be valid UTF-8 (receivers reject it otherwise)
      if (f.wire_type != 2 || !IsValidUtf8(f.bytes)) return false;
      AppendJsonString(*rendered, f.bytes);
      return true;
    case 2:  // bool_value
      *rendered = f.scalar != 0 ? "true" : "false";
      return f.wire_type == 0;
    case 3:  // int_value
      *rendered = std::to_string(static_cast<int64_t>(f.scalar));
      return f.wire_type == 0;
    case 4: {  // double_value
      double d;
      std::memcpy(&d, &f.scalar, sizeof(d));
      *rendered = std::to_string(d);
      return f.wire_type == 1;
    }
    case 5:
      *rendered = "\"<array>\"";
      return true;
    case 6:
      *rendered = "\"<kvlist>\"";
      return true;
    case 7:
      *rendered = "\"<bytes>\"";
      return true;
    default:
      return false;
  }
}

// repeated KeyValue { string key = 1; AnyValue value = 2; } rendered as one JSON object.
bool RenderAttributes(const std::vector<ProtoField>& key_values, std::string* rendered) {
  JsonObject object;
  for (const auto& kv_field : key_values) {
    const auto kv = kv_field.wire_type == 2 ? Fields(kv_field.bytes) : std::nullopt;
    if (!kv) return false;
    const auto key = FieldsNumbered(*kv, 1);
    const auto value = FieldsNumbered(*kv, 2);
    std::string value_json = "null";
    if (!key.empty() && !IsValidUtf8(key[0].bytes)) return false;
    if (!value.empty() && !RenderAnyValue(value[0].bytes, &value_json)) return false;
    object.Raw(key.empty() ? "" : key[0].bytes, value_json);
  }
  *rendered = object.Done();
  return true;
}

}  // namespace

bool DecodeLokiPush(std::string_view body, bool json, std::vector<std::string>* lines, std::string* error) {
  std::vector<std::string> decoded;
  if (json && !IsValidUtf8(body)) {
    *error = "JSON body is not valid UTF-8";
    return false;
  }
  const bool ok = json ? DecodeLokiJson(body, &decoded, error) : DecodeLokiProtobuf(body, &decoded, error);
  if (!ok) return false;
  for (auto& line : decoded) lines->push_back(std::move(line));
  return true;
}

bool DecodeOtlpLogs(std::string_view body, std::vector<std::string>* lines, std::string* error) {
  std::vector<std::string> decoded;
  auto fail = [&](std::string reason) {
    *error = std::move(reason);
    return false;
  };
  const auto request = Fields(body);
  if (!request) return fail("ExportLogsServiceRequest is not valid protobuf");
  for (const auto& rl_field : FieldsNumbered(*request, 1)) {  // resource_logs
    const auto resource_logs = rl_field.wire_type == 2 ? Fields(rl_field.bytes) : std::nullopt;
    if (!resource_logs) return fail("ResourceLogs is not valid protobuf");
    std::string resource_json = "{}";
    const auto resource = FieldsNumbered(*resource_logs, 1);  // ResourceLogs.resource
    if (!resource.empty()) {
      const auto resource_fields = Fields(resource[0].bytes);
      if (!resource_fields || !RenderAttributes(FieldsNumbered(*resource_fields, 1), &resource_json)) {
        return fail("Resource attributes malformed");
      }
    }
    for (const auto& sl_field : FieldsNumbered(*resource_logs, 2)) {  // ResourceLogs.scope_logs
      const auto scope_logs = sl_field.wire_type == 2 ? Fields(sl_field.bytes) : std::nullopt;
      if (!scope_logs) return fail("ScopeLogs is not valid protobuf");
      Pairs scope_pairs;
      const auto scope = FieldsNumbered(*scope_logs, 1);  // ScopeLogs.scope (InstrumentationScope)
      if (!scope.empty()) {
        const auto scope_fields = Fields(scope[0].bytes);
        if (!scope_fields) return fail("InstrumentationScope is not valid protobuf");
        const auto name = FieldsNumbered(*scope_fields, 1);
        const auto version = FieldsNumbered(*scope_fields, 2);
        scope_pairs = {{"name", name.empty() ? "" : std::string(name[0].bytes)},
                       {"version", version.empty() ? "" : std::string(version[0].bytes)}};
      }
      for (const auto& record_field : FieldsNumbered(*scope_logs, 2)) {  // ScopeLogs.log_records
        const auto record = record_field.wire_type == 2 ? Fields(record_field.bytes) : std::nullopt;
        if (!record) return fail("LogRecord is not valid protobuf");
        uint64_t time = 0;
        uint64_t observed = 0;
        int64_t severity_number = 0;
        std::string severity_text;
        std::string body_json = "null";
        std::vector<ProtoField> attributes;
        for (const auto& f : *record) {
          switch (f.number) {
            case 1:  // time_unix_nano, fixed64
              if (f.wire_type != 1) return fail("LogRecord.time_unix_nano is not fixed64");
              time = f.scalar;
              break;
            case 2:  // severity_number, enum
              if (f.wire_type != 0) return fail("LogRecord.severity_number is not a varint");
              severity_number = static_cast<int32_t>(f.scalar);
              break;
            case 3:  // severity_text
              if (!IsValidUtf8(f.bytes)) return fail("LogRecord.severity_text is not valid UTF-8");
              severity_text = std::string(f.bytes);
              break;
            case 5:  // body, AnyValue
              if (f.wire_type != 2 || !RenderAnyValue(f.bytes, &body_json))
                return fail("LogRecord.body malformed");
              break;
            case 6:  // attributes
              attributes.push_back(f);
              break;
            case 11:  // observed_time_unix_nano, fixed64
              if (f.wire_type != 1) return fail("LogRecord.observed_time_unix_nano is not fixed64");
              observed = f.scalar;
              break;
            default:  // dropped_attributes_count, flags, trace_id, span_id, event_name: not used here
              break;
          }
        }
        std::string attributes_json;
        if (!RenderAttributes(attributes, &attributes_json)) return fail("LogRecord.attributes malformed");
        decoded.push_back(JsonObject()
                              .String("sink", "otlp")
                              .Raw("resource", resource_json)
                              .Object("scope", scope_pairs)
                              .String("time_unix_nano", std::to_string(time))
                              .String("observed_time_unix_nano", std::to_string(observed))
                              .Raw("severity_number", std::to_string(severity_number))
                              .String("severity_text", severity_text)
                              .Raw("body", body_json)
                              .Raw("attributes", attributes_json)
                              .Done());
      }
    }
  }
  for (auto& line : decoded) lines->push_back(std::move(line));
  return true;
}

bool Gunzip(std::string_view gz, size_t max_bytes, std::string* out) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) return false;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  stream.avail_in = static_cast<uInt>(gz.size());
  out->clear();
  int rc = Z_OK;
  char chunk[16384];
  while (rc == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof(chunk);
    rc = inflate(&stream, Z_NO_FLUSH);
    out->append(chunk, sizeof(chunk) - stream.avail_out);
    if (out->size() > max_bytes) rc = Z_MEM_ERROR;
    if (rc == Z_BUF_ERROR) break;
  }
  inflateEnd(&stream);
  return rc == Z_STREAM_END;
}

}  // namespace gpuscope::testing
