#include "src/sinks/prometheus/exposition.h"

#include <charconv>
#include <cmath>
#include <cstdint>

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

// Appends the sample lines of a family called `family_name`.
void AppendSamples(const std::vector<Sample>& samples, std::string_view family_name, std::string& out,
                   RenderStats* stats) {
  for (const Sample& sample : samples) {
    if (!SampleLabelsValid(sample.labels)) {
      if (stats) ++stats->skipped_samples;
      continue;
    }
    out.append(family_name);
    // A label with an empty value is the same as no label to Prometheus, so it is not written: a family
    // keeps one label set in the model (e.g. hpc_job, GPU_I_ID) while the text stays as dcgm-exporter's
    // where the value is absent.
    bool first = true;
    for (const auto& [name, value] : sample.labels) {
      if (value.empty()) continue;
      out.push_back(first ? '{' : ',');
      first = false;
      out.append(name);
      out.append("=\"");
      AppendEscaped(value, /*escape_quote=*/true, out);
      out.push_back('"');
    }
    if (!first) out.push_back('}');
    out.push_back(' ');
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
  for (const MetricFamily* part : parts) AppendSamples(part->samples, family.name, out, stats);
}

// A rough per-sample size, so that one reserve() usually suffices.
size_t EstimateSize(const MetricFamily& family) {
  size_t total = 2 * family.name.size() + family.help.size() + 32;
  size_t per_sample = family.name.size() + 24;
  if (!family.samples.empty()) {
    for (const auto& [name, value] : family.samples.front().labels)
      per_sample += name.size() + value.size() + 4;
  }
  return total + per_sample * family.samples.size();
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
