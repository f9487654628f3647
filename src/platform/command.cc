#include "src/platform/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace gpuscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxErrorBytes = 4096;

std::string FirstLine(std::string_view text) {
  size_t nl = text.find('\n');
  return std::string(text.substr(0, nl == std::string_view::npos ? text.size() : nl));
}

// A started child: its pid (also its process group) and the read ends of its stdout and stderr pipes.
struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
};

// Starts argv in its own process group with stdin from /dev/null and stdout/stderr on pipes. On failure
// (pipe, fork) nothing is left open and the status says why.
Status SpawnChild(const std::vector<std::string>& argv, Child& child) {
  // Everything the child needs is built before fork(): after it, only async-signal-safe calls.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    Status status = Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
    close(out_pipe[0]);
    close(out_pipe[1]);
    return status;
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so a timeout also kills what it started
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (devnull >= 0) close(devnull);
  if (pid < 0) {
    Status status = Status::Unavailable(std::string("fork: ") + std::strerror(errno));
    close(out_pipe[0]);
    close(err_pipe[0]);
    return status;
  }
  setpgid(pid, pid);  // also from the parent: no race with the kill below
  child = Child{pid, out_pipe[0], err_pipe[0]};
  return Status::Ok();
}

// Why ReadOutputs stopped.
enum class OutputEnd { kClosed, kDeadline, kTooLarge };

// Reads the child's stdout into result.output and the first kMaxErrorBytes of its stderr into
// result.error until both pipes close (or poll fails), the deadline passes, or stdout exceeds
// max_output_bytes. Closes both pipes.
OutputEnd ReadOutputs(const Child& child, Clock::time_point deadline, size_t max_output_bytes,
                      CommandResult& result) {
  OutputEnd end = OutputEnd::kClosed;
  pollfd fds[2] = {{child.out_fd, POLLIN, 0}, {child.err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      end = OutputEnd::kDeadline;
      break;
    }
    int ready = poll(fds, 2, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      if (i == 0) {
        result.output.append(buffer, static_cast<size_t>(n));
        if (result.output.size() > max_output_bytes) end = OutputEnd::kTooLarge;
      } else if (result.error.size() < kMaxErrorBytes) {
        result.error.append(buffer, std::min(static_cast<size_t>(n), kMaxErrorBytes - result.error.size()));
      }
    }
    if (end == OutputEnd::kTooLarge) break;
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  return end;
}

// Kills the child's whole process group and reaps the child; its wait status goes to `wstatus`.
void KillAndReap(pid_t pid, int& wstatus) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
}

// Reaps a child whose pipes are closed: it has exited or is about to. A child that closed its outputs
// and kept running is killed at the deadline. Returns false when it had to be killed.
bool ReapBeforeDeadline(pid_t pid, Clock::time_point deadline, int& wstatus) {
  while (true) {
    pid_t done = waitpid(pid, &wstatus, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return true;
    if (Clock::now() >= deadline) {
      KillAndReap(pid, wstatus);
      return false;
    }
    usleep(1000);
  }
}

// The status of a run that ended on its own: Ok on exit 0, else what happened with stderr's first line.
Status ExitStatus(const std::string& command, int wstatus, std::string_view error) {
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return Status::Ok();
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {
    return Status::Unavailable(command + " could not be run (not found?)");
  }
  std::string how = WIFEXITED(wstatus) ? "exited " + std::to_string(WEXITSTATUS(wstatus))
                                       : "killed by signal " + std::to_string(WTERMSIG(wstatus));
  std::string why = FirstLine(error);
  return Status::Unavailable(command + " " + how + (why.empty() ? "" : ": " + why));
}

}  // namespace

CommandResult RunCommandWithTimeout(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                    size_t max_output_bytes) {
  CommandResult result;
  if (argv.empty()) {
    result.status = Status::InvalidArgument("empty command");
    return result;
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  Child child;
  result.status = SpawnChild(argv, child);
  if (!result.status.ok()) return result;

  const OutputEnd end = ReadOutputs(child, deadline, max_output_bytes, result);
  int wstatus = 0;
  bool timed_out = end == OutputEnd::kDeadline;
  if (end == OutputEnd::kClosed) {
    timed_out = !ReapBeforeDeadline(child.pid, deadline, wstatus);
  } else {
    KillAndReap(child.pid, wstatus);
  }
  const std::string& command = argv[0];
  if (timed_out) {
    result.status =
        Status::DeadlineExceeded(command + " killed after " + std::to_string(timeout.count()) + " ms");
  } else if (end == OutputEnd::kTooLarge) {
    result.status =
        Status::Unavailable(command + " printed more than " + std::to_string(max_output_bytes) + " bytes");
  } else {
    result.status = ExitStatus(command, wstatus, result.error);
  }
  return result;
}

}  // namespace gpuscope
