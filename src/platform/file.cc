#include "src/platform/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gpuscope {

Status WriteFileAtomically(const std::string& path, std::string_view contents, AtomicWriteOptions options) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, options.mode);
  if (fd < 0) return Status::Unavailable("open " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string message = "write " + tmp + ": ";
      message += std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::Unavailable(message);
    }
    done += static_cast<size_t>(n);
  }
  bool synced = !options.sync || ::fsync(fd) == 0;
  if (::close(fd) != 0 || !synced) {
    ::unlink(tmp.c_str());
    return Status::Unavailable("fsync/close " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status::Unavailable("rename " + tmp + ": " + err);
  }
  if (options.sync_directory) {
    size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
    }
  }
  return Status::Ok();
}

int ReadDescriptorInto(int fd, std::string* out, size_t max_bytes) {
  out->clear();
  char buf[8192];
  while (out->size() < max_bytes) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof(buf), max_bytes - out->size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      out->clear();
      return error;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  return 0;
}

int ReadFileInto(const std::string& path, std::string* out, size_t max_bytes) {
  out->clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int error = ReadDescriptorInto(fd, out, max_bytes);
  ::close(fd);
  return error;
}

std::optional<std::string> ReadWholeFile(const std::string& path, size_t max_bytes) {
  std::string out;
  if (ReadFileInto(path, &out, max_bytes) != 0) return std::nullopt;
  return out;
}

}  // namespace gpuscope
