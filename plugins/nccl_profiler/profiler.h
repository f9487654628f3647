// The NCCL profiler plugin's core, independent of the ABI version (plugin.cc adapts v4, v5 and v6 to it):
// per communicator, which collectives were entered and when each completed, streamed to the gpuscope
// agent's training socket (docs/design/training.md) as collective records: one when the collective is
// entered (NCCL's Coll event starts: the application called it) and one when it completed.
//
// Completion: a Coll event's stop only means NCCL enqueued the work; the work itself shows in its child
// events, which NCCL's proxy thread starts and stops: KernelCh (one per channel the kernel ran) and
// ProxyOp (one per channel and network peer the proxy served: a rank's network part). The collective is
// complete when
//   - NCCL stopped the Coll event, and
//   - at least one child came, and every child that started has stopped, and
//   - if kernel channels came, at least coll.nChannels of them stopped (so a channel whose start the proxy
//     has not seen yet cannot be missed).
// So: kernel channels only (intra-node, no network) complete it as before; ProxyOps only (the KernelCh
// events absent: a NCCL path or version without them) complete it when the proxy ops are all done; with
// both, when the kernel and the network parts are both done. Its end time is the last child's stop (not the
// Coll stop, which may come later). A child that starts after the completion was reported is ignored. A
// collective whose children never come or never stop (no child events, a hang) stays "entered" only, which
// is what the agent's hang detection needs. ProxyStep events (one per network transfer) are not asked for:
// their ProxyOp stops after its last step, so they would add cost and no completion. A ProxyOp run by
// another process's proxy (PXN: its pid is not ours) cannot name its parent here and is ignored.
//
// Memory is fixed per communicator: collectives live in a ring of kCollSlots indexed by sequence number
// and child events in a ring of kChildSlots; a child that refers to a collective whose slot was reused
// since is ignored (a child stop that comes after kChildSlots later children started counts for the child
// now in its slot: the price of fixed memory). Records go through a RecordRing to one sender thread per
// process that sends datagrams without blocking; what the ring or the socket cannot take is counted and
// reported in the next datagram.
//
// Thread-safety: the entry points take any NCCL thread; a context's collective slots are written by the
// thread that starts the collective and read by the threads of its children through atomics.
#pragma once

#include <sys/types.h>

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

// The child events a collective's completion is read from.
enum class ChildKind : uint8_t { kKernelChannel, kProxyOp };

struct CollEvent : EventBase {
  CollEvent() : EventBase(Kind::kColl) {}
  // Makes the slot the collective `seq` with `channels` channels (coll.nChannels); the record's other
  // fields are the caller's.
  void Reset(uint64_t seq, uint32_t channels);

  Profiler* profiler = nullptr;
  std::atomic<uint64_t> generation{~0ull};  // the sequence number of the collective in the slot
  TrainingCollective record;
  uint32_t expected_channels = 0;  // coll.nChannels
  std::atomic<uint32_t> kernel_started{0};
  std::atomic<uint32_t> kernel_stopped{0};
  std::atomic<uint32_t> proxy_started{0};
  std::atomic<uint32_t> proxy_stopped{0};
  std::atomic<uint64_t> last_child_stop_ns{0};
  std::atomic<bool> stopped{false};
  std::atomic<bool> completed{false};
};

struct ChildEvent : EventBase {
  ChildEvent() : EventBase(Kind::kChild) {}
  CollEvent* parent = nullptr;
  uint64_t generation = 0;
  ChildKind child_kind = ChildKind::kKernelChannel;
};

struct CommContext {
  static constexpr size_t kCollSlots = 4096;
  static constexpr size_t kChildSlots = 16384;
  Profiler* profiler = nullptr;  // acquired at init, released at finalize
  uint64_t comm = 0;
  pid_t pid = 0;  // this process: a ProxyOp of another one (PXN) names a parent that is not ours
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
  // A child started: counted on its collective.
  static void ChildStarted(CollEvent& parent, ChildKind kind);
  // A child stopped: counted, then as MaybeComplete.
  void ChildStopped(CollEvent& parent, ChildKind kind);
  // The Coll event or a child stopped: the completion record is queued once the rule above holds.
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
