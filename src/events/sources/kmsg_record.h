// KmsgRecord: one record of the kernel log as /dev/kmsg hands it out, and a pure parser for it.
// Format (Documentation/ABI/testing/dev-kmsg): "PREFIX,SEQ,USEC,FLAGS[,...];MESSAGE\n" followed by
// zero or more dictionary lines " KEY=VALUE\n". PREFIX is (facility << 3) | priority.
//
// Thread-safety: the parser is a pure function; records are value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscope {

struct KmsgRecord {
  int priority = 0;  // syslog level 0 (emerg) .. 7 (debug)
  int facility = 0;  // syslog facility (0 = kernel)
  uint64_t sequence = 0;
  uint64_t timestamp_usec = 0;  // CLOCK_MONOTONIC microseconds since boot
  char flags = '-';             // '-' normal, 'c' continuation (older kernels), '+' fragment
  // The message text exactly as the kernel wrote it (non-printable bytes are escaped by the kernel
  // as \xNN; they are not unescaped here).
  std::string message;
  // Dictionary ("continuation") lines such as SUBSYSTEM=pci, DEVICE=+pci:0000:18:00.0, in order.
  std::vector<std::pair<std::string, std::string>> dictionary;

  // The value of dictionary key `key`, or nullopt when absent.
  std::optional<std::string_view> Find(std::string_view key) const;
};

// Parses one record. A trailing '\n' is optional. Returns nullopt when the header is malformed
// (missing ';', non-numeric fields, overflowing numbers); dictionary lines without '=' are ignored.
std::optional<KmsgRecord> ParseKmsgRecord(std::string_view text);

// Length of the first complete record in `buffer` (through the '\n' that ends its last dictionary
// line), or 0 when the buffer does not yet hold a complete record. A record is complete when its
// last '\n' is followed by a byte that does not start a dictionary line; with `at_end` the end of
// the buffer also ends a record that finishes with '\n'.
size_t KmsgRecordLength(std::string_view buffer, bool at_end);

}  // namespace gpuscope
