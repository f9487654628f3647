#include "src/events/event_record.h"

#include <array>
#include <cstring>

namespace gpuscope {
namespace {

constexpr std::string_view kMagic = "GSE1";
// Bounds on what a decoder accepts, far above anything the pipeline writes.
constexpr uint32_t kMaxFields = 256;

void PutU32(std::string& out, uint32_t v) {
  const char bytes[4] = {static_cast<char>(v & 0xff), static_cast<char>((v >> 8) & 0xff),
                         static_cast<char>((v >> 16) & 0xff), static_cast<char>((v >> 24) & 0xff)};
  out.append(bytes, 4);
}

void PutString(std::string& out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

struct Reader {
  std::string_view in;
  bool ok = true;

  std::optional<uint32_t> U32() {
    if (in.size() < 4) return std::nullopt;
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[static_cast<size_t>(i)]);
    in.remove_prefix(4);
    return v;
  }
  bool String(std::string* out) {
    auto len = U32();
    if (!len || *len > in.size()) return false;
    out->assign(in.substr(0, *len));
    in.remove_prefix(*len);
    return true;
  }
};

}  // namespace

std::string EncodeEventRecord(const EventRecord& r) {
  std::string out(kMagic);
  const uint64_t t = static_cast<uint64_t>(r.time_unix_ns);
  PutU32(out, static_cast<uint32_t>(t & 0xffffffffu));
  PutU32(out, static_cast<uint32_t>(t >> 32));
  for (const std::string* s : {&r.host, &r.source, &r.origin, &r.line, &r.event.event_class, &r.event.summary,
                               &r.job_id, &r.user, &r.account, &r.gpu, &r.uuid}) {
    PutString(out, *s);
  }
  PutU32(out, static_cast<uint32_t>(r.event.severity));
  PutU32(out, static_cast<uint32_t>(r.event.fields.size()));
  for (const auto& [key, value] : r.event.fields) {
    PutString(out, key);
    PutString(out, value);
  }
  return out;
}

std::optional<EventRecord> DecodeEventRecord(std::string_view bytes) {
  if (!bytes.starts_with(kMagic)) return std::nullopt;
  Reader reader{bytes.substr(kMagic.size())};
  EventRecord r;
  auto lo = reader.U32();
  auto hi = reader.U32();
  if (!lo || !hi) return std::nullopt;
  r.time_unix_ns = static_cast<int64_t>((static_cast<uint64_t>(*hi) << 32) | *lo);
  for (std::string* s : {&r.host, &r.source, &r.origin, &r.line, &r.event.event_class, &r.event.summary,
                         &r.job_id, &r.user, &r.account, &r.gpu, &r.uuid}) {
    if (!reader.String(s)) return std::nullopt;
  }
  auto severity = reader.U32();
  if (!severity || *severity > static_cast<uint32_t>(EventSeverity::kCritical)) return std::nullopt;
  r.event.severity = static_cast<EventSeverity>(*severity);
  auto count = reader.U32();
  if (!count || *count > kMaxFields) return std::nullopt;
  r.event.fields.reserve(*count);
  for (uint32_t i = 0; i < *count; ++i) {
    std::string key, value;
    if (!reader.String(&key) || !reader.String(&value)) return std::nullopt;
    r.event.fields.emplace_back(std::move(key), std::move(value));
  }
  if (!reader.in.empty()) return std::nullopt;
  return r;
}

std::vector<EventRecord> DecodeEventRecords(const std::vector<std::string>& payloads, size_t* undecodable) {
  std::vector<EventRecord> out;
  out.reserve(payloads.size());
  size_t bad = 0;
  for (const std::string& bytes : payloads) {
    if (std::optional<EventRecord> record = DecodeEventRecord(bytes)) {
      out.push_back(std::move(*record));
    } else {
      ++bad;
    }
  }
  if (undecodable != nullptr) *undecodable = bad;
  return out;
}

std::vector<std::pair<std::string, std::string>> EventRecordMetadata(const EventRecord& r) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::pair<std::string_view, const std::string*> attribution[] = {
      {"hpc_job", &r.job_id}, {"user", &r.user}, {"account", &r.account}, {"gpu", &r.gpu}, {"UUID", &r.uuid}};
  for (const auto& [key, value] : attribution) {
    if (!value->empty()) out.emplace_back(std::string(key), *value);
  }
  for (const auto& [key, value] : r.event.fields) {
    if (key == "message" || value.empty()) continue;
    if (key == "job_id" && !r.job_id.empty()) continue;  // already hpc_job
    if (key == "UUID" && !r.uuid.empty()) continue;      // already the attribution's
    out.emplace_back(key, value);
  }
  return out;
}

}  // namespace gpuscope
