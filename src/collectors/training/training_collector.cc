#include "src/collectors/training/training_collector.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "src/core/log.h"
#include "src/node/node_state.h"
#include "src/parsers/proc_cgroup.h"
#include "src/parsers/proc_environ.h"
#include "src/parsers/text.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

constexpr size_t kMaxSmallFileBytes = 64 * 1024;
constexpr size_t kMaxIdentityCache = 4096;
// The receive buffer asked for: bursts of a node's ranks between two wake-ups of the thread.
constexpr int kReceiveBuffer = 4 << 20;

int64_t SystemNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TrainingCollector::TrainingCollector(TrainingCollectorOptions options)
    : options_(std::move(options)),
      state_([&] {
        TrainingStateOptions state = options_.state;
        if (state.hostname.empty()) state.hostname = options_.hostname;
        return state;
      }()),
      spans_([&] {
        TrainingSpansOptions traces = options_.traces;
        if (options_.spans == nullptr) traces.traces = TrainingTraces::kOff;
        traces.rank_expiry_ns = options_.state.rank_expiry_ns;
        return traces;
      }()) {}

TrainingCollector::~TrainingCollector() {
  if (receiver_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(stop_fd_, &one, sizeof(one));
    receiver_.join();
  }
  if (socket_fd_ >= 0) {
    close(socket_fd_);
    std::error_code ignored;
    std::filesystem::remove(options_.socket_path, ignored);
  }
  if (stop_fd_ >= 0) close(stop_fd_);
}

int64_t TrainingCollector::NowNs() const { return options_.now_ns ? options_.now_ns() : SystemNowNs(); }

Status TrainingCollector::Start() {
  if (bound_.load()) return Status::Ok();
  const std::string& path = options_.socket_path;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return Status::InvalidArgument("training socket path empty or longer than " +
                                   std::to_string(sizeof(address.sun_path) - 1) + " bytes: " + path);
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  // A socket left by an earlier agent is replaced; anything else at the path is not ours to remove.
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Status::Unavailable(path + " exists and is not a socket");
    unlink(path.c_str());
  }
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(std::string("training socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
  int buffer = kReceiveBuffer;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof(buffer)) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));  // capped by net.core.rmem_max
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    const std::string message = "cannot bind the training socket " + path + ": " + std::strerror(errno);
    close(fd);
    return Status::Unavailable(message);
  }
  // Every local process may send; who it is comes from the kernel, not from the permission.
  chmod(path.c_str(), 0666);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) {
    close(fd);
    unlink(path.c_str());
    return Status::Unavailable(std::string("eventfd: ") + std::strerror(errno));
  }
  socket_fd_ = fd;
  receiver_ = std::thread([this] { Receive(); });
  bound_.store(true);
  Log(LogLevel::kInfo, "training socket listening", {{"path", path}});
  return Status::Ok();
}

