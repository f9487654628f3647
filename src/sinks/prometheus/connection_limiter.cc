#include "src/sinks/prometheus/connection_limiter.h"

#include <algorithm>

namespace gpuscope {

ConnectionLimiter::ConnectionLimiter(Options options) : options_(options) {
  if (options_.capacity == 0) options_.capacity = 1;
}

void ConnectionLimiter::Unqueue(Id id, const Entry& entry) {
  if (entry.state == State::kServing) {
    --serving_;
  } else {
    QueueOf(entry.state).erase({entry.since, id});
  }
}

std::optional<std::pair<ConnectionLimiter::Id, ConnectionLimiter::State>> ConnectionLimiter::Victim() const {
  // A connection that sent part of its hello or header (or has waited kFreshGrace) goes before one just
  // accepted that has not sent anything yet: under a flood of clients that stall mid-hello or mid-header
  // the slots turn over in milliseconds, and a scraper's hello or request may not have arrived by the time
  // its connection is the oldest.
  // Within a state only: every kHello connection still goes before any kHeader one.
  for (const auto& [queue, state] :
       {std::pair{&hello_, State::kHello}, std::pair{&header_, State::kHeader}}) {
    if (queue->empty()) continue;
    size_t scanned = 0;
    for (const auto& [since, id] : *queue) {
      if (++scanned > kFreshScan) break;
      if (entries_.at(id).received || now_ - since >= kFreshGrace) return std::make_pair(id, state);
    }
    return std::make_pair(queue->begin()->second, state);  // all new and silent: the oldest
  }
  if (!idle_.empty()) return std::make_pair(idle_.begin()->second, State::kIdle);
  return std::nullopt;
}

std::optional<std::pair<ConnectionLimiter::Id, ConnectionLimiter::State>> ConnectionLimiter::EvictOne() {
  auto victim = Victim();
  if (!victim) return std::nullopt;
  auto it = entries_.find(victim->first);
  Unqueue(victim->first, it->second);
  entries_.erase(it);
  return victim;
}

std::optional<ConnectionLimiter::Id> ConnectionLimiter::NextVictim() const {
  auto victim = Victim();
  if (!victim) return std::nullopt;
  return victim->first;
}

void ConnectionLimiter::Received(Id id) {
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.received = true;
}

ConnectionLimiter::Admission ConnectionLimiter::Admit(Id id, Time now, State state) {
  now_ = std::max(now_, now);
  Admission admission;
  if (state != State::kHello) state = State::kHeader;
  if (entries_.size() >= options_.capacity) {
    admission.evicted = EvictOne();
    if (!admission.evicted) return admission;
  }
  entries_.emplace(id, Entry{state, now});
  QueueOf(state).emplace(now, id);
  admission.admitted = true;
  return admission;
}

void ConnectionLimiter::HelloDone(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state != State::kHello) return;
  hello_.erase({it->second.since, id});
  it->second.state = State::kHeader;
  header_.emplace(it->second.since, id);
}

void ConnectionLimiter::StartServing(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state == State::kServing) return;
  Unqueue(id, it->second);
  it->second.state = State::kServing;
  ++serving_;
}

void ConnectionLimiter::FinishServing(Id id, Time now) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state != State::kServing) return;
  --serving_;
  it->second = Entry{State::kIdle, now};
  idle_.emplace(now, id);
}

void ConnectionLimiter::Remove(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Unqueue(id, it->second);
  entries_.erase(it);
}

ConnectionLimiter::Expired ConnectionLimiter::TakeExpired(Time now) {
  now_ = std::max(now_, now);
  Expired expired;
  auto take = [&](Queue& queue, Duration timeout, std::vector<Id>& out) {
    while (!queue.empty() && queue.begin()->first + timeout <= now) {
      Id id = queue.begin()->second;
      queue.erase(queue.begin());
      entries_.erase(id);
      out.push_back(id);
    }
  };
  take(hello_, options_.header_timeout, expired.header);
  take(header_, options_.header_timeout, expired.header);
  take(idle_, options_.idle_timeout, expired.idle);
  return expired;
}

std::optional<ConnectionLimiter::Time> ConnectionLimiter::NextDeadline() const {
  std::optional<Time> next;
  auto consider = [&](const Queue& queue, Duration timeout) {
    if (queue.empty()) return;
    Time deadline = queue.begin()->first + timeout;
    if (!next || deadline < *next) next = deadline;
  };
  consider(hello_, options_.header_timeout);
  consider(header_, options_.header_timeout);
  consider(idle_, options_.idle_timeout);
  return next;
}

size_t ConnectionLimiter::count(State state) const {
  switch (state) {
    case State::kHello:
      return hello_.size();
    case State::kHeader:
      return header_.size();
    case State::kIdle:
      return idle_.size();
    case State::kServing:
      return serving_;
  }
  return 0;
}

}  // namespace gpuscope
