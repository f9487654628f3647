#include "src/parsers/mapping_files.h"

#include <algorithm>

#include "src/core/utf8.h"
#include "src/parsers/text.h"

namespace gpuscope {
namespace {

bool IsDigits(std::string_view s, size_t min_len, size_t max_len) {
  if (s.size() < min_len || s.size() > max_len) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Splits into lines (without '\n'); the last piece is included only when non-empty.
std::vector<std::string_view> Lines(std::string_view content) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    lines.push_back(content.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

bool Terminated(std::string_view content) { return content.empty() || content.back() == '\n'; }

std::vector<std::string_view> SplitComma(std::string_view s) {
  std::vector<std::string_view> parts;
  if (s.empty()) return parts;
  size_t start = 0;
  while (true) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) {
      parts.push_back(s.substr(start));
      break;
    }
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// A tiny reader for one flat JSON object (RFC 8259 subset: nested values are skipped, not kept).
class FlatJsonReader {
 public:
  explicit FlatJsonReader(std::string_view text) : s_(text) {}

  // Calls on_pair(key, value) for every string or number member of the top-level object.
  template <typename F>
  bool Read(F&& on_pair) {
    SkipSpace();
    if (!Eat('{')) return false;
    SkipSpace();
    if (Eat('}')) return AtEnd();
    while (true) {
      SkipSpace();
      std::string key;
      if (!String(&key)) return false;
      SkipSpace();
      if (!Eat(':')) return false;
      SkipSpace();
      if (Peek() == '"') {
        std::string value;
        if (!String(&value)) return false;
        on_pair(key, value);
      } else if (Peek() == '-' || (Peek() >= '0' && Peek() <= '9')) {
        size_t start = pos_;
        while (pos_ < s_.size() &&
               std::string_view("+-.eE0123456789").find(s_[pos_]) != std::string_view::npos)
          ++pos_;
        on_pair(key, std::string(s_.substr(start, pos_ - start)));
      } else if (!SkipValue(0)) {
        return false;
      }
      SkipSpace();
      if (Eat(',')) continue;
      if (Eat('}')) return AtEnd();
      return false;
    }
  }

 private:
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c || pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == s_.size();
  }
  static void AppendUtf8(std::string* out, unsigned cp) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return false;
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          out->push_back(' ');
          break;  // control characters never reach a label
        case 'u': {
          if (pos_ + 4 > s_.size()) return false;
          unsigned cp = 0;
          for (int i = 0; i < 4; ++i) {
            char h = s_[pos_++];
            cp <<= 4;
            if (h >= '0' && h <= '9')
              cp |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
              cp |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
              cp |= static_cast<unsigned>(h - 'A' + 10);
            else
              return false;
          }
          if (cp >= 0xD800 && cp <= 0xDFFF) return false;  // surrogates: not in Slurm's environment
          if (cp < 0x20 || cp == 0x7F) cp = ' ';
          AppendUtf8(out, cp);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool SkipValue(int depth) {
    if (depth > 8) return false;
    SkipSpace();
    char c = Peek();
    if (c == '"') {
      std::string ignored;
      return String(&ignored);
    }
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++pos_;
      SkipSpace();
      if (Eat(close)) return true;
      while (true) {
        SkipSpace();
        if (c == '{') {
          std::string ignored;
          if (!String(&ignored)) return false;
          SkipSpace();
          if (!Eat(':')) return false;
        }
        if (!SkipValue(depth + 1)) return false;
        SkipSpace();
        if (Eat(',')) continue;
        return Eat(close);
      }
    }
    for (std::string_view literal : {"true", "false", "null"}) {
      if (s_.substr(pos_, literal.size()) == literal) {
        pos_ += literal.size();
        return true;
      }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      while (pos_ < s_.size() && std::string_view("+-.eE0123456789").find(s_[pos_]) != std::string_view::npos)
        ++pos_;
      return true;
    }
    return false;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::string_view MappingFormatName(MappingFormat format) {
  switch (format) {
    case MappingFormat::kDcgm:
      return "dcgm";
    case MappingFormat::kJobstats:
      return "jobstats";
    case MappingFormat::kAmd:
      return "amd";
    case MappingFormat::kGpuscope:
      return "gpuscope";
  }
  return "unknown";
}

std::string_view MappingErrorReason(MappingError error) {
  switch (error) {
    case MappingError::kNone:
      return "none";
    case MappingError::kTooLarge:
      return "too_large";
    case MappingError::kBinary:
      return "binary";
    case MappingError::kLineTooLong:
      return "line_too_long";
    case MappingError::kInvalidJobId:
      return "invalid_job_id";
    case MappingError::kInvalidUid:
      return "invalid_uid";
    case MappingError::kInvalidGpu:
      return "invalid_gpu";
    case MappingError::kMalformed:
      return "malformed";
  }
  return "unknown";
}

bool IsValidGpuKey(std::string_view key) {
  size_t dot = key.find('.');
  if (dot == std::string_view::npos) return IsDigits(key, 1, 4);
  return IsDigits(key.substr(0, dot), 1, 4) && IsDigits(key.substr(dot + 1), 1, 4);
}

GpuUuidName ParseGpuUuidName(std::string_view name) {
  // NVML's UUID strings: a "GPU-" or "MIG-" prefix, then a UUID in its canonical 36-character form
  // (nvmlDeviceGetUUID; nvidia-smi -L and CUDA_VISIBLE_DEVICES show the same). The legacy MIG form
  // "MIG-GPU-<uuid>/<gi>/<ci>" of drivers before R470 cannot be a file name (it has slashes).
  constexpr size_t kPrefix = 4;
  constexpr size_t kUuid = 36;
  GpuUuidName out;
  if (name.size() != kPrefix + kUuid) return out;
  GpuUuidName::Kind kind = GpuUuidName::Kind::kNone;
  if (name.starts_with("GPU-"))
    kind = GpuUuidName::Kind::kGpu;
  else if (name.starts_with("MIG-"))
    kind = GpuUuidName::Kind::kMig;
  else
    return out;
  for (size_t i = 0; i < kUuid; ++i) {
    char c = name[kPrefix + i];
    bool dash_position = i == 8 || i == 13 || i == 18 || i == 23;
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (dash_position ? c != '-' : !hex) return out;
  }
  out.kind = kind;
  out.uuid = name;
  return out;
}

bool IsValidJobId(std::string_view job_id) {
  size_t underscore = job_id.find('_');
  if (underscore == std::string_view::npos) return IsDigits(job_id, 1, 20);
  return IsDigits(job_id.substr(0, underscore), 1, 20) && IsDigits(job_id.substr(underscore + 1), 1, 10);
}

std::string_view GpuscopeRecordJobId(std::string_view name) {
  if (name.substr(0, kGpuscopeRecordPrefix.size()) != kGpuscopeRecordPrefix) return {};
  std::string_view id = name.substr(kGpuscopeRecordPrefix.size());
  return IsValidJobId(id) ? id : std::string_view{};
}

MappingError CheckMappingText(std::string_view content) {
  if (content.size() > kMaxMappingFileBytes) return MappingError::kTooLarge;
  size_t line_start = 0;
  for (size_t i = 0; i < content.size();) {
    unsigned char c = static_cast<unsigned char>(content[i]);
    if (c == '\n') {
      if (i - line_start > kMaxMappingLineBytes) return MappingError::kLineTooLong;
      line_start = i + 1;
      ++i;
      continue;
    }
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7F) return MappingError::kBinary;
    size_t len = ValidUtf8Length(content, i);
    if (len == 0) return MappingError::kBinary;
    i += len;
  }
  if (content.size() - line_start > kMaxMappingLineBytes) return MappingError::kLineTooLong;
  return MappingError::kNone;
}

DcgmMappingFile ParseDcgmMapping(std::string_view content) {
  DcgmMappingFile out;
  out.error = CheckMappingText(content);
  if (out.error != MappingError::kNone) return out;
  out.terminated = Terminated(content);
  for (std::string_view line : Lines(content)) {
    line = text::Trim(line);
    if (line.empty()) continue;
    if (!IsValidJobId(line)) {
      out.error = MappingError::kInvalidJobId;
      out.job_ids.clear();
      return out;
    }
    if (std::find(out.job_ids.begin(), out.job_ids.end(), line) == out.job_ids.end())
      out.job_ids.emplace_back(line);
  }
  return out;
}

JobstatsMappingFile ParseJobstatsMapping(std::string_view content) {
  JobstatsMappingFile out;
  out.error = CheckMappingText(content);
  if (out.error != MappingError::kNone) return out;
  out.terminated = Terminated(content);
  bool seen = false;
  for (std::string_view line : Lines(content)) {
    line = text::Trim(line);
    if (line.empty()) continue;
    if (seen) {
      out = {};
      out.error = MappingError::kMalformed;  // jobstats writes exactly one "jobid uid" line
      return out;
    }
    seen = true;
    size_t sep = line.find_first_of(" \t");
    if (sep == std::string_view::npos) {
      out.error = MappingError::kMalformed;
      return out;
    }
    std::string_view job_id = line.substr(0, sep);
    std::string_view uid = text::Trim(line.substr(sep + 1));
    if (!IsValidJobId(job_id)) {
      out.error = MappingError::kInvalidJobId;
      return out;
    }
    if (!IsDigits(uid, 1, 10)) {
      out.error = MappingError::kInvalidUid;
      return out;
    }
    out.job_id = job_id;
    out.uid = uid;
  }
  if (!seen) out.error = MappingError::kMalformed;
  return out;
}

AmdMappingFile ParseAmdMapping(std::string_view content) {
  AmdMappingFile out;
  out.error = CheckMappingText(content);
  if (out.error != MappingError::kNone) return out;
  MappingJob job;
  bool duplicate = false;
  auto set = [&duplicate](std::string* field, const std::string& value) {
    if (!field->empty()) duplicate = true;
    *field = value;
  };
  FlatJsonReader reader(content);
  bool ok = reader.Read([&](const std::string& key, const std::string& value) {
    if (key == "SLURM_JOB_ID")
      set(&job.job_id, value);
    else if (key == "SLURM_JOB_USER")
      set(&job.user, value);
    else if (key == "SLURM_JOB_UID")
      set(&job.uid, value);
    else if (key == "SLURM_JOB_ACCOUNT")
      set(&job.account, value);
    else if (key == "SLURM_JOB_PARTITION")
      set(&job.partition, value);
    else if (key == "SLURM_JOB_NAME")
      set(&job.job_name, value);
    else if (key == "SLURM_ARRAY_JOB_ID")
      set(&job.array_job_id, value);
    else if (key == "SLURM_ARRAY_TASK_ID")
      set(&job.array_task_id, value);
  });
  if (!ok || duplicate) {
    out.error = MappingError::kMalformed;
    return out;
  }
  if (!IsValidJobId(job.job_id)) {
    out.error = MappingError::kInvalidJobId;
    return out;
  }
  if (!job.uid.empty() && !IsDigits(job.uid, 1, 10)) {
    out.error = MappingError::kInvalidUid;
    return out;
  }
  out.job = std::move(job);
  return out;
}

GpuscopeRecord ParseGpuscopeRecord(std::string_view content, std::string_view name_job_id) {
  GpuscopeRecord out;
  out.error = CheckMappingText(content);
  if (out.error != MappingError::kNone) return out;
  out.terminated = Terminated(content);
  MappingJob job;
  std::vector<std::string_view> seen_keys;
  auto fail = [&out](MappingError error) {
    out = {};
    out.error = error;
    return out;
  };
  for (std::string_view line : Lines(content)) {
    line = text::Trim(line);
    if (line.empty() || line.front() == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return fail(MappingError::kMalformed);
    std::string_view key = text::Trim(line.substr(0, eq));
    std::string_view value = text::Trim(line.substr(eq + 1));
    if (std::find(seen_keys.begin(), seen_keys.end(), key) != seen_keys.end())
      return fail(MappingError::kMalformed);
    seen_keys.push_back(key);
    if (key == "version") {
      if (value != "1") return fail(MappingError::kMalformed);
    } else if (key == "job_id") {
      job.job_id = value;
    } else if (key == "user") {
      job.user = value;
    } else if (key == "uid") {
      if (!value.empty() && !IsDigits(value, 1, 10)) return fail(MappingError::kInvalidUid);
      job.uid = value;
    } else if (key == "account") {
      job.account = value;
    } else if (key == "partition") {
      job.partition = value;
    } else if (key == "job_name") {
      job.job_name = value;
    } else if (key == "array_job_id") {
      if (!value.empty() && !IsDigits(value, 1, 20)) return fail(MappingError::kInvalidJobId);
      job.array_job_id = value;
    } else if (key == "array_task_id") {
      if (!value.empty() && !IsDigits(value, 1, 10)) return fail(MappingError::kMalformed);
      job.array_task_id = value;
    } else if (key == "step_id") {
      job.step_id = value;
    } else if (key == "gpus") {
      for (std::string_view gpu : SplitComma(value)) {
        gpu = text::Trim(gpu);
        if (!IsValidGpuKey(gpu)) return fail(MappingError::kInvalidGpu);
        if (std::find(job.gpus.begin(), job.gpus.end(), gpu) == job.gpus.end()) job.gpus.emplace_back(gpu);
      }
    } else if (key == "minors") {
      for (std::string_view minor : SplitComma(value)) {
        minor = text::Trim(minor);
        if (!IsDigits(minor, 1, 6)) return fail(MappingError::kMalformed);
        job.minors.emplace_back(minor);
      }
    }
    // Unknown keys: ignored, so newer prologs work with older agents.
  }
  if (job.job_id.empty()) return fail(MappingError::kMalformed);
  if (!IsValidJobId(job.job_id)) return fail(MappingError::kInvalidJobId);
  if (!name_job_id.empty() && name_job_id != job.job_id) return fail(MappingError::kMalformed);
  out.job = std::move(job);
  return out;
}

MappingFormat DetectGpuKeyFileFormat(std::string_view content) {
  if (text::Trim(content).starts_with('{')) return MappingFormat::kAmd;
  int non_blank = 0;
  bool two_fields = false;
  for (std::string_view line : Lines(content)) {
    line = text::Trim(line);
    if (line.empty()) continue;
    ++non_blank;
    two_fields = line.find_first_of(" \t") != std::string_view::npos;
  }
  if (non_blank == 1 && two_fields) return MappingFormat::kJobstats;
  return MappingFormat::kDcgm;
}

}  // namespace gpuscope
