#include "src/parsers/prom_text.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "src/core/utf8.h"

namespace gpuscope {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view SkipBlanks(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  return s;
}

bool IsNameChar(char c, bool first) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  return letter || (!first && c >= '0' && c <= '9');
}

// The leading [a-zA-Z_:][a-zA-Z0-9_:]* of `s` (possibly empty); removes it from `s`.
std::string_view TakeName(std::string_view* s) {
  size_t n = 0;
  while (n < s->size() && IsNameChar((*s)[n], n == 0)) ++n;
  std::string_view name = s->substr(0, n);
  s->remove_prefix(n);
  return name;
}

// A sample value: a float as Go's strconv.ParseFloat writes them for exposition, NaN, +Inf, -Inf.
std::optional<double> ParseValue(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf" || s == "Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  std::string_view digits = s;
  if (!digits.empty() && digits.front() == '+') {
    digits.remove_prefix(1);
    if (!digits.empty() && digits.front() == '-') return std::nullopt;  // "+-1"
  }
  if (digits.empty()) return std::nullopt;
  // from_chars also reads "inf" and "nan" spelled otherwise; the format has only the three words above.
  for (char c : digits) {
    const bool ok = (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+';
    if (!ok) return std::nullopt;
  }
  double value = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

struct FamilyState {
  size_t index = 0;  // into the result's families
  bool has_help = false;
  bool has_type = false;
  bool has_samples = false;
  std::vector<std::string> label_names;  // of the first sample
  std::set<std::vector<std::pair<std::string, std::string>>> series;
};

class Parser {
 public:
  explicit Parser(const PromTextOptions& options) : options_(options) {}

  PromTextParse Run(std::string_view text) {
    PromTextParse result;
    if (!IsValidUtf8(text)) {
      size_t i = 0;
      size_t line = 1;
      while (i < text.size()) {
        const size_t n = ValidUtf8Length(text, i);
        if (n == 0) break;
        if (text[i] == '\n') ++line;
        i += n;
      }
      result.error = "line " + std::to_string(line) + ": invalid UTF-8";
      return result;
    }
    size_t line_number = 0;
    while (!text.empty()) {
      ++line_number;
      const size_t newline = text.find('\n');
      std::string_view line = text.substr(0, newline);
      text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
      std::string error = ParseLine(line);
      if (!error.empty()) {
        result.error = "line " + std::to_string(line_number) + ": " + error;
        return result;
      }
    }
    for (auto& family : families_) {
      if (states_[family.name].has_samples) result.families.push_back(std::move(family));
    }
    return result;
  }

 private:
  FamilyState& Family(std::string_view name) {
    auto [it, inserted] = states_.try_emplace(std::string(name));
    if (inserted) {
      it->second.index = families_.size();
      MetricFamily family;
      family.name = std::string(name);
      family.type = MetricType::kUnknown;
      families_.push_back(std::move(family));
    }
    return it->second;
  }

  std::string ParseLine(std::string_view line) {
    line = SkipBlanks(line);
    while (!line.empty() && IsBlank(line.back())) line.remove_suffix(1);
    if (line.empty()) return "";
    if (line.front() == '#') return ParseComment(line.substr(1));
    return ParseSample(line);
  }

  std::string ParseComment(std::string_view rest) {
    rest = SkipBlanks(rest);
    std::string_view keyword = rest.substr(0, rest.find_first_of(" \t"));
    if (keyword != "HELP" && keyword != "TYPE") return "";  // an ordinary comment
    rest = SkipBlanks(rest.substr(keyword.size()));
    std::string_view name = TakeName(&rest);
    if (name.empty() || (!rest.empty() && !IsBlank(rest.front()))) {
      return "# " + std::string(keyword) + " needs a valid metric name";
    }
    rest = SkipBlanks(rest);
    FamilyState& state = Family(name);
    MetricFamily& family = families_[state.index];
    if (state.has_samples) {
      return "# " + std::string(keyword) + " for " + family.name + " after its first sample";
    }
    if (keyword == "HELP") {
      if (state.has_help) return "second # HELP for " + family.name;
      state.has_help = true;
      for (size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size() && (rest[i + 1] == '\\' || rest[i + 1] == 'n')) {
          family.help.push_back(rest[i + 1] == 'n' ? '\n' : '\\');
          ++i;
        } else {
          family.help.push_back(rest[i]);
        }
      }
      return "";
    }
    if (state.has_type) return "second # TYPE for " + family.name;
    state.has_type = true;
    if (rest == "counter") {
      family.type = MetricType::kCounter;
    } else if (rest == "gauge") {
      family.type = MetricType::kGauge;
    } else if (rest == "untyped") {
      family.type = MetricType::kUnknown;
    } else if ((rest == "histogram" || rest == "summary") && options_.histograms_as_untyped) {
      family.type = MetricType::kUnknown;
    } else if (rest == "histogram" || rest == "summary") {
      return "type " + std::string(rest) + " of " + family.name +
             " is not supported (counter, gauge and untyped are)";
    } else {
      return "unknown type '" + std::string(rest) + "' for " + family.name;
    }
    return "";
  }

  std::string ParseSample(std::string_view line) {
    std::string_view name = TakeName(&line);
    if (name.empty()) return "expected a metric name";
    if (!IsValidMetricName(name)) return "invalid metric name " + std::string(name);
    std::vector<std::pair<std::string, std::string>> labels;
    if (!line.empty() && line.front() == '{') {
      line.remove_prefix(1);
      std::string error = ParseLabels(&line, &labels);
      if (!error.empty()) return std::string(name) + ": " + error;
    }
    if (line.empty() || !IsBlank(line.front())) return std::string(name) + ": expected a blank and a value";
    line = SkipBlanks(line);
    std::string_view value_text = line.substr(0, line.find_first_of(" \t"));
    line = SkipBlanks(line.substr(value_text.size()));
    if (!line.empty()) {
      return std::string(name) +
             ": explicit timestamps are not allowed (the agent stamps samples with its own clock)";
    }
    std::optional<double> value = ParseValue(value_text);
    if (!value) return std::string(name) + ": invalid value '" + std::string(value_text) + "'";

    FamilyState& state = Family(name);
    MetricFamily& family = families_[state.index];
    std::vector<std::string> label_names;
    label_names.reserve(labels.size());
    for (const auto& [label, unused] : labels) label_names.push_back(label);
    if (!state.has_samples) {
      state.has_samples = true;
      state.label_names = label_names;
    } else if (!options_.mixed_label_names) {  // (mixed: each sample keeps its own labels)
      // Same names in another order are the same set: put them in the family's order.
      std::vector<std::pair<std::string, std::string>> ordered;
      for (const std::string& wanted : state.label_names) {
        for (const auto& pair : labels) {
          if (pair.first == wanted) ordered.push_back(pair);
        }
      }
      if (ordered.size() != labels.size() || labels.size() != state.label_names.size()) {
        return family.name + ": samples with different label names (one label set per family)";
      }
      labels = std::move(ordered);
    }
    std::vector<std::pair<std::string, std::string>> key = labels;
    if (options_.mixed_label_names) std::sort(key.begin(), key.end());
    if (!state.series.insert(std::move(key)).second) return family.name + ": the same series twice";
    family.samples.emplace_back(Labels(std::move(labels)), *value);
    return "";
  }

  // After '{': name="value" pairs up to '}', which is consumed.
  static std::string ParseLabels(std::string_view* line,
                                 std::vector<std::pair<std::string, std::string>>* out) {
    std::string_view& s = *line;
    while (true) {
      s = SkipBlanks(s);
      if (!s.empty() && s.front() == '}') {
        s.remove_prefix(1);
        return "";
      }
      std::string_view label = TakeName(&s);
      if (label.empty() || !IsValidLabelName(label)) {
        return label.empty() ? "expected a label name" : "invalid label name " + std::string(label);
      }
      for (const auto& pair : *out) {
        if (pair.first == label) return "label " + std::string(label) + " given twice";
      }
      s = SkipBlanks(s);
      if (s.empty() || s.front() != '=') return "expected = after label " + std::string(label);
      s = SkipBlanks(s.substr(1));
      if (s.empty() || s.front() != '"') return "expected a quoted value for label " + std::string(label);
      s.remove_prefix(1);
      std::string value;
      bool closed = false;
      while (!s.empty()) {
        const char c = s.front();
        s.remove_prefix(1);
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          value.push_back(c);
          continue;
        }
        if (s.empty()) break;
        const char escaped = s.front();
        s.remove_prefix(1);
        if (escaped == '\\' || escaped == '"') {
          value.push_back(escaped);
        } else if (escaped == 'n') {
          value.push_back('\n');
        } else {
          return "invalid escape \\" + std::string(1, escaped) + " in label " + std::string(label);
        }
      }
      if (!closed) return "unterminated value of label " + std::string(label);
      out->emplace_back(std::string(label), std::move(value));
      s = SkipBlanks(s);
      if (!s.empty() && s.front() == ',') {
        s.remove_prefix(1);
        continue;
      }
      if (!s.empty() && s.front() == '}') continue;
      return "expected , or } after label " + std::string(label);
    }
  }

  const PromTextOptions options_;
  std::vector<MetricFamily> families_;
  std::unordered_map<std::string, FamilyState> states_;
};

}  // namespace

PromTextParse ParsePromText(std::string_view text, const PromTextOptions& options) {
  return Parser(options).Run(text);
}

}  // namespace gpuscope
