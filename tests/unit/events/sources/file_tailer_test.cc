#include "src/events/sources/file_tailer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "src/events/sources/file_source.h"

namespace gpuscope {
namespace {

namespace fs = std::filesystem;

class EventsSourcesFileTailer : public ::testing::Test {
 protected:
  EventsSourcesFileTailer() {
    std::string tmpl = (fs::temp_directory_path() / "gpuscope_tail_XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
  }
  ~EventsSourcesFileTailer() override { fs::remove_all(dir_); }

  std::string P(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  void Append(const std::string& name, const std::string& data) const {
    std::ofstream out(P(name), std::ios::binary | std::ios::app);
    out << data;
  }
  void Write(const std::string& name, const std::string& data) const {
    std::ofstream out(P(name), std::ios::binary | std::ios::trunc);
    out << data;
  }
  FileTailer::Options Opts(bool checkpoint = true) const {
    FileTailer::Options o;
    o.globs = {P("slurm-*.out")};
    if (checkpoint) o.checkpoint_path = P("tail.ckpt");
    return o;
  }
  // Runs one poll and returns the lines delivered, as "name:line".
  std::vector<std::string> Poll(FileTailer& tailer) const {
    std::vector<std::string> got;
    Status s = tailer.PollOnce([&](std::string_view path, std::string_view line) {
      got.push_back(fs::path(path).filename().string() + ":" + std::string(line));
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return got;
  }
  using V = std::vector<std::string>;

  std::string dir_;
};

TEST_F(EventsSourcesFileTailer, DeliversAppendedCompleteLinesAndHoldsAPartialOne) {
  FileTailer tailer(Opts());
  Append("slurm-1.out", "first\nsecond\npart");
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:first", "slurm-1.out:second"}));
  EXPECT_EQ(Poll(tailer), V{});
  Append("slurm-1.out", "ial\nthird\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:partial", "slurm-1.out:third"}));
  EXPECT_EQ(tailer.counters().lines, 4u);
}

TEST_F(EventsSourcesFileTailer, PicksUpNewFilesMatchingTheGlobOnly) {
  FileTailer tailer(Opts());
  Append("other.log", "ignored\n");
  Append("slurm-2.out", "b\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-2.out:b"}));
  Append("slurm-3.out", "c\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-3.out:c"}));
}

TEST_F(EventsSourcesFileTailer, FinishesTheOldInodeThenReadsTheRotatedFileFromTheStart) {
  FileTailer tailer(Opts());
  Append("slurm-1.out", "a\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:a"}));
  Append("slurm-1.out", "b\ntail-without-newline");
  fs::rename(P("slurm-1.out"), P("rotated.1"));  // out of the glob
  Append("slurm-1.out", "new1\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:b", "slurm-1.out:tail-without-newline", "slurm-1.out:new1"}));
  EXPECT_EQ(tailer.counters().rotations, 1u);
}

TEST_F(EventsSourcesFileTailer, FollowsARenameThatStaysInsideTheGlobWithoutRereading) {
  FileTailer tailer(Opts());
  Append("slurm-1.out", "a\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:a"}));
  fs::rename(P("slurm-1.out"), P("slurm-1.out.old-slurm-x.out"));
  Append("slurm-1.out.old-slurm-x.out", "b\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out.old-slurm-x.out:b"}));
}

TEST_F(EventsSourcesFileTailer, RestartsAtZeroWhenTheFileIsTruncated) {
  FileTailer tailer(Opts());
  Append("slurm-1.out", "long line one\nlong line two\n");
  EXPECT_EQ(Poll(tailer).size(), 2u);
  Write("slurm-1.out", "x\n");  // copytruncate-style: same inode, smaller
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:x"}));
  EXPECT_EQ(tailer.counters().truncations, 1u);
}

TEST_F(EventsSourcesFileTailer, ReadsAFileReplacedUnderTheTailerFromTheStart) {
  FileTailer tailer(Opts());
  Append("slurm-1.out", "old\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:old"}));
  Append("slurm-1.out", "old-tail\n");
  Write("replacement.tmp", "fresh\n");
  fs::rename(P("replacement.tmp"), P("slurm-1.out"));  // atomic replace: new inode, same path
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:old-tail", "slurm-1.out:fresh"}));
}

TEST_F(EventsSourcesFileTailer, ResumesFromTheCheckpointAfterDestruction) {
  {
    FileTailer tailer(Opts());
    Append("slurm-1.out", "a\nb\npartial");
    EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:a", "slurm-1.out:b"}));
  }
  ASSERT_TRUE(fs::exists(P("tail.ckpt")));
  EXPECT_FALSE(fs::exists(P("tail.ckpt.tmp")));
  Append("slurm-1.out", "-done\nc\n");
  FileTailer tailer(Opts());
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:partial-done", "slurm-1.out:c"}));
}

TEST_F(EventsSourcesFileTailer, WithoutACheckpointARestartRereadsFromTheStart) {
  Append("slurm-1.out", "a\n");
  {
    FileTailer tailer(Opts(false));
    EXPECT_EQ(Poll(tailer).size(), 1u);
  }
  FileTailer tailer(Opts(false));
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:a"}));
}

TEST_F(EventsSourcesFileTailer, CheckpointOfAFileThatShrankWhileDownRestartsAtZero) {
  Append("slurm-1.out", "aaaa\nbbbb\n");
  {
    FileTailer tailer(Opts());
    EXPECT_EQ(Poll(tailer).size(), 2u);
  }
  Write("slurm-1.out", "c\n");
  FileTailer tailer(Opts());
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:c"}));
  EXPECT_EQ(tailer.counters().truncations, 1u);
}

