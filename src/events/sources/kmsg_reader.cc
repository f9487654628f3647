#include "src/events/sources/kmsg_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "src/parsers/text.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr size_t kReadBufferBytes = 16 * 1024;  // larger than any kmsg record (kernel caps ~8 KiB)
constexpr size_t kMaxPendingBytes = 1024 * 1024;

}  // namespace

KmsgReader::KmsgReader(Options options) : options_(std::move(options)) {
  if (!options_.read_fn)
    options_.read_fn = [](int fd, void* buf, size_t len) { return ::read(fd, buf, len); };
  if (options_.boot_id.empty()) {
    options_.boot_id = text::Trim(ReadWholeFile("/proc/sys/kernel/random/boot_id").value_or(""));
  }
}

KmsgReader::~KmsgReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status KmsgReader::Open() {
  if (fd_ >= 0) return Status::Ok();
  fd_ = ::open(options_.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) return Status::Unavailable("open " + options_.path + ": " + std::strerror(errno));
  struct stat st {};
  is_char_device_ = options_.one_record_per_read || (::fstat(fd_, &st) == 0 && S_ISCHR(st.st_mode));
  if (!options_.checkpoint_path.empty()) {
    // Format: "<boot_id> <last_seq>\n".
    if (auto text = ReadWholeFile(options_.checkpoint_path)) {
      std::string_view view = *text;
      size_t space = view.find(' ');
      if (space != std::string_view::npos && view.substr(0, space) == options_.boot_id) {
        std::string_view num = view.substr(space + 1);
        num = text::Trim(num);
        uint64_t seq = 0;
        auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), seq);
        if (ec == std::errc() && ptr == num.data() + num.size() && !num.empty()) {
          last_seq_ = seq;
          saved_seq_ = seq;
        }
      }
    }
  }
  return Status::Ok();
}

void KmsgReader::Deliver(std::string_view bytes, const Callback& callback) {
  std::optional<KmsgRecord> record = ParseKmsgRecord(bytes);
  if (!record) {
    ++counters_.parse_errors;
    return;
  }
  if (last_seq_ && record->sequence <= *last_seq_) {
    ++counters_.skipped;
    return;
  }
  if (last_seq_ && record->sequence > *last_seq_ + 1) {
    ++counters_.gaps;
    counters_.missed += record->sequence - *last_seq_ - 1;
  }
  last_seq_ = record->sequence;
  ++counters_.records;
  callback(*record);
}

Status KmsgReader::PollOnce(const Callback& callback) {
  if (fd_ < 0) {
    Status s = Open();
    if (!s.ok()) return s;
  }
  std::string buf(kReadBufferBytes, '\0');
  Status result = Status::Ok();
  while (true) {
    ssize_t n = options_.read_fn(fd_, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) {  // ring buffer overran our position; the next read resumes
        ++counters_.overruns;
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      result = Status::Unavailable("read " + options_.path + ": " + std::strerror(errno));
      break;
    }
    if (n == 0) {  // end of a regular file or FIFO without writer: flush a complete tail
      if (size_t len = KmsgRecordLength(pending_, /*at_end=*/true)) {
        Deliver(std::string_view(pending_).substr(0, len), callback);
        pending_.erase(0, len);
      }
      break;
    }
    std::string_view chunk(buf.data(), static_cast<size_t>(n));
    if (is_char_device_) {  // the device hands out exactly one record per read()
      Deliver(chunk, callback);
      continue;
    }
    pending_.append(chunk);
    while (size_t len = KmsgRecordLength(pending_, /*at_end=*/false)) {
      Deliver(std::string_view(pending_).substr(0, len), callback);
      pending_.erase(0, len);
    }
    if (pending_.size() > kMaxPendingBytes) {  // garbage without record boundaries: drop it
      ++counters_.parse_errors;
      pending_.clear();
    }
  }
  Status saved = SaveCheckpoint();
  return result.ok() ? saved : result;
}

Status KmsgReader::SaveCheckpoint() {
  if (options_.checkpoint_path.empty() || !last_seq_ || last_seq_ == saved_seq_) return Status::Ok();
  Status s = WriteFileAtomically(options_.checkpoint_path,
                                 options_.boot_id + " " + std::to_string(*last_seq_) + "\n");
  if (s.ok()) saved_seq_ = last_seq_;
  return s;
}

}  // namespace gpuscope
