// ConnectionLimiter: which connections the metrics server keeps when clients are slow or idle, so that a
// scrape keeps getting through however many clients hold connections without sending a request.
//
// Each held connection is in one of four states:
//   kHello    TLS only: accepted, the client's hello not received in full yet;
//   kHeader   its request header not complete yet (with TLS: the handshake is past the hello);
//   kIdle     keep-alive, between two requests;
//   kServing  a complete request is being answered.
// At most `capacity` connections are held. A new connection at the cap evicts one that has sent the
// least: the oldest in kHello, else the oldest in kHeader, else the oldest in kIdle; within kHello and
// kHeader, one that has sent something (Received) or was accepted kFreshGrace ago goes before any
// just-accepted one of the same state that has sent nothing yet (a scraper whose hello or request is on
// its way), however many of those there are. Only when
// every held connection is serving is the new one refused. So a client that sends its request at once is
// never evicted, a scraper's TLS handshake is not cut short by clients that stall in their hello, and a
// scraper's keep-alive connection outlives any number of clients that never complete a request. A
// connection in kHello or kHeader must complete its header within `header_timeout` of being accepted,
// one in kIdle is closed `idle_timeout` after its last response. kServing connections are never evicted
// or timed out here (the server bounds their writes itself).
//
// Time is passed in by the caller: the server's steady clock, chosen instants in tests.
// Thread-safety: none; the server's event loop owns it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuscope {

class ConnectionLimiter {
 public:
  using Id = uint64_t;
  using Time = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  enum class State { kHello, kHeader, kIdle, kServing };

  struct Options {
    size_t capacity = 64;  // at least 1
    Duration header_timeout = std::chrono::seconds(10);
    Duration idle_timeout = std::chrono::seconds(30);
  };

  struct Admission {
    bool admitted = false;
    // The connection closed to make room (already removed from the limiter) and the state it was in.
    std::optional<std::pair<Id, State>> evicted;
  };

  struct Expired {
    std::vector<Id> header;  // did not complete a request header in time (TLS handshake included)
    std::vector<Id> idle;    // idle keep-alive longer than idle_timeout
  };

  explicit ConnectionLimiter(Options options);

  // Takes a new connection `id` (unique, never reused) accepted at `now` in `state` (kHello for TLS,
  // kHeader for plain HTTP). Below the cap it is admitted; at the cap another is evicted for it (see
  // above); when all are serving it is refused (admitted false, nothing changed).
  Admission Admit(Id id, Time now, State state = State::kHeader);

  // The TLS hello was received: kHello -> kHeader, still timed from accept. Ignored in other states.
  void HelloDone(Id id);
  // A connection that has a complete request: kHello/kHeader/kIdle -> kServing. Unknown ids are ignored.
  void StartServing(Id id);
  // A response was sent and the connection is kept alive: kServing -> kIdle from `now`.
  void FinishServing(Id id, Time now);
  // The connection closed for any other reason. Unknown ids are ignored.
  void Remove(Id id);

  // Removes and returns the connections whose deadline is at or before `now`.
  Expired TakeExpired(Time now);
  // The earliest deadline of any held connection; nullopt when none is waiting or idle.
  std::optional<Time> NextDeadline() const;
  // The connection sent bytes of its request header (the server calls it after a read that got some).
  void Received(Id id);
  // The connection a new one would evict, removed (used when the process runs out of descriptors).
  std::optional<std::pair<Id, State>> EvictOne();
  // The connection a new one would evict now, left in place; nullopt when none is evictable.
  std::optional<Id> NextVictim() const;
  // A held kHello or kHeader connection that has sent nothing yet.
  bool IsSilent(Id id) const;
  // Up to `limit` of those, oldest first (kHello before kHeader, as they would be evicted).
  std::vector<Id> OldestSilent(size_t limit) const;

  size_t size() const { return entries_.size(); }
  size_t count(State state) const;
  size_t capacity() const { return options_.capacity; }

 private:
  struct Entry {
    State state;
    Time since;             // accepted (kHeader) or last response sent (kIdle)
    bool received = false;  // some of its request header arrived
  };
  // How long a just-accepted connection that has sent nothing is spared.
  static constexpr Duration kFreshGrace = std::chrono::milliseconds(500);
  std::optional<std::pair<Id, State>> Victim() const;
  // (since, id) of the evictable connections of one state; deadlines follow the same order.
  using Queue = std::set<std::pair<Time, Id>>;
  // The connections of a waiting state (kHello, kHeader), split by whether they sent anything: under a
  // reconnect flood the silent ones pile up at the front of one accept-ordered queue (a flood client's
  // bytes often come after its accept), and a scan of the oldest few would end on the scraper.
  struct Waiting {
    Queue sent;    // some bytes arrived
    Queue silent;  // nothing yet
    size_t size() const { return sent.size() + silent.size(); }
  };

  Waiting& WaitingOf(State state) { return state == State::kHello ? hello_ : header_; }
  void Enqueue(Id id, const Entry& entry);
  void Unqueue(Id id, const Entry& entry);

  Options options_;
  std::unordered_map<Id, Entry> entries_;
  Waiting hello_;
  Waiting header_;
  Queue idle_;
  size_t serving_ = 0;
  Time now_{};  // the latest time given to Admit or TakeExpired
};

}  // namespace gpuscope
