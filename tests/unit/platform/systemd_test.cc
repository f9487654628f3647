// Tests of the service manager seam: sd_notify to a real datagram socket named by NOTIFY_SOCKET, the
// journal stream check against stderr's own device and inode, and the journal fields of a log event.
#include "src/platform/systemd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace gpuscope {
namespace {

using ::testing::ElementsAre;

// A unix datagram socket bound at a fresh path, as systemd's notification socket is.
class NotifySocket {
 public:
  NotifySocket() : path_(::testing::TempDir() + "/gpuscope-notify-" + std::to_string(getpid())) {
    unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path_.copy(address.sun_path, sizeof(address.sun_path) - 1);
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    timeval timeout{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  bool bound() const { return bound_; }
  const std::string& path() const { return path_; }
  std::string Receive() {
    char buffer[4096];
    ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    return n < 0 ? std::string() : std::string(buffer, static_cast<size_t>(n));
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

TEST(ServiceManager, NotifySendsTheStateToTheSocketNamedByNotifySocket) {
  NotifySocket manager;
  ASSERT_TRUE(manager.bound());
  setenv("NOTIFY_SOCKET", manager.path().c_str(), 1);
  EXPECT_TRUE(NotifyServiceManager("READY=1\nSTATUS=serving /metrics on :9400"));
  EXPECT_EQ(manager.Receive(), "READY=1\nSTATUS=serving /metrics on :9400");
  EXPECT_TRUE(NotifyServiceManager("STOPPING=1"));
  EXPECT_EQ(manager.Receive(), "STOPPING=1");
  unsetenv("NOTIFY_SOCKET");
}

TEST(ServiceManager, NotifyWithoutAServiceManagerIsANoOp) {
  unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(NotifyServiceManager("READY=1"));
  // A socket that nobody listens on: the message is lost, the caller carries on.
  setenv("NOTIFY_SOCKET", "/nonexistent/notify", 1);
  EXPECT_FALSE(NotifyServiceManager("READY=1"));
  unsetenv("NOTIFY_SOCKET");
}

TEST(ServiceManager, StderrIsTheJournalOnlyWhenJournalStreamNamesItsDeviceAndInode) {
  struct stat st {};
  ASSERT_EQ(fstat(STDERR_FILENO, &st), 0);
  const std::string same = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  setenv("JOURNAL_STREAM", same.c_str(), 1);
  EXPECT_TRUE(StderrIsJournal());
  // Inherited by a process whose stderr the operator redirected: another inode.
  const std::string other = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
  setenv("JOURNAL_STREAM", other.c_str(), 1);
  EXPECT_FALSE(StderrIsJournal());
  setenv("JOURNAL_STREAM", "garbage", 1);
  EXPECT_FALSE(StderrIsJournal());
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(StderrIsJournal());
}

TEST(JournalFields, LevelsBecomeSyslogPrioritiesAndFieldsUpperCaseNames) {
  EXPECT_THAT(JournalFields("gpuscope-agent", LogLevel::kWarn, "nvml call failed",
                            {{"gpu", "3"}, {"call", "nvmlDeviceGetPowerUsage"}, {"queue_bytes", "12"}}),
              ElementsAre("MESSAGE=nvml call failed", "PRIORITY=4", "SYSLOG_IDENTIFIER=gpuscope-agent",
                          "GPUSCOPE_LEVEL=warn", "GPU=3", "CALL=nvmlDeviceGetPowerUsage", "QUEUE_BYTES=12"));
  EXPECT_THAT(JournalFields("x", LogLevel::kDebug, "m", {}),
              ElementsAre("MESSAGE=m", "PRIORITY=7", "SYSLOG_IDENTIFIER=x", "GPUSCOPE_LEVEL=debug"));
  EXPECT_EQ(JournalFields("x", LogLevel::kInfo, "m", {})[1], "PRIORITY=6");
  EXPECT_EQ(JournalFields("x", LogLevel::kError, "m", {})[1], "PRIORITY=3");
}

TEST(JournalFields, KeysThatWouldPoseAsJournalFieldsOrBreakItsNamingRulesAreRenamed) {
  const auto fields = JournalFields("x", LogLevel::kInfo, "m",
                                    {{"message", "a"},
                                     {"priority", "b"},
                                     {"unit", "c"},
                                     {"_pid", "d"},
                                     {"3d", "e"},
                                     {"", "f"},
                                     {"a-b.c", "g"},
                                     {std::string(80, 'k'), "h"}});
  EXPECT_THAT(std::vector<std::string>(fields.begin() + 4, fields.end()),
              ElementsAre("GPUSCOPE_MESSAGE=a", "GPUSCOPE_PRIORITY=b", "GPUSCOPE_UNIT=c", "GPUSCOPE_PID=d",
                          "GPUSCOPE_3D=e", "GPUSCOPE_FIELD=f", "A_B_C=g", std::string(64, 'K') + "=h"));
}

TEST(JournalFields, ValuesAreKeptByteForByte) {
  const auto fields =
      JournalFields("x", LogLevel::kInfo, "two\nlines", {{"raw", std::string("a\0b\xff", 4)}});
  EXPECT_EQ(fields[0], "MESSAGE=two\nlines");
  EXPECT_EQ(fields[4], std::string("RAW=a\0b\xff", 8));
}

}  // namespace
}  // namespace gpuscope
