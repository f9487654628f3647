#include "src/core/label_cache.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "src/core/metric.h"

namespace gpuscope {
namespace {

const Labels kGpu{{"gpu", "0"}, {"UUID", "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}};

TEST(Labels, CopiesShareTheirPairsUntilOneIsChanged) {
  Labels a = kGpu;
  Labels b = a;
  EXPECT_EQ(a.identity(), kGpu.identity());
  EXPECT_EQ(b.identity(), kGpu.identity());
  b.emplace_back("link", "3");
  EXPECT_NE(b.identity(), kGpu.identity());
  EXPECT_EQ(a.size(), 2u);  // the shared pairs did not change under a or kGpu
  EXPECT_EQ(kGpu.size(), 2u);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b.back(), (Labels::Pair{"link", "3"}));
  EXPECT_EQ(b[0], kGpu[0]);
}

TEST(Labels, AnUnsharedSetIsChangedInPlace) {
  Labels a{{"gpu", "1"}};
  const void* before = a.identity();
  a.push_back({"device", "nvidia1"});
  a.Mutable()[0].second = "2";
  EXPECT_EQ(a.identity(), before);
  EXPECT_EQ(a, (Labels{{"gpu", "2"}, {"device", "nvidia1"}}));
}

TEST(Labels, AnExtensionReadsTheBasePairsFromTheBaseStorage) {
  const Labels link = Labels::Extend(kGpu, {{"link", "3"}, {"counter", "crc_flit"}});
  ASSERT_EQ(link.size(), 4u);
  EXPECT_EQ(&link[0], &kGpu[0]);  // not a copy
  EXPECT_EQ(link.at(3), (Labels::Pair{"counter", "crc_flit"}));
  EXPECT_THROW(link.at(4), std::out_of_range);
  std::vector<std::string> names;
  for (const auto& [name, value] : link) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"gpu", "UUID", "link", "counter"}));
  EXPECT_EQ(link, (Labels{{"gpu", "0"},
                          {"UUID", "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"},
                          {"link", "3"},
                          {"counter", "crc_flit"}}));
}

TEST(Labels, ChangingASharedSetManyTimesKeepsEveryPairInOrder) {
  Labels labels = kGpu;
  std::vector<Labels> kept;  // every step stays shared, so each change extends or flattens
  for (int i = 0; i < 20; ++i) {
    kept.push_back(labels);
    labels.emplace_back("k" + std::to_string(i), std::to_string(i));
  }
  ASSERT_EQ(labels.size(), 22u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(labels[2 + i].second, std::to_string(i));
  EXPECT_EQ(kept[5].size(), 7u);  // earlier sets did not change
  std::vector<Labels::Pair>& flat = labels.Mutable();
  flat[0].second = "9";
  EXPECT_EQ(labels[0].second, "9");
  EXPECT_EQ(kGpu[0].second, "0");
}

TEST(Labels, EmptySetsCompareEqualAndReadAsEmpty) {
  Labels none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_EQ(none, Labels(std::vector<Labels::Pair>{}));
  EXPECT_NE(none, kGpu);
  EXPECT_TRUE(none < kGpu);
}

TEST(LabelSetCache, SameArgumentsGiveTheSameSharedSetCycleAfterCycle) {
  LabelSetCache cache;
  const Labels& first = cache.With(kGpu, {{"link", "3"}, {"direction", "tx"}});
  EXPECT_EQ(first, (Labels{{"gpu", "0"},
                           {"UUID", "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"},
                           {"link", "3"},
                           {"direction", "tx"}}));
  const void* identity = first.identity();
  for (int cycle = 0; cycle < 3; ++cycle) {
    Labels copy = kGpu;  // another copy of the same base: same storage, same key
    EXPECT_EQ(cache.With(copy, {{"link", "3"}, {"direction", "tx"}}).identity(), identity);
    cache.EndCycle();
  }
  EXPECT_EQ(cache.size(), 1u);
}

TEST(LabelSetCache, DifferentPairsOrBasesGiveDifferentSets) {
  LabelSetCache cache;
  const Labels other{{"gpu", "0"},
                     {"UUID", "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}};  // equal, not shared
  const void* a = cache.With(kGpu, {{"link", "3"}}).identity();
  EXPECT_NE(cache.With(kGpu, {{"link", "4"}}).identity(), a);
  EXPECT_NE(cache.With(kGpu, {{"lin", "k3"}}).identity(), a);  // lengths are part of the key
  EXPECT_NE(cache.With(kGpu, {{"link", "3"}, {"x", ""}}).identity(), a);
  EXPECT_NE(cache.With(other, {{"link", "3"}}).identity(), a);
  EXPECT_EQ(cache.With(other, {{"link", "3"}}), cache.With(kGpu, {{"link", "3"}}));  // same pairs
  EXPECT_EQ(cache.size(), 5u);
}

TEST(LabelSetCache, SetsNotAskedForInACycleAreForgotten) {
  LabelSetCache cache;
  for (int pid = 100; pid < 110; ++pid) cache.With(kGpu, {{"pid", std::to_string(pid)}});
  cache.EndCycle();
  EXPECT_EQ(cache.size(), 10u);
  cache.With(kGpu, {{"pid", "100"}});  // the other nine processes exited
  cache.EndCycle();
  EXPECT_EQ(cache.size(), 1u);
  cache.EndCycle();
  EXPECT_EQ(cache.size(), 0u);
}

TEST(LabelSetCache, AnEntryKeepsItsBaseAliveSoAReusedAddressCannotAlias) {
  LabelSetCache cache;
  const void* first_base = nullptr;
  {
    Labels base{{"gpu", "7"}};
    first_base = base.identity();
    cache.With(base, {{"link", "0"}});
  }  // the caller's copy is gone; the cache's copy keeps the storage, so no new set can get its address
  Labels next{{"gpu", "8"}};
  EXPECT_NE(next.identity(), first_base);
  EXPECT_EQ(cache.With(next, {{"link", "0"}}), (Labels{{"gpu", "8"}, {"link", "0"}}));
}

// Sets from a cache are read and copied by other threads (scrapes) while the owner keeps using it.
TEST(LabelSetCache, SetsHandedOutAreSafeToCopyAndReadFromOtherThreads) {
  LabelSetCache cache;
  std::vector<Labels> published;
  for (int link = 0; link < 18; ++link)
    published.push_back(cache.With(kGpu, {{"link", std::to_string(link)}}));
  std::vector<std::thread> readers;
  std::vector<size_t> seen(4, 0);
  for (size_t t = 0; t < seen.size(); ++t) {
    readers.emplace_back([&, t] {
      for (int round = 0; round < 200; ++round) {
        for (const Labels& labels : published) {
          Labels copy = labels;
          seen[t] += copy.size();
        }
      }
    });
  }
  for (int cycle = 0; cycle < 200; ++cycle) {
    for (int link = 0; link < 18; ++link) cache.With(kGpu, {{"link", std::to_string(link)}});
    cache.EndCycle();
  }
  for (auto& reader : readers) reader.join();
  for (size_t count : seen) EXPECT_EQ(count, 200u * 18u * 3u);
}

}  // namespace
}  // namespace gpuscope
