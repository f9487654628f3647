#include "src/sinks/prometheus/connection_limiter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <utility>
#include <vector>

namespace gpuscope {
namespace {

using State = ConnectionLimiter::State;
using std::chrono::seconds;

// Instants are chosen by the tests: t(0) is an arbitrary origin, t(n) n seconds later.
ConnectionLimiter::Time t(int second) {
  return ConnectionLimiter::Time() + std::chrono::hours(1) + seconds(second);
}

ConnectionLimiter Limiter(size_t capacity) {
  ConnectionLimiter::Options options;
  options.capacity = capacity;
  options.header_timeout = seconds(10);
  options.idle_timeout = seconds(30);
  return ConnectionLimiter(options);
}

std::optional<std::pair<ConnectionLimiter::Id, State>> Evicted(ConnectionLimiter::Id id, State state) {
  return std::make_pair(id, state);
}

TEST(ConnectionLimiter, AdmitsBelowTheCapWithoutEvicting) {
  ConnectionLimiter limiter = Limiter(2);
  EXPECT_TRUE(limiter.Admit(1, t(0)).admitted);
  ConnectionLimiter::Admission second = limiter.Admit(2, t(0));
  EXPECT_TRUE(second.admitted);
  EXPECT_FALSE(second.evicted);
  EXPECT_EQ(limiter.size(), 2u);
  EXPECT_EQ(limiter.count(State::kHeader), 2u);
}

TEST(ConnectionLimiter, AtTheCapEvictsTheOldestConnectionWithoutACompleteHeader) {
  ConnectionLimiter limiter = Limiter(3);
  limiter.Admit(1, t(0));
  limiter.Admit(2, t(1));
  limiter.Admit(3, t(2));
  ConnectionLimiter::Admission admission = limiter.Admit(4, t(3));
  EXPECT_TRUE(admission.admitted);
  EXPECT_EQ(admission.evicted, Evicted(1, State::kHeader));
  EXPECT_EQ(limiter.Admit(5, t(4)).evicted, Evicted(2, State::kHeader));
  EXPECT_EQ(limiter.size(), 3u);
}

TEST(ConnectionLimiter, ConnectionsAcceptedAtTheSameInstantAreEvictedInAcceptOrder) {
  ConnectionLimiter limiter = Limiter(2);
  limiter.Admit(7, t(0));
  limiter.Admit(8, t(0));
  EXPECT_EQ(limiter.Admit(9, t(0)).evicted, Evicted(7, State::kHeader));
}

TEST(ConnectionLimiter, EvictsUnfinishedHeadersBeforeIdleConnectionsWhateverTheirAge) {
  ConnectionLimiter limiter = Limiter(3);
  limiter.Admit(1, t(0));
  limiter.StartServing(1);
  limiter.FinishServing(1, t(1));  // idle since 1: the oldest
  limiter.Admit(2, t(2));          // header since 2
  limiter.Admit(3, t(6));          // header since 6
  EXPECT_EQ(limiter.Admit(4, t(7)).evicted, Evicted(2, State::kHeader));
  EXPECT_EQ(limiter.Admit(5, t(8)).evicted, Evicted(3, State::kHeader));
  EXPECT_EQ(limiter.Admit(6, t(9)).evicted, Evicted(4, State::kHeader));
  // Only idle connections left besides the newest: the oldest idle one goes.
  limiter.StartServing(5);
  limiter.FinishServing(5, t(10));
  limiter.StartServing(6);
  limiter.FinishServing(6, t(11));
  EXPECT_EQ(limiter.Admit(7, t(12)).evicted, Evicted(1, State::kIdle));
}

TEST(ConnectionLimiter, EvictsStalledTlsHellosFirstSoAHandshakeInProgressSurvives) {
  ConnectionLimiter limiter = Limiter(2);
  limiter.Admit(1, t(0), State::kHello);  // the scraper: its hello arrives and is answered
  limiter.HelloDone(1);
  EXPECT_EQ(limiter.count(State::kHeader), 1u);
  // Clients that stop half-way through their hello reconnect as fast as they are evicted.
  ConnectionLimiter::Id next = 10;
  for (int i = 0; i < 100; ++i) {
    ConnectionLimiter::Admission admission = limiter.Admit(next++, t(1), State::kHello);
    ASSERT_TRUE(admission.admitted);
    if (i > 0) {
      ASSERT_EQ(admission.evicted->second, State::kHello);
    }
  }
  limiter.StartServing(1);  // the scraper's request arrived
  EXPECT_EQ(limiter.count(State::kServing), 1u);
  EXPECT_EQ(limiter.count(State::kHello), 1u);
}

TEST(ConnectionLimiter, AHandshakeCountsAgainstTheHeaderDeadlineFromAccept) {
  ConnectionLimiter limiter = Limiter(4);
  limiter.Admit(1, t(0), State::kHello);
  limiter.Admit(2, t(5), State::kHello);
  limiter.HelloDone(2);
  limiter.HelloDone(2);  // ignored: already past the hello
  EXPECT_EQ(limiter.NextDeadline(), t(10));
  EXPECT_EQ(limiter.TakeExpired(t(10)).header, std::vector<ConnectionLimiter::Id>{1});
  EXPECT_EQ(limiter.TakeExpired(t(15)).header, std::vector<ConnectionLimiter::Id>{2});
}

TEST(ConnectionLimiter, NeverEvictsAConnectionBeingServedAndRefusesWhenAllAre) {
  ConnectionLimiter limiter = Limiter(2);
  limiter.Admit(1, t(0));
  limiter.Admit(2, t(1));
  limiter.StartServing(1);
  EXPECT_EQ(limiter.Admit(3, t(2)).evicted, Evicted(2, State::kHeader));
  limiter.StartServing(3);
  ConnectionLimiter::Admission refused = limiter.Admit(4, t(3));
  EXPECT_FALSE(refused.admitted);
  EXPECT_FALSE(refused.evicted);
  EXPECT_EQ(limiter.count(State::kServing), 2u);
  EXPECT_FALSE(limiter.EvictOne());
  // A served connection kept alive becomes evictable again, as the youngest.
  limiter.FinishServing(1, t(4));
  EXPECT_EQ(limiter.Admit(5, t(5)).evicted, Evicted(1, State::kIdle));
}

TEST(ConnectionLimiter, AScraperIsNeverEvictedByAnyNumberOfSlowClients) {
  ConnectionLimiter limiter = Limiter(4);
  ConnectionLimiter::Id next = 100;
  for (int round = 0; round < 50; ++round) {
    // A crowd of slow clients reconnects as fast as it is evicted...
    for (int i = 0; i < 40; ++i) {
      ConnectionLimiter::Admission admission = limiter.Admit(next++, t(round));
      ASSERT_TRUE(admission.admitted);
    }
    // ...and a scraper that sends its request at once is admitted and answered.
    ConnectionLimiter::Id scraper = next++;
    ASSERT_TRUE(limiter.Admit(scraper, t(round)).admitted);
    limiter.StartServing(scraper);
    for (int i = 0; i < 40; ++i) {
      ConnectionLimiter::Admission admission = limiter.Admit(next++, t(round));
      ASSERT_TRUE(admission.admitted);
      ASSERT_NE(admission.evicted->first, scraper);
    }
    EXPECT_EQ(limiter.count(State::kServing), 1u);
    limiter.Remove(scraper);  // response sent, connection closed
  }
  EXPECT_EQ(limiter.size(), 3u);  // the cap less the scraper that left
}

TEST(ConnectionLimiter, AHeaderMustBeCompleteWithinTheHeaderTimeoutOfAccept) {
  ConnectionLimiter limiter = Limiter(8);
  limiter.Admit(1, t(0));
  limiter.Admit(2, t(3));
  EXPECT_EQ(limiter.NextDeadline(), t(10));
  ConnectionLimiter::Expired early = limiter.TakeExpired(t(10) - std::chrono::nanoseconds(1));
  EXPECT_TRUE(early.header.empty());
  ConnectionLimiter::Expired expired = limiter.TakeExpired(t(10));
  EXPECT_EQ(expired.header, std::vector<ConnectionLimiter::Id>{1});
  EXPECT_TRUE(expired.idle.empty());
  EXPECT_EQ(limiter.NextDeadline(), t(13));
  EXPECT_EQ(limiter.size(), 1u);
}

TEST(ConnectionLimiter, AnIdleConnectionExpiresTheIdleTimeoutAfterItsLastResponse) {
  ConnectionLimiter limiter = Limiter(8);
  limiter.Admit(1, t(0));
  limiter.StartServing(1);
  EXPECT_FALSE(limiter.NextDeadline());  // a request being answered has no deadline here
  EXPECT_TRUE(limiter.TakeExpired(t(1000)).header.empty());
  limiter.FinishServing(1, t(1000));
  EXPECT_EQ(limiter.NextDeadline(), t(1030));
  EXPECT_TRUE(limiter.TakeExpired(t(1029)).idle.empty());
  EXPECT_EQ(limiter.TakeExpired(t(1030)).idle, std::vector<ConnectionLimiter::Id>{1});
  EXPECT_EQ(limiter.size(), 0u);
}

TEST(ConnectionLimiter, RemovedConnectionsFreeTheirPlaceAndUnknownIdsAreIgnored) {
  ConnectionLimiter limiter = Limiter(1);
  limiter.Admit(1, t(0));
  limiter.Remove(1);
  limiter.Remove(42);
  limiter.StartServing(42);
  limiter.FinishServing(42, t(1));
  ConnectionLimiter::Admission admission = limiter.Admit(2, t(2));
  EXPECT_TRUE(admission.admitted);
  EXPECT_FALSE(admission.evicted);
  EXPECT_EQ(limiter.size(), 1u);
}

TEST(ConnectionLimiter, EvictOnePicksWhatAdmitWouldAndEmptiesTheLimiter) {
  ConnectionLimiter limiter = Limiter(4);
  limiter.Admit(1, t(4));
  limiter.Admit(2, t(0));
  limiter.StartServing(2);
  limiter.FinishServing(2, t(2));
  limiter.Admit(3, t(5), State::kHello);
  EXPECT_EQ(limiter.EvictOne(), Evicted(3, State::kHello));
  EXPECT_EQ(limiter.EvictOne(), Evicted(1, State::kHeader));
  EXPECT_EQ(limiter.EvictOne(), Evicted(2, State::kIdle));
  EXPECT_FALSE(limiter.EvictOne());
  EXPECT_EQ(limiter.size(), 0u);
}

TEST(ConnectionLimiter, ACapacityOfZeroMeansOne) {
  ConnectionLimiter limiter = Limiter(0);
  EXPECT_EQ(limiter.capacity(), 1u);
  EXPECT_TRUE(limiter.Admit(1, t(0)).admitted);
  EXPECT_EQ(limiter.Admit(2, t(1)).evicted, Evicted(1, State::kHeader));
}

TEST(ConnectionLimiter, NextVictimIsWhatAnAdmissionAtTheCapWouldEvictAndLeavesItInPlace) {
  ConnectionLimiter limiter({.capacity = 3});
  const auto t0 = ConnectionLimiter::Time{};
  limiter.Admit(1, t0, ConnectionLimiter::State::kHeader);
  limiter.Admit(2, t0 + std::chrono::milliseconds(1), ConnectionLimiter::State::kHello);
  limiter.Admit(3, t0 + std::chrono::milliseconds(2), ConnectionLimiter::State::kHello);
  EXPECT_EQ(limiter.NextVictim(), std::optional<ConnectionLimiter::Id>(2)) << "the oldest still in its hello";
  EXPECT_EQ(limiter.size(), 3u);
  limiter.HelloDone(2);
  EXPECT_EQ(limiter.NextVictim(), std::optional<ConnectionLimiter::Id>(3));
  ConnectionLimiter::Admission admission = limiter.Admit(4, t0 + std::chrono::milliseconds(3));
  ASSERT_TRUE(admission.evicted.has_value());
  EXPECT_EQ(admission.evicted->first, 3u);
  limiter.StartServing(1);
  limiter.StartServing(2);
  limiter.StartServing(4);
  EXPECT_EQ(limiter.NextVictim(), std::nullopt) << "serving connections are never evicted";
}

// Under a flood of half-header clients the slots turn over in milliseconds: a scraper's connection that
// was just accepted and whose request is on its way is not evicted while one that sent part of a header can
// go instead.
TEST(ConnectionLimiter, AJustAcceptedSilentConnectionIsSparedForOneThatSentPartOfAHeader) {
  using std::chrono::milliseconds;
  ConnectionLimiter limiter = Limiter(2);
  ASSERT_TRUE(limiter.Admit(1, t(0)).admitted);  // the scraper: nothing read yet
  ASSERT_TRUE(limiter.Admit(2, t(0) + milliseconds(1)).admitted);
  limiter.Received(2);  // half a header
  EXPECT_EQ(limiter.NextVictim(), 2u);
  EXPECT_EQ(limiter.Admit(3, t(0) + milliseconds(2)).evicted, Evicted(2, State::kHeader));
  limiter.Received(1);  // the scraper's bytes came but its header is not complete: oldest first again
  EXPECT_EQ(limiter.Admit(4, t(0) + milliseconds(3)).evicted, Evicted(1, State::kHeader));
}

TEST(ConnectionLimiter, ASilentConnectionPastTheGraceIsEvictedOldestFirst) {
  using std::chrono::milliseconds;
  ConnectionLimiter limiter = Limiter(2);
  ASSERT_TRUE(limiter.Admit(1, t(0)).admitted);
  ASSERT_TRUE(limiter.Admit(2, t(0) + milliseconds(1)).admitted);
  limiter.Received(2);
  EXPECT_EQ(limiter.Admit(3, t(1)).evicted, Evicted(1, State::kHeader));  // a second later
}

TEST(ConnectionLimiter, WhenEveryWaitingConnectionIsSilentAndNewTheOldestStillGoes) {
  using std::chrono::milliseconds;
  ConnectionLimiter limiter = Limiter(2);
  ASSERT_TRUE(limiter.Admit(1, t(0)).admitted);
  ASSERT_TRUE(limiter.Admit(2, t(0) + milliseconds(1)).admitted);
  EXPECT_EQ(limiter.Admit(3, t(0) + milliseconds(2)).evicted, Evicted(1, State::kHeader));
  // An idle keep-alive connection still outlives silent new ones (a connect-only flood).
  limiter.StartServing(2);
  limiter.FinishServing(2, t(0) + milliseconds(3));
  EXPECT_EQ(limiter.Admit(4, t(0) + milliseconds(4)).evicted, Evicted(3, State::kHeader));
}

TEST(ConnectionLimiter, AnyNumberOfNewSilentConnectionsAheadOfOneThatSentDoesNotExposeTheOldest) {
  // A reconnect flood whose clients' bytes come after their accept piles silent connections up at the
  // front of the accept order; the scraper (id 1) is the oldest of them.
  using std::chrono::milliseconds;
  ConnectionLimiter limiter = Limiter(64);
  for (ConnectionLimiter::Id id = 1; id <= 63; ++id) ASSERT_TRUE(limiter.Admit(id, t(0)).admitted);
  ASSERT_TRUE(limiter.Admit(64, t(0) + milliseconds(1)).admitted);
  limiter.Received(64);  // the one flood client whose half header was read
  EXPECT_EQ(limiter.NextVictim(), 64u);
  EXPECT_EQ(limiter.Admit(65, t(0) + milliseconds(2)).evicted, Evicted(64, State::kHeader));
  // Past the grace, the oldest of either kind goes first.
  limiter.Received(65);
  EXPECT_EQ(limiter.Admit(66, t(1)).evicted, Evicted(1, State::kHeader));
  EXPECT_EQ(limiter.count(State::kHeader), 64u);
}

TEST(ConnectionLimiter, TheSilentConnectionsAreListedInEvictionOrder) {
  ConnectionLimiter limiter = Limiter(8);
  ASSERT_TRUE(limiter.Admit(1, t(0)).admitted);
  ASSERT_TRUE(limiter.Admit(2, t(1), State::kHello).admitted);
  ASSERT_TRUE(limiter.Admit(3, t(2)).admitted);
  ASSERT_TRUE(limiter.Admit(4, t(3)).admitted);
  limiter.Received(3);
  limiter.StartServing(4);
  EXPECT_EQ(limiter.OldestSilent(8), (std::vector<ConnectionLimiter::Id>{2, 1}));
  EXPECT_EQ(limiter.OldestSilent(1), (std::vector<ConnectionLimiter::Id>{2}));
  EXPECT_TRUE(limiter.IsSilent(1));
  EXPECT_FALSE(limiter.IsSilent(3));
  EXPECT_FALSE(limiter.IsSilent(4));
  EXPECT_FALSE(limiter.IsSilent(99));
}

TEST(ConnectionLimiter, ReceivingKeepsTheHeaderDeadlineFromAccept) {
  ConnectionLimiter limiter = Limiter(4);
  ASSERT_TRUE(limiter.Admit(1, t(0)).admitted);
  ASSERT_TRUE(limiter.Admit(2, t(5)).admitted);
  limiter.Received(1);
  limiter.Received(1);  // twice is once
  EXPECT_EQ(limiter.NextDeadline(), t(10));
  ConnectionLimiter::Expired expired = limiter.TakeExpired(t(10));
  EXPECT_EQ(expired.header, std::vector<ConnectionLimiter::Id>{1});
  EXPECT_EQ(limiter.size(), 1u);
  EXPECT_EQ(limiter.NextDeadline(), t(15));
}

}  // namespace
}  // namespace gpuscope
