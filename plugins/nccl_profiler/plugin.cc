// libnccl-profiler-gpuscope.so: the ncclProfiler_v4, _v5 and _v6 symbols NCCL looks for, each an adapter of
// its version's descriptors to the version-independent core (profiler.h). Loaded with
// NCCL_PROFILER_PLUGIN=gpuscope (or the library's path); it never fails NCCL: every entry point returns
// ncclSuccess, and init fails only when the plugin cannot hold a communicator's state at all.
#include <unistd.h>

#include <new>

#include "plugins/nccl_profiler/nccl_profiler_abi.h"
#include "plugins/nccl_profiler/profiler.h"

namespace gpuscope::nccl_profiler {
namespace {

// NCCL passes the same static strings for a function, datatype, algorithm and protocol every time: the
// last answer per thread is kept by pointer, so the names are parsed once, not per collective.
template <typename Value, Value (*Parse)(const char*)>
Value Cached(const char* name) {
  thread_local const char* last_name = nullptr;
  thread_local Value last_value{};
  if (name != last_name) {
    last_value = Parse(name);
    last_name = name;
  }
  return last_value;
}

// The events whose starts and stops the plugin wants: collectives and the children their completion is
// read from (profiler.h), kernel channels and proxy ops. Nothing else is asked for, so NCCL spends nothing
// on the rest (ProxyStep: one event per network transfer).
constexpr int kActivation = ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyOp;

ncclResult_t Init(void** context, uint64_t comm, int* activation, int nranks) {
  auto* state = new (std::nothrow) CommContext();
  if (state == nullptr) return ncclSystemError;
  state->comm = comm;
  state->nranks = nranks;
  state->pid = getpid();
  state->profiler = &Profiler::Acquire();
  *context = state;
  if (activation != nullptr) *activation = kActivation;
  return ncclSuccess;
}

ncclResult_t InitV4(void** context, int* activation, const char*, uint64_t comm_hash, int, int nranks, int,
                    ncclDebugLogger_t) {
  return Init(context, comm_hash, activation, nranks);
}

ncclResult_t InitV5(void** context, uint64_t comm_id, int* activation, const char*, int, int nranks, int,
                    ncclDebugLogger_t) {
  return Init(context, comm_id, activation, nranks);
}

ncclResult_t Finalize(void* context) {
  delete static_cast<CommContext*>(context);
  Profiler::Release();
  return ncclSuccess;
}

// A child event (KernelCh, ProxyOp) of a collective this context started: counted on it.
void* StartChild(CommContext& state, void* parent_object, ChildKind kind) {
  auto* base = static_cast<EventBase*>(parent_object);
  if (base == nullptr || base->kind != Kind::kColl) return nullptr;  // a p2p or an event we gave no handle
  auto* parent = static_cast<CollEvent*>(base);
  ChildEvent& child =
      state.children[state.next_child.fetch_add(1, std::memory_order_relaxed) % CommContext::kChildSlots];
  child.parent = parent;
  child.generation = parent->generation.load(std::memory_order_acquire);
  child.child_kind = kind;
  Profiler::ChildStarted(*parent, kind);
  return static_cast<EventBase*>(&child);
}

// The same start for every version: their coll, kernelCh and proxyOp members have the fields read here.
template <typename Descr>
ncclResult_t StartEvent(void* context, void** handle, Descr* descr) {
  *handle = nullptr;
  auto* state = static_cast<CommContext*>(context);
  if (state == nullptr || descr == nullptr) return ncclSuccess;
  const uint64_t type = descr->type;
  if (type & ncclProfileColl) {
    const uint64_t seq = descr->coll.seqNumber;
    CollEvent& event = state->colls[seq % CommContext::kCollSlots];
    event.Reset(seq, descr->coll.nChannels);
    event.record.op = Cached<uint8_t, OpCode>(descr->coll.func);
    event.record.bytes = descr->coll.count * Cached<size_t, DatatypeSize>(descr->coll.datatype);
    event.record.algo = Cached<uint8_t, AlgoCode>(descr->coll.algo);
    event.record.proto = Cached<uint8_t, ProtoCode>(descr->coll.proto);
    event.record.dtype = 0;
    event.profiler = state->profiler;
    event.generation.store(seq, std::memory_order_release);
    state->profiler->Entered(*state, event);
    *handle = static_cast<EventBase*>(&event);
  } else if (type & ncclProfileKernelCh) {
    *handle = StartChild(*state, descr->parentObj, ChildKind::kKernelChannel);
  } else if (type & ncclProfileProxyOp) {
    // PXN: a proxy op another process's proxy runs names a parent in that process's memory.
    if (descr->proxyOp.pid != state->pid) return ncclSuccess;
    *handle = StartChild(*state, descr->parentObj, ChildKind::kProxyOp);
  }
  return ncclSuccess;
}

ncclResult_t StopEvent(void* handle) {
  if (handle == nullptr) return ncclSuccess;
  auto* base = static_cast<EventBase*>(handle);
  if (base->kind == Kind::kColl) {
    auto* event = static_cast<CollEvent*>(base);
    event->stopped.store(true, std::memory_order_release);
    event->profiler->MaybeComplete(*event);
    return ncclSuccess;
  }
  auto* child = static_cast<ChildEvent*>(base);
  CollEvent* parent = child->parent;
  if (parent == nullptr || parent->generation.load(std::memory_order_acquire) != child->generation) {
    return ncclSuccess;  // the collective's slot was reused: too late to tell
  }
  parent->profiler->ChildStopped(*parent, child->child_kind);
  return ncclSuccess;
}

template <typename Args>
ncclResult_t RecordEventState(void*, ncclProfilerEventState_t, Args*) {
  return ncclSuccess;  // completion is taken from the children's stops (profiler.h)
}

constexpr const char* kName = "gpuscope";

}  // namespace
}  // namespace gpuscope::nccl_profiler

using namespace gpuscope::nccl_profiler;  // NOLINT(google-build-using-namespace): the exported tables below

extern "C" {

__attribute__((visibility("default")))
ncclProfiler_v4_t ncclProfiler_v4 = {kName,
                                     InitV4,
                                     StartEvent<ncclProfilerEventDescr_v4_t>,
                                     StopEvent,
                                     RecordEventState<ncclProfilerEventStateArgs_v4_t>,
                                     Finalize};

__attribute__((visibility("default")))
ncclProfiler_v5_t ncclProfiler_v5 = {kName,
                                     InitV5,
                                     StartEvent<ncclProfilerEventDescr_v5_t>,
                                     StopEvent,
                                     RecordEventState<ncclProfilerEventStateArgs_v5_t>,
                                     Finalize};

__attribute__((visibility("default")))
ncclProfiler_v6_t ncclProfiler_v6 = {kName,
                                     InitV5,
                                     StartEvent<ncclProfilerEventDescr_v6_t>,
                                     StopEvent,
                                     RecordEventState<ncclProfilerEventStateArgs_v6_t>,
                                     Finalize};

}  // extern "C"
