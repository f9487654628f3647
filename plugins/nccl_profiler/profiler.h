// The NCCL profiler plugin's core, independent of the ABI version (plugin.cc adapts v4, v5 and v6 to it):
// per communicator, which collectives were entered and when each completed, streamed to the gpuscope
// agent's training socket (docs/design/training.md) as collective records: one when the collective is
// entered (NCCL's Coll event starts: the application called it) and one when it completed.
//
// Completion: a Coll event's stop only means NCCL enqueued the work, so the collective is complete when
// its kernel channels are done: the KernelCh child events (one per channel) have all stopped, at least
// coll.nChannels of them, and the Coll event was stopped. A collective whose children never come (no
// kernel profiling, a hang) stays "entered" only, which is what the agent's hang detection needs.
//
// Memory is fixed per communicator: collectives live in a ring of kCollSlots indexed by sequence number
// and child events in a ring of kChildSlots; a child that refers to a collective whose slot was reused
// since is ignored. Records go through a RecordRing to one sender thread per process that sends datagrams
// without blocking; what the ring or the socket cannot take is counted and reported in the next datagram.
//
// Thread-safety: the entry points take any NCCL thread; a context's collective slots are written by the
// thread that starts the collective and read by the threads of its children through atomics.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "plugins/nccl_profiler/record_ring.h"
#include "src/parsers/training_wire.h"

namespace gpuscope::nccl_profiler {

class Profiler;

// Event handles given to NCCL are EventBase pointers: the kind tells which event a handle is.
enum class Kind : uint8_t { kColl = 1, kChild = 2 };
struct EventBase {
  explicit EventBase(Kind k) : kind(k) {}
  const Kind kind;
};

struct CollEvent : EventBase {
  CollEvent() : EventBase(Kind::kColl) {}
  Profiler* profiler = nullptr;
  std::atomic<uint64_t> generation{~0ull};  // the sequence number of the collective in the slot
  TrainingCollective record;
  uint32_t expected_children = 0;  // coll.nChannels
  std::atomic<uint32_t> started{0};
  std::atomic<uint32_t> stopped_children{0};
  std::atomic<bool> stopped{false};
  std::atomic<bool> completed{false};
};

struct ChildEvent : EventBase {
  ChildEvent() : EventBase(Kind::kChild) {}
  CollEvent* parent = nullptr;
  uint64_t generation = 0;
};

struct CommContext {
  static constexpr size_t kCollSlots = 4096;
  static constexpr size_t kChildSlots = 16384;
  Profiler* profiler = nullptr;  // acquired at init, released at finalize
  uint64_t comm = 0;
  int nranks = 0;
  std::unique_ptr<CollEvent[]> colls = std::make_unique<CollEvent[]>(kCollSlots);
  std::unique_ptr<ChildEvent[]> children = std::make_unique<ChildEvent[]>(kChildSlots);
  std::atomic<uint64_t> next_child{0};
};

// Collective operation and size of a NCCL function and datatype name ("AllReduce", "ncclBfloat16").
uint8_t OpCode(const char* func);
size_t DatatypeSize(const char* datatype);
uint8_t AlgoCode(const char* algo);
uint8_t ProtoCode(const char* proto);

// The process-wide part: the ring and the sender thread, started with the first communicator and
// stopped (after a last flush) with the last one.
class Profiler {
 public:
  static Profiler& Acquire();
  static void Release();

  // A collective entered: `event` is filled and its entry record queued.
  void Entered(CommContext& context, CollEvent& event);
  // A child or the Coll event stopped: the completion record is queued once every child is done.
  void MaybeComplete(CollEvent& event);

  static uint64_t NowNs();

 private:
  Profiler();
  ~Profiler();
  void Send();
  bool SendDatagram(std::string& datagram, uint16_t records);

  RecordRing ring_{16384};
  TrainingHello hello_;
  std::string socket_path_;
  int fd_ = -1;
  std::atomic<uint64_t> send_dropped_{0};
  int64_t quiet_until_ns_ = 0;   // sender thread: no send before (no agent)
  uint64_t reported_drops_ = 0;  // sender thread: the count the last delivered datagram carried
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread sender_;
};

}  // namespace gpuscope::nccl_profiler
