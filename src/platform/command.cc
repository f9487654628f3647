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

}  // namespace

CommandResult RunCommandWithTimeout(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                    size_t max_output_bytes) {
  CommandResult result;
  if (argv.empty()) {
    result.status = Status::InvalidArgument("empty command");
    return result;
  }
  // Everything the child needs is built before fork(): after it, only async-signal-safe calls.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.status = Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
    return result;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.status = Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const Clock::time_point deadline = Clock::now() + timeout;
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
    result.status = Status::Unavailable(std::string("fork: ") + std::strerror(errno));
    close(out_pipe[0]);
    close(err_pipe[0]);
    return result;
  }
  setpgid(pid, pid);  // also from the parent: no race with the kill below

  bool timed_out = false;
  bool too_large = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
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
        if (result.output.size() > max_output_bytes) too_large = true;
      } else if (result.error.size() < kMaxErrorBytes) {
        result.error.append(buffer, std::min(static_cast<size_t>(n), kMaxErrorBytes - result.error.size()));
      }
    }
    if (too_large) break;
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int wstatus = 0;
  if (timed_out || too_large) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  } else {
    // Both pipes are closed: the child has exited or is about to. A child that closed its outputs and
    // kept running is killed at the deadline.
    while (true) {
      pid_t done = waitpid(pid, &wstatus, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR)) break;
      if (Clock::now() >= deadline) {
        timed_out = true;
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      usleep(1000);
    }
  }
  const std::string& command = argv[0];
  if (timed_out) {
    result.status =
        Status::DeadlineExceeded(command + " killed after " + std::to_string(timeout.count()) + " ms");
  } else if (too_large) {
    result.status =
        Status::Unavailable(command + " printed more than " + std::to_string(max_output_bytes) + " bytes");
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
    result.status = Status::Ok();
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127) {
    result.status = Status::Unavailable(command + " could not be run (not found?)");
  } else {
    std::string how = WIFEXITED(wstatus) ? "exited " + std::to_string(WEXITSTATUS(wstatus))
                                         : "killed by signal " + std::to_string(WTERMSIG(wstatus));
    std::string why = FirstLine(result.error);
    result.status = Status::Unavailable(command + " " + how + (why.empty() ? "" : ": " + why));
  }
  return result;
}

}  // namespace gpuscope
