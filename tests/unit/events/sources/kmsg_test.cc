#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/events/sources/kmsg_reader.h"
#include "src/events/sources/kmsg_record.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gpuscope_kmsg_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

void Append(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << data;
}

KmsgReader::Options KOpts(const std::string& path, const std::string& checkpoint = "") {
  KmsgReader::Options o;
  o.path = path;
  o.checkpoint_path = checkpoint;
  o.boot_id = "boot";
  return o;
}

std::string Rec(uint64_t seq, const std::string& msg) {
  return "6," + std::to_string(seq) + ",1000,-;" + msg + "\n";
}

TEST(EventsSourcesKmsgRecord, ParsesHeaderMessageAndDictionary) {
  auto r = ParseKmsgRecord(
      "6,1234,5678901,-;NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n"
      " SUBSYSTEM=pci\n DEVICE=+pci:0000:18:00.0\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->priority, 6);
  EXPECT_EQ(r->facility, 0);
  EXPECT_EQ(r->sequence, 1234u);
  EXPECT_EQ(r->timestamp_usec, 5678901u);
  EXPECT_EQ(r->flags, '-');
  EXPECT_EQ(r->message, "NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.");
  ASSERT_EQ(r->dictionary.size(), 2u);
  EXPECT_EQ(r->Find("SUBSYSTEM"), "pci");
  EXPECT_EQ(r->Find("DEVICE"), "+pci:0000:18:00.0");
  EXPECT_FALSE(r->Find("MISSING").has_value());
}

TEST(EventsSourcesKmsgRecord, SplitsPrefixIntoFacilityAndPriority) {
  auto r = ParseKmsgRecord("30,7,1,c,extra;systemd message");  // facility 3 (daemon), level 6
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->facility, 3);
  EXPECT_EQ(r->priority, 6);
  EXPECT_EQ(r->flags, 'c');
  EXPECT_EQ(r->message, "systemd message");
}

TEST(EventsSourcesKmsgRecord, RejectsMalformedHeaders) {
  EXPECT_FALSE(ParseKmsgRecord("no semicolon here").has_value());
  EXPECT_FALSE(ParseKmsgRecord("6,abc,1,-;msg").has_value());
  EXPECT_FALSE(ParseKmsgRecord("6,1;msg").has_value());
  EXPECT_FALSE(ParseKmsgRecord("6,99999999999999999999999,1,-;msg").has_value());
  EXPECT_FALSE(ParseKmsgRecord("").has_value());
}

TEST(EventsSourcesKmsgRecord, RecordLengthWaitsForDictionaryLines) {
  std::string two = Rec(1, "a") + " K=V\n" + Rec(2, "b");
  EXPECT_EQ(KmsgRecordLength(two, false), Rec(1, "a").size() + 5);
  EXPECT_EQ(KmsgRecordLength(Rec(2, "b"), false), 0u);
  EXPECT_EQ(KmsgRecordLength(Rec(2, "b"), true), Rec(2, "b").size());
  EXPECT_EQ(KmsgRecordLength("6,1,1,-;no newline", true), 0u);
}

TEST(EventsSourcesKmsgReader, ReadsRecordsFromAFileAndCountsGaps) {
  TempDir dir;
  Append(dir / "kmsg", Rec(1, "one") + Rec(2, "two") + " SUBSYSTEM=pci\n" + Rec(5, "five"));
  KmsgReader reader(KOpts(dir / "kmsg"));
  std::vector<std::string> got;
  ASSERT_TRUE(reader.PollOnce([&](const KmsgRecord& r) { got.push_back(r.message); }).ok());
  EXPECT_EQ(got, (std::vector<std::string>{"one", "two", "five"}));
  EXPECT_EQ(reader.counters().gaps, 1u);
  EXPECT_EQ(reader.counters().missed, 2u);
  EXPECT_EQ(reader.last_sequence(), 5u);
}

TEST(EventsSourcesKmsgReader, ResumesAfterRestartBySequenceNumber) {
  TempDir dir;
  const std::string ckpt = dir / "kmsg.ckpt";
  Append(dir / "kmsg", Rec(10, "a") + Rec(11, "b"));
  {
    KmsgReader reader(KOpts(dir / "kmsg", ckpt));
    std::vector<std::string> got;
    ASSERT_TRUE(reader.PollOnce([&](const KmsgRecord& r) { got.push_back(r.message); }).ok());
    EXPECT_EQ(got.size(), 2u);
  }
  Append(dir / "kmsg", Rec(12, "c"));
  KmsgReader reader(KOpts(dir / "kmsg", ckpt));
  std::vector<std::string> got;
  ASSERT_TRUE(reader.PollOnce([&](const KmsgRecord& r) { got.push_back(r.message); }).ok());
  EXPECT_EQ(got, (std::vector<std::string>{"c"}));
  EXPECT_EQ(reader.counters().skipped, 2u);
  EXPECT_EQ(reader.counters().gaps, 0u);
}

