#include "src/events/sources/file_tailer.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <set>
#include <sstream>

#include "src/core/log.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;
constexpr std::string_view kTruncatedMarker = " [truncated]";

template <typename T>
bool ParseNum(std::string_view s, T* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::string_view FileTailer::SkipReasonName(SkipReason reason) {
  switch (reason) {
    case SkipReason::kFifo:
      return "fifo";
    case SkipReason::kDevice:
      return "device";
    case SkipReason::kSocket:
      return "socket";
    case SkipReason::kDirectory:
      return "directory";
    case SkipReason::kDanglingSymlink:
      return "dangling_symlink";
  }
  return "device";
}

bool FileTailer::Readable(const std::string& path, FileId* id, std::map<std::string, SkipReason>* skipped) {
  struct stat st {};
  SkipReason reason;
  std::string detail;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) {
      *id = FileId{st.st_dev, st.st_ino};
      return true;
    }
    if (S_ISFIFO(st.st_mode)) {
      reason = SkipReason::kFifo;
      detail = "a FIFO";
    } else if (S_ISDIR(st.st_mode)) {
      reason = SkipReason::kDirectory;
      detail = "a directory";
    } else if (S_ISSOCK(st.st_mode)) {
      reason = SkipReason::kSocket;
      detail = "a socket";
    } else {
      reason = SkipReason::kDevice;
      detail = S_ISBLK(st.st_mode) ? "a block device" : "a character device";
    }
  } else {
    struct stat link {};
    // Deleted between the glob and here: nothing to say. A symlink whose target is missing: skipped.
    if (errno != ENOENT || ::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return false;
    reason = SkipReason::kDanglingSymlink;
    detail = "a symlink to nothing";
  }
  (*skipped)[path] = reason;
  auto previous = skipped_.find(path);
  if (previous != skipped_.end() && previous->second == reason) return false;  // logged and counted
  struct stat link {};
  if (reason != SkipReason::kDanglingSymlink && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    detail += " (through a symlink)";
  }
  Log(LogLevel::kWarn, "event file skipped: only regular files are tailed",
      {{"path", path}, {"reason", SkipReasonName(reason)}, {"detail", detail}});
  ++counters_.skipped[static_cast<size_t>(reason)];
  return false;
}

FileTailer::FileTailer(Options options) : options_(std::move(options)) {
  if (options_.max_line_bytes == 0) options_.max_line_bytes = 1;
  LoadCheckpoint();
}

FileTailer::~FileTailer() {
  for (auto& [id, file] : tracked_) ::close(file.fd);
}

// Checkpoint format, one file per line: "<dev> <ino> <offset> <path>\n".
void FileTailer::LoadCheckpoint() {
  if (options_.checkpoint_path.empty()) return;
  auto text = ReadWholeFile(options_.checkpoint_path);
  if (!text) return;
  std::string_view rest = *text;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    std::string_view parts[3];
    bool ok = true;
    for (auto& part : parts) {
      size_t sp = line.find(' ');
      if (sp == std::string_view::npos) {
        ok = false;
        break;
      }
      part = line.substr(0, sp);
      line.remove_prefix(sp + 1);
    }
    uint64_t dev = 0, ino = 0;
    int64_t offset = 0;
    if (!ok || !ParseNum(parts[0], &dev) || !ParseNum(parts[1], &ino) || !ParseNum(parts[2], &offset) ||
        offset < 0) {
      continue;
    }
    saved_[{static_cast<dev_t>(dev), static_cast<ino_t>(ino)}] =
        Saved{static_cast<off_t>(offset), std::string(line)};
  }
}

off_t FileTailer::Committed(const Tracked& file) {
  return file.offset - static_cast<off_t>(file.partial.size());
}

Status FileTailer::SaveCheckpoint() {
  if (options_.checkpoint_path.empty()) return Status::Ok();
  std::ostringstream out;
  for (const auto& [id, file] : tracked_) {
    out << static_cast<uint64_t>(id.first) << ' ' << static_cast<uint64_t>(id.second) << ' '
        << static_cast<int64_t>(Committed(file)) << ' ' << file.path << '\n';
  }
  std::string text = out.str();
  if (text == last_written_) return Status::Ok();
  Status s = WriteFileAtomically(options_.checkpoint_path, text);
  if (s.ok()) last_written_ = std::move(text);
  return s;
}

void FileTailer::Emit(Tracked& file, std::string_view line, const LineCallback& callback) {
  ++counters_.lines;
  callback(file.path, line);
}

