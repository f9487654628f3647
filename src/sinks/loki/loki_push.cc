#include "src/sinks/loki/loki_push.h"

#include <snappy.h>

#include <algorithm>
#include <map>
#include <string>

#include "src/core/json_string.h"
#include "src/core/utf8.h"
#include "src/sinks/otlp/protowire.h"

namespace gpuscope {
namespace {

using protowire::AppendBytesField;
using protowire::AppendVarintField;

struct Stream {
  std::vector<LokiLabel> labels;  // sorted
  std::string selector;           // FormatLokiLabels(labels)
  std::vector<const LokiEntry*> entries;
};

std::vector<LokiLabel> Sorted(std::vector<LokiLabel> labels) {
  std::stable_sort(labels.begin(), labels.end(),
                   [](const LokiLabel& a, const LokiLabel& b) { return a.name < b.name; });
  return labels;
}

// Streams in order of first appearance; entries in input order within each stream.
std::vector<Stream> GroupStreams(std::span<const LokiEntry> entries) {
  std::vector<Stream> streams;
  std::map<std::string, size_t> index;
  for (const auto& entry : entries) {
    std::vector<LokiLabel> labels = Sorted(entry.stream_labels);
    std::string selector = FormatLokiLabels(labels);
    auto [it, inserted] = index.try_emplace(selector, streams.size());
    if (inserted) streams.push_back(Stream{std::move(labels), std::move(selector), {}});
    streams[it->second].entries.push_back(&entry);
  }
  return streams;
}

// google.protobuf.Timestamp { int64 seconds = 1; int32 nanos = 2; } with nanos in [0, 1e9).
std::string EncodeTimestamp(int64_t ns) {
  int64_t seconds = ns / 1000000000;
  int64_t nanos = ns % 1000000000;
  if (nanos < 0) {
    nanos += 1000000000;
    seconds -= 1;
  }
  std::string out;
  if (seconds != 0) AppendVarintField(out, 1, static_cast<uint64_t>(seconds));
  if (nanos != 0) AppendVarintField(out, 2, static_cast<uint64_t>(nanos));
  return out;
}

// LabelPairAdapter { string name = 1; string value = 2; }
std::string EncodeLabelPair(const LokiLabel& label) {
  std::string out;
  AppendBytesField(out, 1, ToValidUtf8(label.name));
  AppendBytesField(out, 2, ToValidUtf8(label.value));
  return out;
}

// EntryAdapter { Timestamp timestamp = 1; string line = 2; repeated LabelPairAdapter
//                structuredMetadata = 3; }
std::string EncodeEntry(const LokiEntry& entry) {
  std::string out;
  out.reserve(entry.line.size() + 32);
  AppendBytesField(out, 1, EncodeTimestamp(entry.timestamp_ns));
  AppendBytesField(out, 2, ToValidUtf8(entry.line));
  for (const auto& label : entry.structured_metadata) AppendBytesField(out, 3, EncodeLabelPair(label));
  return out;
}

}  // namespace

std::string FormatLokiLabels(std::vector<LokiLabel> labels) {
  labels = Sorted(std::move(labels));
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out.append(", ");
    out.append(labels[i].name);
    out.append("=\"");
    for (const char c : labels[i].value) {
      if (c == '\\') {
        out.append("\\\\");
      } else if (c == '"') {
        out.append("\\\"");
      } else if (c == '\n') {
        out.append("\\n");
      } else {
        out.push_back(c);
      }
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

std::string EncodeLokiPushProtobuf(std::span<const LokiEntry> entries) {
  std::string request;
  for (const auto& stream : GroupStreams(entries)) {
    // StreamAdapter { string labels = 1; repeated EntryAdapter entries = 2; }
    std::string adapter;
    AppendBytesField(adapter, 1, ToValidUtf8(stream.selector));
    for (const LokiEntry* entry : stream.entries) AppendBytesField(adapter, 2, EncodeEntry(*entry));
    // PushRequest { repeated StreamAdapter streams = 1; }
    AppendBytesField(request, 1, adapter);
  }
  return request;
}

std::string EncodeLokiPushSnappy(std::span<const LokiEntry> entries) {
  const std::string raw = EncodeLokiPushProtobuf(entries);
  std::string compressed;
  snappy::Compress(raw.data(), raw.size(), &compressed);
  return compressed;
}

std::string EncodeLokiPushJson(std::span<const LokiEntry> entries) {
  std::string out = "{\"streams\":[";
  bool first_stream = true;
  for (const auto& stream : GroupStreams(entries)) {
    if (!first_stream) out.push_back(',');
    first_stream = false;
    out.append("{\"stream\":{");
    for (size_t i = 0; i < stream.labels.size(); ++i) {
      if (i > 0) out.push_back(',');
      AppendJsonString(out, stream.labels[i].name);
      out.push_back(':');
      AppendJsonString(out, stream.labels[i].value);
    }
    out.append("},\"values\":[");
    for (size_t e = 0; e < stream.entries.size(); ++e) {
      const LokiEntry& entry = *stream.entries[e];
      if (e > 0) out.push_back(',');
      out.append("[\"");
      out.append(std::to_string(entry.timestamp_ns));
      out.append("\",");
      AppendJsonString(out, entry.line);
      if (!entry.structured_metadata.empty()) {
        out.append(",{");
        for (size_t i = 0; i < entry.structured_metadata.size(); ++i) {
          if (i > 0) out.push_back(',');
          AppendJsonString(out, entry.structured_metadata[i].name);
          out.push_back(':');
          AppendJsonString(out, entry.structured_metadata[i].value);
        }
        out.push_back('}');
      }
      out.push_back(']');
    }
    out.append("]}");
  }
  out.append("]}");
  return out;
}

}  // namespace gpuscope
