// Tests of the journal source against real journal files: each test writes entries in the journal
// export format and has systemd-journal-remote (the systemd tool that turns exported entries into
// .journal files) write them into a directory the reader watches. No journald is needed.
#include "src/events/sources/journal_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/platform/command.h"
#include "src/platform/file.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

using Fields = std::vector<std::pair<std::string, std::string>>;
using V = std::vector<std::string>;

constexpr int64_t kBaseUsec = 1767323045000000;  // 2026-01-02T03:04:05Z
constexpr char kBootId[] = "5f1e0c9a2b8d4e6f9a0b1c2d3e4f5a6b";

std::string JournalRemote() {
  for (const char* path :
       {"/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// One entry in the journal export format. Entry n gets realtime kBaseUsec + n s and monotonic n s of
// one boot, so the journal orders entries by n across files. Values with bytes outside printable
// ASCII use the format's binary form (name, newline, little-endian 64-bit length, bytes, newline).
std::string ExportEntry(int n, const Fields& fields) {
  std::string out = "__REALTIME_TIMESTAMP=" + std::to_string(kBaseUsec + int64_t{n} * 1000000) + "\n" +
                    "__MONOTONIC_TIMESTAMP=" + std::to_string(int64_t{n} * 1000000) + "\n" +
                    "_BOOT_ID=" + kBootId + "\n";
  for (const auto& [name, value] : fields) {
    bool text = true;
    for (unsigned char c : value) text = text && c >= 0x20 && c < 0x7f;
    if (text) {
      out += name + "=" + value + "\n";
      continue;
    }
    out += name + "\n";
    uint64_t size = value.size();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((size >> (8 * i)) & 0xff));
    out += value + "\n";
  }
  return out + "\n";
}

// Entries first..last with MESSAGE=m<n>.
std::string Messages(int first, int last) {
  std::string out;
  for (int n = first; n <= last; ++n) out += ExportEntry(n, {{"MESSAGE", "m" + std::to_string(n)}});
  return out;
}

class EventsSourcesJournal : public ::testing::Test {
 protected:
  EventsSourcesJournal() {
    std::string tmpl = (fs::temp_directory_path() / "gpuscope_journal_XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    fs::create_directory(JournalDir());
  }
  ~EventsSourcesJournal() override { fs::remove_all(dir_); }

  void SetUp() override {
    if (JournalRemote().empty()) {
      GTEST_SKIP() << "systemd-journal-remote not installed (scripts/install-deps.sh installs it)";
    }
  }

  std::string P(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::string JournalDir() const { return P("journal"); }
  std::string JournalFile(const std::string& name) const { return JournalDir() + "/" + name; }

  // Appends the exported entries to journal file `name` (created if missing) in the journal directory.
  void Write(const std::string& name, const std::string& exported) const {
    std::string input = P("input.export");
    ASSERT_TRUE(WriteFileAtomically(input, exported, {.sync = false}).ok());
    CommandResult run = RunCommandWithTimeout({JournalRemote(), "--output=" + JournalFile(name), input},
                                              std::chrono::seconds(60), 1 << 20);
    ASSERT_TRUE(run.status.ok()) << run.status.ToString() << ": " << run.error;
  }

  JournalReader::Options Opts(bool checkpoint = true) const {
    JournalReader::Options o;
    o.directory = JournalDir();
    if (checkpoint) o.checkpoint_path = P("journal.cursor");
    return o;
  }

  // Runs one poll and returns the messages delivered.
  static V Poll(JournalReader& reader, std::vector<JournalEntry>* entries = nullptr) {
    V got;
    Status s = reader.PollOnce([&](const JournalEntry& entry) {
      got.push_back(entry.message);
      if (entries) entries->push_back(entry);
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return got;
  }

  std::string dir_;
};

TEST_F(EventsSourcesJournal, DeliversMessageTimeIdentifierUnitPriorityTransportAndHostOfRealEntries) {
  std::string fixture = ReadWholeFile(GPUSCOPE_JOURNAL_FIXTURE).value_or("");
  ASSERT_FALSE(fixture.empty()) << GPUSCOPE_JOURNAL_FIXTURE;
  std::istringstream in(fixture);
  std::string exported, line;
  while (std::getline(in, line)) {
    if (!line.starts_with("#")) exported += line + "\n";
  }
  Write("system.journal", exported);

  JournalReader reader(Opts());
  std::vector<JournalEntry> entries;
  Poll(reader, &entries);
  ASSERT_EQ(entries.size(), 3u);

  EXPECT_EQ(entries[0].message,
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.");
  EXPECT_EQ(entries[0].realtime_usec, 1767323045000000);
  EXPECT_EQ(entries[0].identifier, "kernel");
  EXPECT_EQ(entries[0].unit, "");
  EXPECT_EQ(entries[0].priority, 4);
  EXPECT_TRUE(entries[0].from_kernel);
  EXPECT_EQ(entries[0].hostname, "gpu-node-17");

  EXPECT_EQ(entries[1].message,
            "error: *** JOB 42 ON gpu-node-17 CANCELLED AT 2026-01-02T03:04:06 DUE TO TIME LIMIT ***");
  EXPECT_EQ(entries[1].realtime_usec, 1767323046000000);
  EXPECT_EQ(entries[1].identifier, "slurmstepd");
  EXPECT_EQ(entries[1].unit, "slurmd.service");
  EXPECT_EQ(entries[1].priority, 6);
  EXPECT_FALSE(entries[1].from_kernel);

  EXPECT_EQ(entries[2].message, "all 8 GPUs healthy");
  EXPECT_EQ(entries[2].priority, -1);  // "notice" is not a syslog priority number
  EXPECT_EQ(entries[2].identifier, "gpu-healthcheck");
  EXPECT_FALSE(entries[2].from_kernel);

  EXPECT_EQ(reader.counters().entries, 3u);
  EXPECT_EQ(reader.counters().read_errors, 0u);
}

TEST_F(EventsSourcesJournal, FollowsEntriesAppendedToAnOpenFile) {
  Write("system.journal", Messages(1, 2));
  JournalReader reader(Opts());
  EXPECT_EQ(Poll(reader), (V{"m1", "m2"}));
  EXPECT_EQ(Poll(reader), V{});
  Write("system.journal", Messages(3, 4));
  EXPECT_EQ(Poll(reader), (V{"m3", "m4"}));
}

TEST_F(EventsSourcesJournal, ResumesAfterTheCheckpointedEntryWithoutRepeatingIt) {
  Write("system.journal", Messages(1, 3));
  {
    JournalReader reader(Opts());
    EXPECT_EQ(Poll(reader), (V{"m1", "m2", "m3"}));
    EXPECT_EQ(ReadWholeFile(P("journal.cursor")).value_or(""), reader.cursor() + "\n");
  }
  Write("system.journal", Messages(4, 5));
  JournalReader restarted(Opts());
  ASSERT_TRUE(restarted.Open().ok());
  EXPECT_EQ(Poll(restarted), (V{"m4", "m5"}));
  EXPECT_EQ(restarted.counters().cursor_not_found, 0u);

  JournalReader again(Opts());  // nothing new: nothing delivered, not even the checkpointed entry
  EXPECT_EQ(Poll(again), V{});
}

TEST_F(EventsSourcesJournal, WithoutACheckpointEveryStartBeginsAtTheHead) {
  Write("system.journal", Messages(1, 2));
  {
    JournalReader reader(Opts(/*checkpoint=*/false));
    EXPECT_EQ(Poll(reader), (V{"m1", "m2"}));
  }
  JournalReader restarted(Opts(/*checkpoint=*/false));
  EXPECT_EQ(Poll(restarted), (V{"m1", "m2"}));
}

TEST_F(EventsSourcesJournal, TailStartSkipsHistoryAndCheckpointsItsPositionSoARestartMissesNothing) {
  Write("system.journal", Messages(1, 3));
  JournalReader::Options opts = Opts();
  opts.start = JournalReader::Start::kTail;
  {
    JournalReader reader(opts);
    EXPECT_EQ(Poll(reader), V{});
    Write("system.journal", Messages(4, 4));
    EXPECT_EQ(Poll(reader), (V{"m4"}));
  }
  Write("system.journal", Messages(5, 5));  // written while the agent is down
  JournalReader restarted(opts);
  EXPECT_EQ(Poll(restarted), (V{"m5"}));
}

// The running kernel's boot id, as the journal writes it (no dashes).
std::string ThisBoot() {
  std::string id = ReadWholeFile("/proc/sys/kernel/random/boot_id").value_or("");
  std::string out;
  for (char c : id) {
    if (c != '-' && c != '\n') out.push_back(c);
  }
  return out;
}

// Entries first..last with MESSAGE=b<n> of the boot `boot`, after the fixed-boot ones in time.
std::string BootMessages(int first, int last, const std::string& boot) {
  std::string out = Messages(first, last);
  for (size_t at = out.find(kBootId); at != std::string::npos; at = out.find(kBootId, at)) {
    out.replace(at, std::string_view(kBootId).size(), boot);
  }
  for (int n = first; n <= last; ++n) {
    const std::string m = "MESSAGE=m" + std::to_string(n) + "\n";
    out.replace(out.find(m), m.size(), "MESSAGE=b" + std::to_string(n) + "\n");
  }
  return out;
}

TEST_F(EventsSourcesJournal, ThisBootStartSkipsEarlierBootsAndReadsThisOnesEntriesAsTheyCome) {
  const std::string boot = ThisBoot();
  ASSERT_EQ(boot.size(), 32u);
  Write("system.journal", Messages(1, 3));  // an earlier boot's, months ago on a real node
  JournalReader::Options opts = Opts();
  opts.start = JournalReader::Start::kThisBoot;
  {
    JournalReader reader(opts);
    EXPECT_EQ(Poll(reader), V{});  // nothing of this boot yet
    Write("system.journal", BootMessages(4, 5, boot));
    EXPECT_EQ(Poll(reader), (V{"b4", "b5"}));
  }
  Write("system.journal", BootMessages(6, 6, boot));  // while the agent is down
  JournalReader restarted(opts);
  EXPECT_EQ(Poll(restarted), (V{"b6"}));  // from the checkpoint, not from this boot's start again
}

TEST_F(EventsSourcesJournal, ThisBootStartOnAJournalThatHasItReadsItFromItsFirstEntry) {
  Write("system.journal", Messages(1, 2) + BootMessages(3, 4, ThisBoot()));
  JournalReader::Options opts = Opts(/*checkpoint=*/false);
  opts.start = JournalReader::Start::kThisBoot;
  JournalReader reader(opts);
  EXPECT_EQ(Poll(reader), (V{"b3", "b4"}));
}

TEST_F(EventsSourcesJournal, TailStartOnAnEmptyJournalDeliversTheFirstFileCompletely) {
  JournalReader::Options opts = Opts();
  opts.start = JournalReader::Start::kTail;
  JournalReader reader(opts);
  EXPECT_EQ(Poll(reader), V{});
  Write("system.journal", Messages(1, 2));
  EXPECT_EQ(Poll(reader), (V{"m1", "m2"}));
}

TEST_F(EventsSourcesJournal, MatchesSelectEntriesSatisfyingAnyOfThem) {
  Write("system.journal",
        ExportEntry(1, {{"MESSAGE", "kernel line"}, {"_TRANSPORT", "kernel"}}) +
            ExportEntry(2, {{"MESSAGE", "cron line"}, {"_SYSTEMD_UNIT", "cron.service"}}) +
            ExportEntry(3, {{"MESSAGE", "slurmd line"}, {"_SYSTEMD_UNIT", "slurmd.service"}}) +
            ExportEntry(4, {{"MESSAGE", "stdout line"}, {"_TRANSPORT", "stdout"}}));
  JournalReader::Options opts = Opts();
  opts.matches = {"_TRANSPORT=kernel", "_SYSTEMD_UNIT=slurmd.service"};
  JournalReader reader(opts);
  EXPECT_EQ(Poll(reader), (V{"kernel line", "slurmd line"}));

  Write("system.journal",
        ExportEntry(5, {{"MESSAGE", "late kernel line"}, {"_TRANSPORT", "kernel"}}) +
            ExportEntry(6, {{"MESSAGE", "late cron line"}, {"_SYSTEMD_UNIT", "cron.service"}}));
  EXPECT_EQ(Poll(reader), (V{"late kernel line"}));
}

TEST_F(EventsSourcesJournal, AMalformedMatchIsAnInvalidArgument) {
  JournalReader::Options opts = Opts();
  opts.matches = {"_TRANSPORT=kernel", "no equals sign"};
  JournalReader reader(opts);
  Status s = reader.Open();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("no equals sign"), std::string::npos) << s.message();
}

TEST_F(EventsSourcesJournal, CutsAHugeMessageAtTheLimitWithAMarkerAndCountsIt) {
  std::string huge(1 << 20, 'x');  // 1 MiB, stored compressed by journal-remote
  for (size_t i = 0; i < huge.size(); i += 997) huge[i] = static_cast<char>('a' + i % 26);
  std::string exact(4096, 'y');
  Write("system.journal",
        ExportEntry(1, {{"MESSAGE", huge}}) + ExportEntry(2, {{"MESSAGE", exact}}) + Messages(3, 3));
  JournalReader::Options opts = Opts();
  opts.max_line_bytes = 4096;
  JournalReader reader(opts);
  EXPECT_EQ(Poll(reader), (V{huge.substr(0, 4096) + " [truncated]", exact, "m3"}));
  EXPECT_EQ(reader.counters().truncated_messages, 1u);
  EXPECT_EQ(reader.counters().entries, 3u);
}

TEST_F(EventsSourcesJournal, PassesBinaryMessageBytesThroughUntouched) {
  const std::string binary("NVRM: \xff\xfe bad utf8 \xc3\x28 nul\0inside\nsecond line", 43);
  Write("system.journal", ExportEntry(1, {{"MESSAGE", binary}}));
  JournalReader reader(Opts());
  EXPECT_EQ(Poll(reader), (V{binary}));
  EXPECT_EQ(reader.counters().truncated_messages, 0u);
}

TEST_F(EventsSourcesJournal, SkipsAndCountsEntriesWithoutAMessage) {
  Write("system.journal", ExportEntry(1, {{"CODE_FILE", "x.c"}}) + Messages(2, 2));
  JournalReader reader(Opts());
  EXPECT_EQ(Poll(reader), (V{"m2"}));
  EXPECT_EQ(reader.counters().without_message, 1u);
}

TEST_F(EventsSourcesJournal, ReadsTheNewFileAfterRotation) {
  Write("system.journal", Messages(1, 2));
  JournalReader reader(Opts());
  EXPECT_EQ(Poll(reader), (V{"m1", "m2"}));
  // journald rotation: the active file is archived under a new name and a new active file started.
  fs::rename(JournalFile("system.journal"), JournalFile("system@0123-0001.journal"));
  Write("system.journal", Messages(3, 4));
  EXPECT_EQ(Poll(reader), (V{"m3", "m4"}));
  EXPECT_GE(reader.counters().journal_changes, 1u);

  Write("other.journal", Messages(5, 5));  // a second file appearing beside the first
  EXPECT_EQ(Poll(reader), (V{"m5"}));
}

TEST_F(EventsSourcesJournal, WhenTheCheckpointedEntryWasVacuumedResumesAtTheOldestRemainingOneAndCountsIt) {
  Write("system@0123-0001.journal", Messages(1, 3));
  {
    JournalReader reader(Opts());
    EXPECT_EQ(Poll(reader), (V{"m1", "m2", "m3"}));
  }
  // While the agent is down: rotation, more entries, then a vacuum removes the archived file.
  Write("system.journal", Messages(4, 6));
  fs::remove(JournalFile("system@0123-0001.journal"));
  JournalReader restarted(Opts());
  EXPECT_EQ(Poll(restarted), (V{"m4", "m5", "m6"}));
  EXPECT_EQ(restarted.counters().cursor_not_found, 1u);
}

TEST_F(EventsSourcesJournal, AnUnreadableCheckpointIsCountedAndTheReaderStartsAtTheHead) {
  Write("system.journal", Messages(1, 2));
  ASSERT_TRUE(WriteFileAtomically(P("journal.cursor"), "not a cursor\n", {.sync = false}).ok());
  JournalReader reader(Opts());
  EXPECT_EQ(Poll(reader), (V{"m1", "m2"}));
  EXPECT_EQ(reader.counters().invalid_checkpoints, 1u);
  EXPECT_EQ(ReadWholeFile(P("journal.cursor")).value_or(""), reader.cursor() + "\n");
}

TEST_F(EventsSourcesJournal, DeliversABacklogInSlicesOfMaxEntriesPerPoll) {
  Write("system.journal", Messages(1, 5));
  JournalReader::Options opts = Opts();
  opts.max_entries_per_poll = 2;
  {
    JournalReader reader(opts);
    EXPECT_EQ(Poll(reader), (V{"m1", "m2"}));
    EXPECT_EQ(Poll(reader), (V{"m3", "m4"}));
  }
  JournalReader restarted(opts);  // the checkpoint followed each slice
  EXPECT_EQ(Poll(restarted), (V{"m5"}));
}

TEST_F(EventsSourcesJournal, AMissingDirectoryIsUnavailableAndNamesIt) {
  JournalReader::Options opts = Opts();
  opts.directory = P("no-such-dir");
  JournalReader reader(opts);
  Status s = reader.Open();
  EXPECT_EQ(s.code(), Status::Code::kUnavailable);
  EXPECT_EQ(s.message(), "journal directory " + opts.directory + ": No such file or directory");
  Status polled = reader.PollOnce([](const JournalEntry&) { ADD_FAILURE() << "no entry expected"; });
  EXPECT_EQ(polled.code(), Status::Code::kUnavailable);

  fs::create_directory(opts.directory);  // the directory appears later: the next poll opens it
  EXPECT_TRUE(reader.PollOnce([](const JournalEntry&) {}).ok());
}

}  // namespace
}  // namespace gpuscope
