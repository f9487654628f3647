#include "src/node/xid_ledger.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "src/events/classifiers/xid_catalog.h"

namespace gpuscope {
namespace {

constexpr char kBus[] = "00000000:18:00.0";

// A ledger as the agent makes it: actions named by the XID catalog.
XidLedger CatalogLedger(std::chrono::milliseconds window = XidLedger::kDefaultMatchWindow) {
  return XidLedger(window, [](uint32_t xid) { return std::string(XidActionName(LookupXid(xid).action)); });
}

TEST(XidLedgerTest, CountsTheSameEventSeenByBothObserversOnce) {
  XidLedger ledger = CatalogLedger(std::chrono::seconds(10));
  EXPECT_TRUE(ledger.Record(XidObserver::kNvml, kBus, 79, 1000.0));
  // The kernel log spells the bus id its own way and reports it a moment later.
  EXPECT_FALSE(ledger.Record(XidObserver::kKernelLog, "0000:18:00.0", 79, 1001.5));
  std::vector<XidLedgerEntry> entries = ledger.Entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].pci_bus_id, kBus);
  EXPECT_EQ(entries[0].xid, 79u);
  EXPECT_EQ(entries[0].count, 1u);
  EXPECT_EQ(entries[0].action, "reboot");
  EXPECT_EQ(ledger.merged(), 1u);
  EXPECT_EQ(ledger.LastXid("0000:18:00.0"), 79u);
}

TEST(XidLedgerTest, RepeatsFromOneObserverAreAllCounted) {
  XidLedger ledger = CatalogLedger(std::chrono::seconds(10));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(ledger.Record(XidObserver::kKernelLog, kBus, 13, 100.0 + i));
  ASSERT_EQ(ledger.Entries().size(), 1u);
  EXPECT_EQ(ledger.Entries()[0].count, 5u);
  EXPECT_EQ(ledger.Entries()[0].action, "restart_app");
  // NVML then reports the same five: each matches one, none is counted again.
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(ledger.Record(XidObserver::kNvml, kBus, 13, 100.2 + i));
  EXPECT_EQ(ledger.Entries()[0].count, 5u);
  // A sixth from NVML has nothing left to match.
  EXPECT_TRUE(ledger.Record(XidObserver::kNvml, kBus, 13, 105.0));
  EXPECT_EQ(ledger.Entries()[0].count, 6u);
}

TEST(XidLedgerTest, ObservationsOutsideTheWindowAreDifferentEvents) {
  XidLedger ledger = CatalogLedger(std::chrono::seconds(2));
  EXPECT_TRUE(ledger.Record(XidObserver::kKernelLog, kBus, 48, 10.0));  // before the agent started
  EXPECT_TRUE(ledger.Record(XidObserver::kNvml, kBus, 48, 500.0));
  EXPECT_EQ(ledger.Entries()[0].count, 2u);
  EXPECT_DOUBLE_EQ(ledger.Entries()[0].last_seen_seconds, 500.0);
}

TEST(XidLedgerTest, DifferentGpusAndCodesNeverMatch) {
  XidLedger ledger = CatalogLedger();
  EXPECT_TRUE(ledger.Record(XidObserver::kNvml, kBus, 79, 1.0));
  EXPECT_TRUE(ledger.Record(XidObserver::kKernelLog, "0000:19:00.0", 79, 1.0));
  EXPECT_TRUE(ledger.Record(XidObserver::kKernelLog, kBus, 48, 1.0));
  EXPECT_EQ(ledger.Entries().size(), 3u);
  EXPECT_EQ(ledger.merged(), 0u);
}

TEST(XidLedgerTest, IgnoresObservationsWithoutAPciAddress) {
  XidLedger ledger = CatalogLedger();
  EXPECT_FALSE(ledger.Record(XidObserver::kKernelLog, "not-a-bus", 79, 1.0));
  EXPECT_FALSE(ledger.Record(XidObserver::kKernelLog, "", 79, 1.0));
  EXPECT_TRUE(ledger.Entries().empty());
  EXPECT_EQ(ledger.LastXid("garbage"), 0u);
}

// The action label comes from the catalog, including the entries its 2026-11-29 check changed: a row
// remap event (63) asks for nothing, a context switch timeout (109) for a GPU reset.
TEST(XidLedgerTest, ActionIsTheCatalogsForEachCode) {
  XidLedger ledger = CatalogLedger();
  EXPECT_TRUE(ledger.Record(XidObserver::kKernelLog, kBus, 63, 1.0));
  EXPECT_TRUE(ledger.Record(XidObserver::kKernelLog, kBus, 109, 1.0));
  EXPECT_TRUE(ledger.Record(XidObserver::kKernelLog, kBus, 999, 1.0));
  std::vector<XidLedgerEntry> entries = ledger.Entries();
  ASSERT_EQ(entries.size(), 3u);
  std::map<uint32_t, std::string> actions;
  for (const XidLedgerEntry& e : entries) actions[e.xid] = e.action;
  EXPECT_EQ(actions[63], "ignore");
  EXPECT_EQ(actions[109], "reset_gpu");
  EXPECT_EQ(actions[999], "contact_support");
}

TEST(XidLedgerTest, ConcurrentObserversCountEachEventOnce) {
  XidLedger ledger = CatalogLedger(std::chrono::seconds(10));
  constexpr int kEvents = 1000;  // below the ledger's bound on unmatched observations
  auto observe = [&](XidObserver who) {
    for (int i = 0; i < kEvents; ++i) ledger.Record(who, kBus, 31, 100.0 + static_cast<double>(i) * 0.001);
  };
  std::thread a(observe, XidObserver::kNvml);
  std::thread b(observe, XidObserver::kKernelLog);
  a.join();
  b.join();
  // A storm: both observers see every event within the window, however the threads interleave; every
  // observation either matches one of the other observer or is counted, so each event counts once.
  EXPECT_EQ(ledger.Entries()[0].count, static_cast<uint64_t>(kEvents));
  EXPECT_EQ(ledger.merged(), static_cast<uint64_t>(kEvents));
}

}  // namespace
}  // namespace gpuscope
