// Test helpers for the durable queue: a temporary directory removed at the end of the test.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace gpuscope {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpuscope_queue_XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    if (made == nullptr) std::abort();
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gpuscope
