// The files of a durable queue's directory below the queue's logic: their names (segment-<seq>.log for
// the records, checkpoint-<consumer> for each consumer's position) and whole-buffer positional reads
// and writes that retry interrupted and short transfers.
//
// Thread-safety: stateless functions, safe from any thread; callers serialise writes to one range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuscope {

// "segment-<seq, 20 digits>.log".
std::string QueueSegmentFileName(uint64_t seq);
// Parses "segment-<1 to 20 digits>.log" whose number fits in 64 bits; false for any other name.
bool ParseQueueSegmentFileName(const std::string& name, uint64_t* seq);

// "checkpoint-<consumer>".
std::string QueueCheckpointFileName(std::string_view consumer);
// Whether the name is a checkpoint file of any consumer, of the old single-consumer format
// ("checkpoint") or a leftover temporary file of one.
bool IsQueueCheckpointFileName(std::string_view name);

// Writes all `size` bytes at `offset`. False on an I/O error (errno says which).
bool WriteAllAt(int fd, const char* data, size_t size, uint64_t offset);
// Reads exactly `size` bytes at `offset`. False on an I/O error (errno says which) or end of file.
bool ReadAllAt(int fd, char* data, size_t size, uint64_t offset);
// fsyncs a directory, so that files created or removed in it survive a crash. Errors are ignored.
void SyncDirectory(const std::string& dir);
// "<what> <path>: <strerror(errno)>".
std::string ErrnoText(std::string_view what, const std::string& path);

}  // namespace gpuscope
