#include "src/platform/host.h"

#include <unistd.h>

namespace gpuscope {

std::string HostName() {
  char buffer[256] = {};
  return gethostname(buffer, sizeof(buffer) - 1) == 0 ? std::string(buffer) : std::string();
}

std::string ShortHostName() {
  const std::string host = HostName();
  return host.substr(0, host.find('.'));
}

}  // namespace gpuscope
