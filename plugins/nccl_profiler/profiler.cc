#include "plugins/nccl_profiler/profiler.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace gpuscope::nccl_profiler {
namespace {

constexpr const char* kDefaultSocket = "/run/gpuscope/training.sock";
constexpr int64_t kQuietAfterNoAgentNs = 5'000'000'000;
constexpr auto kSendEvery = std::chrono::milliseconds(100);
// A busy agent: its socket holds net.unix.max_dgram_qlen datagrams (often 10) whatever its buffer, and
// refuses more while its receiving thread is off the CPU. The sender thread (never NCCL's) waits and
// tries again, this often and this long, before the datagram's records are dropped (and counted); the
// ring keeps taking NCCL's records meanwhile.
constexpr auto kBusyRetryEvery = std::chrono::milliseconds(2);
constexpr int kBusyRetries = 250;

std::mutex g_mu;
Profiler* g_profiler = nullptr;
int g_users = 0;

// "AllReduce", "all_reduce", "ALLREDUCE" -> "allreduce".
std::string Squash(const char* text) {
  std::string out;
  for (const char* p = text; p != nullptr && *p != '\0' && out.size() < 32; ++p) {
    if (std::isalnum(static_cast<unsigned char>(*p))) out.push_back(static_cast<char>(std::tolower(*p)));
  }
  return out;
}

int EnvInt(std::initializer_list<const char*> names, int fallback) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return std::atoi(value);
  }
  return fallback;
}

std::string EnvString(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return {};
}

}  // namespace

uint8_t OpCode(const char* func) {
  // The wire's order (python/gpuscope/_wire.py OPS), as NCCL names its functions.
  static constexpr std::string_view kNames[] = {"broadcast", "reduce",   "allgather", "reducescatter",
                                                "allreduce", "sendrecv", "send",      "recv",
                                                "barrier",   "alltoall", "gather",    "scatter"};
  const std::string name = Squash(func);
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (name == kNames[i]) return static_cast<uint8_t>(i);
  }
  return 255;
}

size_t DatatypeSize(const char* datatype) {
  const std::string name = Squash(datatype);  // "ncclbfloat16", "ncclfloat8e4m3", "nccluint8"
  if (name.find("e4m3") != std::string::npos || name.find("e5m2") != std::string::npos) return 1;
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  const int bits = digits < name.size() ? std::atoi(name.c_str() + digits) : 0;
  if (bits == 8 || bits == 16 || bits == 32 || bits == 64) return static_cast<size_t>(bits / 8);
  if (name == "ncclchar") return 1;
  if (name == "ncclint" || name == "ncclfloat") return 4;
  if (name == "nccldouble") return 8;
  if (name == "ncclhalf") return 2;
  return 0;
}

uint8_t AlgoCode(const char* algo) {
  static constexpr std::string_view kNames[] = {"tree",     "ring", "collnetdirect", "collnetchain", "nvls",
                                                "nvlstree", "pat"};
  const std::string name = Squash(algo);
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (name == kNames[i]) return static_cast<uint8_t>(i + 1);
  }
  return 0;
}

uint8_t ProtoCode(const char* proto) {
  static constexpr std::string_view kNames[] = {"ll", "ll128", "simple"};
  const std::string name = Squash(proto);
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (name == kNames[i]) return static_cast<uint8_t>(i + 1);
  }
  return 0;
}

uint64_t Profiler::NowNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
}

Profiler& Profiler::Acquire() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_profiler == nullptr) g_profiler = new Profiler();
  ++g_users;
  return *g_profiler;
}

void Profiler::Release() {
  Profiler* done = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_users > 0 && --g_users == 0) {
      done = g_profiler;
      g_profiler = nullptr;
    }
  }
  delete done;  // flushes and joins the sender
}