TEST(EventsSourcesKmsgReader, IgnoresCheckpointFromAnotherBoot) {
  TempDir dir;
  const std::string ckpt = dir / "kmsg.ckpt";
  Append(ckpt, "old-boot 500\n");
  Append(dir / "kmsg", Rec(1, "a"));
  KmsgReader::Options options = KOpts(dir / "kmsg", ckpt);
  options.boot_id = "new-boot";
  KmsgReader reader(options);
  int n = 0;
  ASSERT_TRUE(reader.PollOnce([&](const KmsgRecord&) { ++n; }).ok());
  EXPECT_EQ(n, 1);
}

TEST(EventsSourcesKmsgReader, HoldsAnIncompleteRecordFromAFifoUntilItCompletes) {
  TempDir dir;
  const std::string fifo = dir / "kmsg.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  KmsgReader reader(KOpts(fifo));
  ASSERT_TRUE(reader.Open().ok());  // O_NONBLOCK open of a FIFO succeeds without a writer
  int wfd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  ASSERT_GE(wfd, 0);
  std::string first = Rec(1, "a") + Rec(2, "b");
  ASSERT_EQ(::write(wfd, first.data(), first.size()), static_cast<ssize_t>(first.size()));
  std::vector<std::string> got;
  auto cb = [&](const KmsgRecord& r) { got.push_back(r.message); };
  ASSERT_TRUE(reader.PollOnce(cb).ok());
  EXPECT_EQ(got, (std::vector<std::string>{"a"}));  // "b" may still get dictionary lines
  std::string more = " K=V\n" + Rec(3, "c");
  ASSERT_EQ(::write(wfd, more.data(), more.size()), static_cast<ssize_t>(more.size()));
  ASSERT_TRUE(reader.PollOnce(cb).ok());
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b"}));
  ::close(wfd);  // writer gone: end of file completes the tail
  ASSERT_TRUE(reader.PollOnce(cb).ok());
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b", "c"}));
}

// Simulates the real device: one record per read(), EPIPE when the ring buffer overran us.
TEST(EventsSourcesKmsgReader, SurvivesRingBufferOverrunsLikeTheRealDevice) {
  TempDir dir;
  Append(dir / "kmsg", "");
  std::deque<std::string> script = {Rec(1, "a"), "EPIPE", Rec(7, "g"), Rec(8, "h"), "EAGAIN"};
  KmsgReader::Options options = KOpts(dir / "kmsg");
  options.one_record_per_read = true;
  options.read_fn = [&](int, void* buf, size_t len) -> ssize_t {
    if (script.empty()) return 0;
    std::string next = script.front();
    script.pop_front();
    if (next == "EPIPE" || next == "EAGAIN") {
      errno = next == "EPIPE" ? EPIPE : EAGAIN;
      return -1;
    }
    EXPECT_LE(next.size(), len);
    std::memcpy(buf, next.data(), next.size());
    return static_cast<ssize_t>(next.size());
  };
  KmsgReader reader(options);
  std::vector<uint64_t> seqs;
  ASSERT_TRUE(reader.PollOnce([&](const KmsgRecord& r) { seqs.push_back(r.sequence); }).ok());
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 7, 8}));
  EXPECT_EQ(reader.counters().overruns, 1u);
  EXPECT_EQ(reader.counters().gaps, 1u);
  EXPECT_EQ(reader.counters().missed, 5u);
}

TEST(EventsSourcesKmsgReader, CountsUnparsableRecordsAndKeepsGoing) {
  TempDir dir;
  Append(dir / "kmsg", std::string("garbage\0\xff line\n", 15) + Rec(3, "ok"));
  KmsgReader reader(KOpts(dir / "kmsg"));
  std::vector<std::string> got;
  ASSERT_TRUE(reader.PollOnce([&](const KmsgRecord& r) { got.push_back(r.message); }).ok());
  EXPECT_EQ(got, (std::vector<std::string>{"ok"}));
  EXPECT_EQ(reader.counters().parse_errors, 1u);
}

// Smoke test against the real character device where the sandbox lets us read it.
TEST(EventsSourcesKmsgReader, ReadsTheRealDeviceOneRecordPerRead) {
  KmsgReader reader(KOpts("/dev/kmsg"));
  if (!reader.Open().ok()) GTEST_SKIP() << "/dev/kmsg not readable here";
  uint64_t previous = 0;
  bool first = true;
  bool ordered = true;
  ASSERT_TRUE(reader
                  .PollOnce([&](const KmsgRecord& r) {
                    if (!first && r.sequence <= previous) ordered = false;
                    previous = r.sequence;
                    first = false;
                  })
                  .ok());
  EXPECT_TRUE(ordered);
  EXPECT_EQ(reader.counters().parse_errors, 0u);
}

TEST(EventsSourcesKmsgReader, OpenFailsForAMissingDevice) {
  KmsgReader reader(KOpts("/nonexistent/kmsg"));
  EXPECT_FALSE(reader.Open().ok());
}

}  // namespace
}  // namespace gpuscope
