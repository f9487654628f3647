// The durable queue directory's file names and positional I/O; see queue_files.h.
#include "src/sinks/queue/queue_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gpuscope {
namespace {

constexpr std::string_view kSegmentPrefix = "segment-";
constexpr std::string_view kSegmentSuffix = ".log";
constexpr std::string_view kCheckpointPrefix = "checkpoint";  // checkpoint-<consumer>; bare: old format

}  // namespace

std::string QueueSegmentFileName(uint64_t seq) {
  char name[64];
  std::snprintf(name, sizeof(name), "segment-%020llu.log", static_cast<unsigned long long>(seq));
  return name;
}

bool ParseQueueSegmentFileName(const std::string& name, uint64_t* seq) {
  if (name.size() <= kSegmentPrefix.size() + kSegmentSuffix.size()) return false;
  if (name.compare(0, kSegmentPrefix.size(), kSegmentPrefix) != 0) return false;
  if (name.compare(name.size() - kSegmentSuffix.size(), kSegmentSuffix.size(), kSegmentSuffix) != 0) {
    return false;
  }
  std::string digits =
      name.substr(kSegmentPrefix.size(), name.size() - kSegmentPrefix.size() - kSegmentSuffix.size());
  if (digits.empty() || digits.size() > 20) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *seq = v;
  return true;
}

std::string QueueCheckpointFileName(std::string_view consumer) {
  return std::string(kCheckpointPrefix) + "-" + std::string(consumer);
}

bool IsQueueCheckpointFileName(std::string_view name) { return name.starts_with(kCheckpointPrefix); }

bool WriteAllAt(int fd, const char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

bool ReadAllAt(int fd, char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t n = ::pread(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

void SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string ErrnoText(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

}  // namespace gpuscope
