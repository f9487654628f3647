// libFuzzer target: the sshare parser of the Slurm scheduler collector never crashes and keeps its
// invariants on any input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/parsers/slurm_scheduler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuscope;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  SshareRows r = ParseSshare(text);
  for (const SshareRow& row : r.rows) {
    if (row.account.empty()) __builtin_trap();
  }
  return 0;
}
