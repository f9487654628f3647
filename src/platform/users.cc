#include "src/platform/users.h"

#include <pwd.h>

#include <cerrno>
#include <vector>

namespace gpuscope {

std::string UserNameOf(uint32_t uid) {
  std::vector<char> buffer(16384);
  for (int attempt = 0; attempt < 4; ++attempt) {
    struct passwd pw;
    struct passwd* result = nullptr;
    const int rc = ::getpwuid_r(static_cast<uid_t>(uid), &pw, buffer.data(), buffer.size(), &result);
    if (rc == ERANGE) {
      buffer.resize(buffer.size() * 4);
      continue;
    }
    if (rc == 0 && result != nullptr && result->pw_name != nullptr) return result->pw_name;
    break;
  }
  return "";
}

}  // namespace gpuscope