void TrainingCollector::Receive() {
  char buffer[kTrainingMaxDatagram + 1];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  while (true) {
    pollfd fds[2] = {{socket_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    while (true) {
      iovec iov{buffer, sizeof(buffer)};
      msghdr message{};
      message.msg_iov = &iov;
      message.msg_iovlen = 1;
      message.msg_control = control;
      message.msg_controllen = sizeof(control);
      const ssize_t n = recvmsg(socket_fd_, &message, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
      if (n < 0) break;  // EAGAIN: drained
      uint32_t pid = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
            c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
          ucred credentials;
          std::memcpy(&credentials, CMSG_DATA(c), sizeof(credentials));
          pid = static_cast<uint32_t>(credentials.pid);
        }
      }
      const bool truncated = static_cast<size_t>(n) > kTrainingMaxDatagram || (message.msg_flags & MSG_TRUNC);
      Handle(std::string_view(buffer, std::min(static_cast<size_t>(n), kTrainingMaxDatagram)), pid,
             truncated);
    }
  }
}

void TrainingCollector::Handle(std::string_view bytes, uint32_t pid, bool truncated) {
  const int64_t now = NowNs();
  auto reject = [&](std::string_view reason) {
    MutexLock lock(&mu_);
    ++datagrams_;
    ++rejected_[std::string(reason)];
  };
  if (truncated) return reject("oversize");
  if (pid == 0) return reject("no_credentials");
  const TrainingWireError error = DecodeTrainingDatagram(bytes, &datagram_);
  if (error != TrainingWireError::kNone) return reject("malformed");
  if (!datagram_.hello) return reject("no_hello");
  std::optional<TrainingIdentity> identity = Identify(pid);
  if (!identity) return reject("unknown_process");
  // The claims must agree with what the agent found: a process cannot report under another job or rank.
  const TrainingHello& hello = *datagram_.hello;
  if (!hello.job.empty() && hello.job != identity->job) return reject("identity");
  if (identity->rank >= 0 && hello.rank != identity->rank) return reject("identity");
  if (identity->rank < 0) identity->rank = hello.rank;  // the launcher set no rank variable: the claim
  MutexLock lock(&mu_);
  ++datagrams_;
  uint32_t& last = drops_by_pid_[pid];
  if (datagram_.producer_drops > last) producer_drops_ += datagram_.producer_drops - last;
  last = datagram_.producer_drops;
  if (drops_by_pid_.size() > kMaxIdentityCache) drops_by_pid_.clear();
  state_.Apply(*identity, datagram_, now);
  spans_.Apply(*identity, datagram_, now);
}

std::optional<TrainingIdentity> TrainingCollector::Identify(uint32_t pid) {
  const auto now = std::chrono::steady_clock::now();
  auto it = identities_.find(pid);
  if (it != identities_.end() && it->second.expires > now) return it->second.identity;
  if (identities_.size() >= kMaxIdentityCache) identities_.clear();
  std::optional<TrainingIdentity> identity = options_.resolve ? options_.resolve(pid) : IdentifyFromProc(pid);
  identities_[pid] = CachedIdentity{identity, now + options_.identity_ttl};
  return identity;
}

std::optional<TrainingIdentity> TrainingCollector::IdentifyFromProc(uint32_t pid) const {
  const std::string dir = options_.procfs + "/" + std::to_string(pid);
  std::string cgroup;
  if (ReadFileInto(dir + "/cgroup", &cgroup, kMaxSmallFileBytes) != 0) return std::nullopt;  // gone
  std::string environ;
  ReadFileInto(dir + "/environ", &environ, kMaxEnvironBytes + 1);
  const TrainingEnviron env = ParseTrainingEnviron(environ);
  TrainingIdentity identity;
  const std::optional<SlurmCgroup> slurm = ParseProcCgroup(cgroup);
  identity.job = slurm ? slurm->job_id : env.job;
  identity.rank = text::ParseWhole<int32_t>(env.rank).value_or(-1);
  if (options_.node != nullptr) {
    const auto inventory = options_.node->gpus().Current();
    // The GPU NVML shows the process on; else the one its launcher gave its local rank (a process that
    // has not created its CUDA context yet, or one NVML cannot see from a container).
    std::optional<uint32_t> gpu;
    for (const GpuProcessObservation& process : inventory->processes) {
      if (process.pid == pid) {
        gpu = process.gpu;
        break;
      }
    }
    const std::optional<int32_t> local = text::ParseWhole<int32_t>(env.local_rank);
    if (!gpu && local && static_cast<size_t>(*local) < env.gpus.size()) {
      if (const auto index = text::ParseWhole<uint32_t>(env.gpus[*local]))
        gpu = static_cast<uint32_t>(*index);
    }
    if (gpu) {
      identity.gpu = std::to_string(*gpu);
      if (const GpuDeviceInventory* device = inventory->Device(*gpu)) identity.uuid = device->uuid;
    }
  }
  return identity;
}

namespace {

const std::vector<MetricDescription>& SelfDescriptions() {
  static const std::vector<MetricDescription> descriptions = {
      {"gpuscope_training_datagrams_total",
       MetricType::kCounter,
       "Datagrams the training socket received (accepted and rejected).",
       "",
       {},
       "the training source"},
      {"gpuscope_training_records_rejected_total",
       MetricType::kCounter,
       "Datagrams of the training socket rejected, by reason: malformed, oversize, no_credentials, no_hello, "
       "unknown_process (gone before it was identified), identity (claims another job or rank).",
       "",
       {"reason"},
       "the training source"},
      {"gpuscope_training_producer_drops_total",
       MetricType::kCounter,
       "Records the producers (the Python package, the NCCL plugin) could not send, as they report.",
       "",
       {},
       "the training source"},
      {"gpuscope_training_ranks",
       MetricType::kGauge,
       "Ranks on this node the training source holds state for.",
       "",
       {},
       "the training source"},
  };
  return descriptions;
}

MetricFamily SelfFamily(size_t index) {
  const MetricDescription& d = SelfDescriptions()[index];
  return MetricFamily{d.name, d.help, d.type, d.unit, {}};
}

}  // namespace

void TrainingCollector::ExportSpans(std::string_view hostname) {
  std::vector<Span> spans;
  {
    MutexLock lock(&mu_);
    spans = spans_.TakeSpans(NowNs(), hostname);
  }
  if (options_.spans != nullptr && !spans.empty()) options_.spans->Export(spans);  // not under mu_
}

Status TrainingCollector::Collect(std::vector<MetricFamily>& out) {
  Status started = Start();
  std::string hostname = options_.hostname;
  if (hostname.empty() && options_.node != nullptr) hostname = options_.node->gpus().Current()->hostname;
  ExportSpans(hostname);
  const int64_t now = NowNs();
  MutexLock lock(&mu_);
  state_.set_hostname(hostname);
  state_.AppendFamilies(now, out);
  spans_.AppendFamilies(out);
  for (const TrainingHang& hang : state_.TakeNewHangs(now)) {
    Log(LogLevel::kWarn, "training rank hung",
        {{"job", hang.job}, {"rank", std::to_string(hang.rank)}, {"seq", std::to_string(hang.seq)}});
    if (options_.on_hang) options_.on_hang(hang, hostname, now);
  }
  MetricFamily datagrams = SelfFamily(0);
  datagrams.samples.emplace_back(Labels{}, static_cast<double>(datagrams_));
  out.push_back(std::move(datagrams));
  MetricFamily rejected = SelfFamily(1);
  for (std::string_view reason :
       {"malformed", "oversize", "no_credentials", "no_hello", "unknown_process", "identity"}) {
    auto it = rejected_.find(reason);
    rejected.samples.emplace_back(Labels{{"reason", std::string(reason)}},
                                  it == rejected_.end() ? 0.0 : static_cast<double>(it->second));
  }
  out.push_back(std::move(rejected));
  MetricFamily drops = SelfFamily(2);
  drops.samples.emplace_back(Labels{}, static_cast<double>(producer_drops_));
  out.push_back(std::move(drops));
  MetricFamily ranks = SelfFamily(3);
  ranks.samples.emplace_back(Labels{}, static_cast<double>(state_.ranks()));
  out.push_back(std::move(ranks));
  return started;
}

std::vector<MetricDescription> TrainingCollector::Describe() const {
  std::vector<MetricDescription> out = TrainingState::Describe();
  for (MetricDescription& d : TrainingSpans::Describe()) out.push_back(std::move(d));
  out.insert(out.end(), SelfDescriptions().begin(), SelfDescriptions().end());
  return out;
}

}  // namespace gpuscope