TEST_F(EventsSourcesFileTailer, ResumesARenamedFileByInodeAfterARestart) {
  Append("slurm-1.out", "a\n");
  {
    FileTailer tailer(Opts());
    EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:a"}));
  }
  Append("slurm-1.out", "b\n");
  fs::rename(P("slurm-1.out"), P("slurm-1-old.out"));  // rotated while down, still in the glob
  Append("slurm-1.out", "new\n");
  FileTailer tailer(Opts());
  EXPECT_EQ(Poll(tailer), (V{"slurm-1-old.out:b", "slurm-1.out:new"}));
}

TEST_F(EventsSourcesFileTailer, CutsHugeLinesWithAMarkerAndSkipsTheirRest) {
  FileTailer::Options o = Opts();
  o.max_line_bytes = 16;
  FileTailer tailer(o);
  Append("slurm-1.out", std::string(40, 'x'));
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:" + std::string(16, 'x') + " [truncated]"}));
  Append("slurm-1.out", std::string(40, 'y') + "\nshort\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:short"}));
  EXPECT_EQ(tailer.counters().truncated_lines, 1u);
}

TEST_F(EventsSourcesFileTailer, CutsAMultiMegabyteLineAtTheDefaultCap) {
  FileTailer tailer(Opts());
  Append("slurm-1.out", std::string(3 * 1024 * 1024, 'z') + "\nafter\n");
  V got = Poll(tailer);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].size(),
            std::string("slurm-1.out:").size() + 64 * 1024 + std::string(" [truncated]").size());
  EXPECT_EQ(got[1], "slurm-1.out:after");
}

TEST_F(EventsSourcesFileTailer, PassesInvalidUtf8AndNulThroughUntouched) {
  FileTailer tailer(Opts());
  const std::string raw("bad \xff\xfe utf8 \0 nul\r", 19);
  Append("slurm-1.out", raw + "\n");
  EXPECT_EQ(Poll(tailer), (V{"slurm-1.out:" + raw}));
}

TEST_F(EventsSourcesFileTailer, UnwritableCheckpointIsReportedButLinesStillFlow) {
  FileTailer::Options o = Opts();
  o.checkpoint_path = P("missing-dir/tail.ckpt");
  FileTailer tailer(o);
  Append("slurm-1.out", "a\n");
  int n = 0;
  Status s = tailer.PollOnce([&](std::string_view, std::string_view) { ++n; });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(n, 1);
}

// A FIFO with no writer would block open() forever and a symlink to /dev/zero would be read forever: both
// are skipped without being opened, counted once per path by reason and logged once, while the regular
// file beside them is still read.
TEST_F(EventsSourcesFileTailer, FifosDevicesAndDanglingSymlinksAreSkippedCountedAndLoggedOnce) {
  ASSERT_EQ(::mkfifo(P("slurm-fifo.out").c_str(), 0600), 0);
  fs::create_symlink("/dev/zero", P("slurm-zero.out"));
  fs::create_symlink(P("nowhere"), P("slurm-dangling.out"));
  fs::create_directory(P("slurm-dir.out"));
  Append("slurm-1.out", "real line\n");
  FileSource source(Opts());

  auto poll = [&] {
    std::vector<std::string> got;
    ::testing::internal::CaptureStderr();
    Status status = source.Poll([&](const EventLine& line) { got.emplace_back(line.text); });
    std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(status.ok()) << status.ToString();
    return std::make_pair(got, log);
  };
  auto skipped = [&](std::string_view reason) {
    std::vector<MetricFamily> families;
    source.AppendMetrics(families);
    for (const MetricFamily& f : families) {
      if (f.name != "gpuscope_event_files_skipped_total") continue;
      for (const Sample& s : f.samples) {
        if (s.labels == Labels{{"reason", std::string(reason)}}) return s.value;
      }
    }
    return -1.0;
  };

  auto [lines, log] = poll();
  EXPECT_EQ(lines, V{"real line"});
  EXPECT_NE(log.find("path=" + P("slurm-fifo.out") + " reason=fifo"), std::string::npos) << log;
  EXPECT_NE(log.find("path=" + P("slurm-zero.out") + " reason=device"), std::string::npos) << log;
  EXPECT_NE(log.find("character device (through a symlink)"), std::string::npos) << log;
  EXPECT_NE(log.find("reason=dangling_symlink"), std::string::npos) << log;
  EXPECT_NE(log.find("reason=directory"), std::string::npos) << log;
  EXPECT_EQ(skipped("fifo"), 1);
  EXPECT_EQ(skipped("device"), 1);
  EXPECT_EQ(skipped("dangling_symlink"), 1);
  EXPECT_EQ(skipped("directory"), 1);
  EXPECT_EQ(skipped("socket"), 0);  // every reason is a series from the start

  // Still there at the next poll: neither counted nor logged again; new lines of the regular file flow.
  Append("slurm-1.out", "second\n");
  auto [more, quiet] = poll();
  EXPECT_EQ(more, V{"second"});
  EXPECT_EQ(quiet.find("event file skipped"), std::string::npos) << quiet;
  EXPECT_EQ(skipped("fifo"), 1);
  EXPECT_EQ(skipped("device"), 1);

  // A path that stops being skipped and is skipped again later counts again.
  fs::remove(P("slurm-fifo.out"));
  poll();
  ASSERT_EQ(::mkfifo(P("slurm-fifo.out").c_str(), 0600), 0);
  auto [after, again] = poll();
  EXPECT_NE(again.find("reason=fifo"), std::string::npos) << again;
  EXPECT_EQ(skipped("fifo"), 2);
}

}  // namespace
}  // namespace gpuscope