Profiler::Profiler() {
  // The identity the agent checks against the process's own environment (docs/design/training.md).
  hello_.rank = EnvInt({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}, 0);
  hello_.local_rank = EnvInt({"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}, 0);
  hello_.world_size = EnvInt({"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1);
  hello_.job = EnvString({"SLURM_JOB_ID", "GPUSCOPE_JOB_ID"});
  socket_path_ = EnvString({"GPUSCOPE_TRAINING_SOCKET"});
  if (socket_path_.empty()) socket_path_ = kDefaultSocket;
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sender_ = std::thread([this] { Send(); });
}

Profiler::~Profiler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  sender_.join();
  if (fd_ >= 0) close(fd_);
}

void Profiler::Entered(CommContext& context, CollEvent& event) {
  event.record.comm = context.comm;
  event.record.nranks = context.nranks;
  event.record.begin_ns = NowNs();
  event.record.end_ns = 0;
  ring_.Push(event.record);
}

void CollEvent::Reset(uint64_t seq, uint32_t channels) {
  kernel_started.store(0, std::memory_order_relaxed);
  kernel_stopped.store(0, std::memory_order_relaxed);
  proxy_started.store(0, std::memory_order_relaxed);
  proxy_stopped.store(0, std::memory_order_relaxed);
  last_child_stop_ns.store(0, std::memory_order_relaxed);
  stopped.store(false, std::memory_order_relaxed);
  completed.store(false, std::memory_order_relaxed);
  expected_channels = channels;
  record.seq = seq;
}

void Profiler::ChildStarted(CollEvent& parent, ChildKind kind) {
  auto& started = kind == ChildKind::kKernelChannel ? parent.kernel_started : parent.proxy_started;
  started.fetch_add(1, std::memory_order_acq_rel);
}

void Profiler::ChildStopped(CollEvent& parent, ChildKind kind) {
  auto& stopped = kind == ChildKind::kKernelChannel ? parent.kernel_stopped : parent.proxy_stopped;
  stopped.fetch_add(1, std::memory_order_acq_rel);
  // The end time is the stop that left no started child running (the last one, once no more start); the
  // clock is read only then. Children of one collective stop on several proxy threads: the latest wins.
  if (parent.kernel_stopped.load(std::memory_order_acquire) >=
          parent.kernel_started.load(std::memory_order_acquire) &&
      parent.proxy_stopped.load(std::memory_order_acquire) >=
          parent.proxy_started.load(std::memory_order_acquire)) {
    const uint64_t now = NowNs();
    uint64_t last = parent.last_child_stop_ns.load(std::memory_order_relaxed);
    while (last < now &&
           !parent.last_child_stop_ns.compare_exchange_weak(last, now, std::memory_order_acq_rel)) {
    }
  }
  MaybeComplete(parent);
}

void Profiler::MaybeComplete(CollEvent& event) {
  if (!event.stopped.load(std::memory_order_acquire)) return;
  // Stops before starts: a child counted as stopped was counted as started before it.
  const uint32_t kernel_stopped = event.kernel_stopped.load(std::memory_order_acquire);
  const uint32_t proxy_stopped = event.proxy_stopped.load(std::memory_order_acquire);
  const uint32_t kernel_started = event.kernel_started.load(std::memory_order_acquire);
  const uint32_t proxy_started = event.proxy_started.load(std::memory_order_acquire);
  if (kernel_started + proxy_started == 0) return;  // no child yet: enqueued, not known to run
  if (kernel_stopped < kernel_started || proxy_stopped < proxy_started) return;
  if (kernel_started > 0 && kernel_stopped < event.expected_channels) return;
  if (event.completed.exchange(true)) return;
  TrainingCollective record = event.record;
  record.end_ns = event.last_child_stop_ns.load(std::memory_order_acquire);
  ring_.Push(record);
}

bool Profiler::SendDatagram(std::string& datagram, uint16_t records) {
  FinishTrainingDatagram(&datagram, records);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, socket_path_.data(), socket_path_.size());
  const ssize_t n = sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT,
                           reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  if (n == static_cast<ssize_t>(datagram.size())) return true;
  if (errno == ENOENT || errno == ECONNREFUSED || errno == EACCES || errno == ENOTDIR) {
    quiet_until_ns_ = static_cast<int64_t>(NowNs()) + kQuietAfterNoAgentNs;
  }
  return false;
}

void Profiler::Send() {
  std::string datagram;
  TrainingCollective record;
  bool last = false;
  while (!last) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, kSendEvery, [this] { return stopping_; });
      last = stopping_;
    }
    // Drain: datagrams of a hello and as many records as fit, until the ring is empty.
    bool more = true;
    while (more) {
      const uint64_t dropped = ring_.dropped() + send_dropped_.load(std::memory_order_relaxed);
      datagram.clear();
      AppendTrainingHeader(&datagram, static_cast<uint32_t>(dropped));
      AppendTrainingHello(&datagram, hello_);
      uint16_t records = 1;
      more = false;
      while (datagram.size() + kTrainingCollectiveRecordSize <= kTrainingMaxDatagram) {
        if (!ring_.Pop(&record)) break;
        AppendTrainingCollective(&datagram, record);
        ++records;
        more = true;
      }
      if (records == 1) break;  // nothing to send
      const bool quiet = static_cast<int64_t>(NowNs()) < quiet_until_ns_;
      bool sent = !(fd_ < 0 || quiet) && SendDatagram(datagram, records);
      for (int retry = 0; !sent && !quiet && fd_ >= 0 && errno == EAGAIN && retry < kBusyRetries; ++retry) {
        std::this_thread::sleep_for(kBusyRetryEvery);
        sent = SendDatagram(datagram, records);
      }
      if (!sent) {
        send_dropped_.fetch_add(records - 1, std::memory_order_relaxed);
      } else {
        reported_drops_ = dropped;
      }
    }
  }
  // The last word: drops after the last delivered datagram (its own records, a full agent) would go
  // unreported, so a datagram with no records carries the final count; a busy agent gets a few tries.
  const uint64_t dropped = ring_.dropped() + send_dropped_.load(std::memory_order_relaxed);
  if (dropped == reported_drops_ || fd_ < 0 || static_cast<int64_t>(NowNs()) < quiet_until_ns_) return;
  for (int attempt = 0; attempt < 50; ++attempt) {
    datagram.clear();
    AppendTrainingHeader(&datagram, static_cast<uint32_t>(dropped));
    AppendTrainingHello(&datagram, hello_);
    if (SendDatagram(datagram, 1) || errno != EAGAIN) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace gpuscope::nccl_profiler
