#include "src/sinks/prometheus/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "src/core/utf8.h"

namespace gpuscope {
namespace {

// Appends `s` escaping backslash and newline (and the double quote when `escape_quote`), replacing
// invalid UTF-8 bytes with U+FFFD. The common case (plain ASCII, nothing to escape) is one append.
void AppendEscaped(std::string_view s, bool escape_quote, std::string& out) {
  size_t i = 0;
  for (; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80 || c == '\\' || c == '\n' || (escape_quote && c == '"')) break;
  }
  out.append(s.data(), i);
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '\\') {
        out.append("\\\\");
      } else if (c == '\n') {
        out.append("\\n");
      } else if (escape_quote && c == '"') {
        out.append("\\\"");
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    size_t len = ValidUtf8Length(s, i);
    if (len == 0) {
      out.append(kUtf8ReplacementChar);
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
}

bool IsValidUnit(std::string_view unit) {
  if (unit.empty()) return false;
  for (char c : unit) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// How one family is announced in a given format.
struct FamilyHeader {
  std::string_view family_name;  // name on the HELP/TYPE/UNIT lines
  std::string_view type;
};

FamilyHeader HeaderFor(const MetricFamily& family, ExpositionFormat format) {
  std::string_view name = family.name;
  if (format == ExpositionFormat::kText004) {
    switch (family.type) {
      case MetricType::kCounter:
        return {name, "counter"};
      case MetricType::kGauge:
        return {name, "gauge"};
      case MetricType::kInfo:
        return {name, "gauge"};  // text 0.0.4 has no info type
      case MetricType::kUnknown:
        return {name, "untyped"};
      case MetricType::kHistogram:
        return {name, "histogram"};
    }
    return {name, "untyped"};
  }
  switch (family.type) {
    case MetricType::kCounter:
      // OpenMetrics counters are families "foo" with samples "foo_total". A counter whose name does not
      // end in _total (dcgm-exporter's own names such as DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) would
      // have to be renamed to become an OpenMetrics counter, and Prometheus would then store a
      // different series name depending on the negotiated format. As a drop-in replacement we keep the
      // name and announce the family as `unknown` instead.
      if (name.size() > 6 && name.ends_with("_total")) return {name.substr(0, name.size() - 6), "counter"};
      return {name, "unknown"};
    case MetricType::kInfo:
      // Same reasoning: an info family "foo" has samples "foo_info"; without the suffix keep a gauge.
      if (name.size() > 5 && name.ends_with("_info")) return {name.substr(0, name.size() - 5), "info"};
      return {name, "gauge"};
    case MetricType::kGauge:
      return {name, "gauge"};
    case MetricType::kUnknown:
      return {name, "unknown"};
    case MetricType::kHistogram:
      return {name, "histogram"};
  }
  return {name, "unknown"};
}

bool SampleLabelsValid(const Labels& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    if (!IsValidLabelName(labels[i].first)) return false;
    for (size_t j = 0; j < i; ++j) {
      if (labels[j].first == labels[i].first) return false;
    }
  }
  return true;
}

// Appends `{name="value"` (the first pair) or `,name="value"`.
inline void AppendLabel(std::string_view name, std::string_view value, bool first, std::string& out) {
  out.push_back(first ? '{' : ',');
  out.append(name);
  out.append("=\"");
  AppendEscaped(value, /*escape_quote=*/true, out);
  out.push_back('"');
}

// Appends `name{labels}` with `le="..."` last when `le` is set. A label with an empty value is the same
// as no label to Prometheus, so it is not written: a family keeps one label set in the model (e.g.
// hpc_job, GPU_I_ID) while the text stays as dcgm-exporter's where the value is absent.
inline void AppendSeries(std::string_view name, std::string_view suffix, const Labels& labels,
                         std::string_view le, std::string& out) {
  out.append(name);
  if (!suffix.empty()) out.append(suffix);
  bool first = true;
  for (const auto& [label, value] : labels) {
    if (value.empty()) continue;
    AppendLabel(label, value, first, out);
    first = false;
  }
  if (!le.empty()) {
    AppendLabel("le", le, first, out);
    first = false;
  }
  if (!first) out.push_back('}');
  out.push_back(' ');
}

// OpenMetrics limits an exemplar's label names and values to 128 characters together.
bool ExemplarRenderable(const Exemplar& exemplar) {
  if (exemplar.labels.empty() || !SampleLabelsValid(exemplar.labels)) return false;
  size_t characters = 0;
  for (const auto& [name, value] : exemplar.labels) {
    characters += name.size();
    for (char c : value) characters += (static_cast<unsigned char>(c) & 0xc0) != 0x80;  // UTF-8 leads
  }
  return characters <= 128;
}

// ` # {trace_id="..."} value timestamp`: an exemplar after a bucket's value (OpenMetrics only).
void AppendExemplar(const Exemplar& exemplar, std::string& out) {
  out.append(" # ");
  bool first = true;
  for (const auto& [name, value] : exemplar.labels) {
    AppendLabel(name, value, first, out);
    first = false;
  }
  out.append("} ");
  AppendSampleValue(exemplar.value, out);
  if (exemplar.timestamp_ns > 0) {
    // Seconds with the milliseconds: what Prometheus keeps of an exemplar's time.
    const int64_t ms = exemplar.timestamp_ns / 1'000'000;
    char text[32];
    std::snprintf(text, sizeof(text), " %lld.%03d", static_cast<long long>(ms / 1000),
                  static_cast<int>(ms % 1000));
    out.append(text);
  }
}

// The lines of one histogram sample: its cumulative buckets (+Inf last), then _count and _sum.
void AppendHistogram(const HistogramValue& histogram, std::string_view family_name, const Labels& labels,
                     bool om, std::string& out) {
  const HistogramBuckets& buckets = *histogram.buckets;
  const bool exemplars = om && histogram.exemplars.size() == histogram.counts.size();
  for (size_t i = 0; i < histogram.counts.size(); ++i) {
    AppendSeries(family_name, "_bucket", labels, buckets.le(i), out);
    AppendSampleValue(static_cast<double>(histogram.counts[i]), out);
    if (exemplars && ExemplarRenderable(histogram.exemplars[i])) AppendExemplar(histogram.exemplars[i], out);
    out.push_back('\n');
  }
  AppendSeries(family_name, "_count", labels, {}, out);
  AppendSampleValue(static_cast<double>(histogram.count()), out);
  out.push_back('\n');
  AppendSeries(family_name, "_sum", labels, {}, out);
  AppendSampleValue(histogram.sum, out);
  out.push_back('\n');
}

bool HistogramWellFormed(const Sample& sample) {
  const HistogramValue* histogram = sample.histogram.get();
  if (histogram == nullptr || histogram->buckets == nullptr ||
      histogram->counts.size() != histogram->buckets->size())
    return false;
  // `le` is the renderer's to add.
  return std::none_of(sample.labels.begin(), sample.labels.end(),
                      [](const Labels::Pair& pair) { return pair.first == "le"; });
}

// Appends the sample lines of a family called `family_name`.
void AppendSamples(const MetricFamily& family, std::string_view family_name, bool om, std::string& out,
                   RenderStats* stats) {
  const bool histogram = family.type == MetricType::kHistogram;
  for (const Sample& sample : family.samples) {
    if (!SampleLabelsValid(sample.labels) || (histogram && !HistogramWellFormed(sample))) {
      if (stats) ++stats->skipped_samples;
      continue;
    }
    if (histogram) {
      AppendHistogram(*sample.histogram, family_name, sample.labels, om, out);
      continue;
    }
    AppendSeries(family_name, {}, sample.labels, {}, out);
    AppendSampleValue(sample.value, out);
    out.push_back('\n');
  }
}

// Appends one family made of `parts`: families of the same name (one per source that has it), announced
// with the first one's HELP/TYPE/UNIT and rendered with the samples of all, as if merged.
void AppendFamily(std::span<const MetricFamily* const> parts, ExpositionFormat format, std::string& out,
                  RenderStats* stats) {
  const MetricFamily& family = *parts.front();
  bool any_samples = false;
  for (const MetricFamily* part : parts) any_samples = any_samples || !part->samples.empty();
  if (!any_samples) return;
  if (!IsValidMetricName(family.name)) {
    if (stats) ++stats->skipped_families;
    return;
  }
  const bool om = format == ExpositionFormat::kOpenMetrics100;
  FamilyHeader header = HeaderFor(family, format);
  if (!family.help.empty()) {
    out.append("# HELP ");
    out.append(header.family_name);
    out.push_back(' ');
    AppendEscaped(family.help, /*escape_quote=*/om, out);
    out.push_back('\n');
  }
  out.append("# TYPE ");
  out.append(header.family_name);
  out.push_back(' ');
  out.append(header.type);
  out.push_back('\n');
  // OpenMetrics requires the family name to end with the unit; otherwise the unit is left out.
  if (om && IsValidUnit(family.unit) && header.family_name.size() > family.unit.size() + 1 &&
      header.family_name.ends_with(family.unit) &&
      header.family_name[header.family_name.size() - family.unit.size() - 1] == '_') {
    out.append("# UNIT ");
    out.append(header.family_name);
    out.push_back(' ');
    out.append(family.unit);
    out.push_back('\n');
  }
  // A part of another type than the first (a histogram among gauges of one name) would not parse.
  for (const MetricFamily* part : parts) {
    if ((part->type == MetricType::kHistogram) != (family.type == MetricType::kHistogram)) {
      if (stats) stats->skipped_samples += part->samples.size();
      continue;
    }
    AppendSamples(*part, family.name, om, out, stats);
  }
}

// A rough per-sample size, so that one reserve() usually suffices.
size_t EstimateSize(const MetricFamily& family) {
  size_t total = 2 * family.name.size() + family.help.size() + 32;
  size_t per_sample = family.name.size() + 24;
  if (!family.samples.empty()) {
    for (const auto& [name, value] : family.samples.front().labels)
      per_sample += name.size() + value.size() + 4;
  }
  size_t lines = family.samples.size();
  if (family.type == MetricType::kHistogram && !family.samples.empty() && family.samples.front().histogram)
    lines *= family.samples.front().histogram->counts.size() + 2;
  return total + per_sample * lines;
}

}  // namespace

std::string_view ExpositionContentType(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics100
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

void AppendSampleValue(double value, std::string& out) {
  if (std::isnan(value)) {
    out.append("NaN");
    return;
  }
  if (std::isinf(value)) {
    out.append(value > 0 ? "+Inf" : "-Inf");
    return;
  }
  char buf[32];
  std::to_chars_result result;
  if (std::fabs(value) < 9007199254740992.0 && value == std::trunc(value)) {
    result = std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(value));
  } else {
    result = std::to_chars(buf, buf + sizeof(buf), value);
  }
  out.append(buf, result.ptr);
}

void AppendFamilies(std::span<const MetricFamily> families, ExpositionFormat format, std::string& out,
                    RenderStats* stats) {
  size_t size = 0;
  for (const MetricFamily& family : families) size += EstimateSize(family);
  out.reserve(out.size() + size);
  for (const MetricFamily& family : families) {
    const MetricFamily* part = &family;
    AppendFamily({&part, 1}, format, out, stats);
  }
}

void FinishExposition(ExpositionFormat format, std::string& out) {
  if (format == ExpositionFormat::kOpenMetrics100) out.append("# EOF\n");
}

std::string RenderSnapshot(const Snapshot& snapshot, ExpositionFormat format, RenderStats* stats) {
  std::span<const MetricFamily* const> families = snapshot.families();
  size_t size = 0;
  for (const MetricFamily* family : families) size += EstimateSize(*family);
  std::string out;
  out.reserve(size);
  // Families of one name are adjacent: each run renders as one family.
  for (size_t begin = 0, end = 0; begin < families.size(); begin = end) {
    for (end = begin + 1; end < families.size() && families[end]->name == families[begin]->name;) ++end;
    AppendFamily(families.subspan(begin, end - begin), format, out, stats);
  }
  FinishExposition(format, out);
  return out;
}

}  // namespace gpuscope