void FileTailer::Consume(Tracked& file, std::string_view data, const LineCallback& callback) {
  const size_t cap = options_.max_line_bytes;
  while (!data.empty()) {
    size_t nl = data.find('\n');
    std::string_view piece = data.substr(0, nl);
    if (file.discarding) {
      if (nl == std::string_view::npos) return;
      file.discarding = false;
      data.remove_prefix(nl + 1);
      continue;
    }
    if (file.partial.size() + piece.size() > cap) {
      std::string cut = file.partial;
      cut.append(piece.substr(0, cap - file.partial.size()));
      cut.append(kTruncatedMarker);
      file.partial.clear();
      ++counters_.truncated_lines;
      Emit(file, cut, callback);
      if (nl == std::string_view::npos) {
        file.discarding = true;
        return;
      }
      data.remove_prefix(nl + 1);
      continue;
    }
    if (nl == std::string_view::npos) {
      file.partial.append(piece);
      return;
    }
    if (file.partial.empty()) {
      Emit(file, piece, callback);
    } else {
      file.partial.append(piece);
      std::string line = std::move(file.partial);
      file.partial.clear();
      Emit(file, line, callback);
    }
    data.remove_prefix(nl + 1);
  }
}

void FileTailer::ReadAvailable(Tracked& file, const LineCallback& callback) {
  std::string buf(kChunkBytes, '\0');
  while (true) {
    ssize_t n = ::pread(file.fd, buf.data(), buf.size(), file.offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      ++counters_.read_errors;
      return;
    }
    if (n == 0) return;
    file.offset += n;
    Consume(file, std::string_view(buf.data(), static_cast<size_t>(n)), callback);
  }
}

std::map<FileTailer::FileId, std::string> FileTailer::MatchGlobs() {
  std::set<std::string> paths;
  for (const std::string& pattern : options_.globs) {
    glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) paths.insert(g.gl_pathv[i]);
    }
    ::globfree(&g);
  }
  std::map<FileId, std::string> current;
  std::map<std::string, SkipReason> skipped;
  for (const std::string& path : paths) {
    FileId id;
    if (Readable(path, &id, &skipped)) current.emplace(id, path);
  }
  skipped_ = std::move(skipped);
  return current;
}

void FileTailer::FinishVanished(const std::map<FileId, std::string>& current, const LineCallback& callback) {
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    if (current.count(it->first)) {
      ++it;
      continue;
    }
    Tracked& file = it->second;
    ReadAvailable(file, callback);
    if (!file.partial.empty()) {  // the writer moved on; deliver the unterminated tail
      std::string line = std::move(file.partial);
      file.partial.clear();
      Emit(file, line, callback);
    }
    ++counters_.rotations;
    ::close(file.fd);
    it = tracked_.erase(it);
  }
}

void FileTailer::ReadTracked(const std::map<FileId, std::string>& current, const LineCallback& callback) {
  for (auto& [id, file] : tracked_) {
    file.path = current.at(id);
    struct stat st {};
    if (::fstat(file.fd, &st) == 0 && st.st_size < file.offset) {
      ++counters_.truncations;
      file.offset = 0;
      file.partial.clear();
      file.discarding = false;
    }
    ReadAvailable(file, callback);
  }
}

void FileTailer::OpenNew(const FileId& id, const std::string& path, const LineCallback& callback) {
  // O_NONBLOCK: if the path was swapped for a FIFO since the stat, open must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    ++counters_.read_errors;
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || FileId{st.st_dev, st.st_ino} != id) {  // replaced in between
    ::close(fd);
    return;
  }
  Tracked file;
  file.path = path;
  file.fd = fd;
  if (auto saved = saved_.find(id); saved != saved_.end()) {
    if (saved->second.offset <= st.st_size) {
      file.offset = saved->second.offset;
    } else {
      ++counters_.truncations;
    }
    saved_.erase(saved);
  }
  Tracked& inserted = tracked_.emplace(id, std::move(file)).first->second;
  ReadAvailable(inserted, callback);
}

Status FileTailer::PollOnce(const LineCallback& callback) {
  // 1. What the globs match now, by identity.
  const std::map<FileId, std::string> current = MatchGlobs();
  // 2. Files that went away (rotated out of the globs, deleted, replaced): finish the old inode.
  FinishVanished(current, callback);
  // 3. Files still here: follow renames within the globs, detect truncation, read appended data.
  ReadTracked(current, callback);
  // 4. New files: start at the checkpointed offset when the checkpoint knows the inode. Files the
  // checkpoint knows are read first: after a restart they hold the older lines (a file rotated while the
  // tailer was down), so a stream stays in order whatever the inode numbers are.
  for (bool checkpointed : {true, false}) {
    for (const auto& [id, path] : current) {
      if (tracked_.count(id) || saved_.count(id) != (checkpointed ? 1u : 0u)) continue;
      OpenNew(id, path, callback);
    }
  }
  return SaveCheckpoint();
}

}  // namespace gpuscope
