#include "src/sinks/prometheus/connection_limiter.h"

#include <algorithm>

namespace gpuscope {

ConnectionLimiter::ConnectionLimiter(Options options) : options_(options) {
  if (options_.capacity == 0) options_.capacity = 1;
}

void ConnectionLimiter::Enqueue(Id id, const Entry& entry) {
  switch (entry.state) {
    case State::kServing:
      ++serving_;
      return;
    case State::kIdle:
      idle_.emplace(entry.since, id);
      return;
    case State::kHello:
    case State::kHeader: {
      Waiting& waiting = WaitingOf(entry.state);
      (entry.received ? waiting.sent : waiting.silent).emplace(entry.since, id);
      return;
    }
  }
}

void ConnectionLimiter::Unqueue(Id id, const Entry& entry) {
  switch (entry.state) {
    case State::kServing:
      --serving_;
      return;
    case State::kIdle:
      idle_.erase({entry.since, id});
      return;
    case State::kHello:
    case State::kHeader: {
      Waiting& waiting = WaitingOf(entry.state);
      (entry.received ? waiting.sent : waiting.silent).erase({entry.since, id});
      return;
    }
  }
}

std::optional<std::pair<ConnectionLimiter::Id, ConnectionLimiter::State>> ConnectionLimiter::Victim() const {
  // A connection that sent part of its hello or header (or has waited kFreshGrace) goes before one just
  // accepted that has not sent anything yet: under a flood of clients that stall mid-hello or mid-header
  // the slots turn over in milliseconds, and a scraper's hello or request may not have arrived by the time
  // its connection is the oldest.
  // Within a state only: every kHello connection still goes before any kHeader one.
  for (const auto& [waiting, state] :
       {std::pair{&hello_, State::kHello}, std::pair{&header_, State::kHeader}}) {
    if (waiting->size() == 0) continue;
    const Queue& sent = waiting->sent;
    const Queue& silent = waiting->silent;
    bool silent_past_grace = !silent.empty() && now_ - silent.begin()->first >= kFreshGrace;
    if (!sent.empty() && (!silent_past_grace || *sent.begin() < *silent.begin()))
      return std::make_pair(sent.begin()->second, state);
    return std::make_pair(silent.begin()->second, state);  // past the grace, or all new and silent
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

bool ConnectionLimiter::IsSilent(Id id) const {
  auto it = entries_.find(id);
  return it != entries_.end() && !it->second.received &&
         (it->second.state == State::kHello || it->second.state == State::kHeader);
}

std::vector<ConnectionLimiter::Id> ConnectionLimiter::OldestSilent(size_t limit) const {
  std::vector<Id> ids;
  for (const Waiting* waiting : {&hello_, &header_}) {
    for (const auto& [since, id] : waiting->silent) {
      if (ids.size() >= limit) return ids;
      ids.push_back(id);
    }
  }
  return ids;
}

void ConnectionLimiter::Received(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.received) return;
  Unqueue(id, it->second);
  it->second.received = true;
  Enqueue(id, it->second);
}

ConnectionLimiter::Admission ConnectionLimiter::Admit(Id id, Time now, State state) {
  now_ = std::max(now_, now);
  Admission admission;
  if (state != State::kHello) state = State::kHeader;
  if (entries_.size() >= options_.capacity) {
    admission.evicted = EvictOne();
    if (!admission.evicted) return admission;
  }
  Entry& entry = entries_.emplace(id, Entry{state, now}).first->second;
  Enqueue(id, entry);
  admission.admitted = true;
  return admission;
}

void ConnectionLimiter::HelloDone(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state != State::kHello) return;
  Unqueue(id, it->second);
  it->second.state = State::kHeader;
  Enqueue(id, it->second);
}

void ConnectionLimiter::StartServing(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state == State::kServing) return;
  Unqueue(id, it->second);
  it->second.state = State::kServing;
  Enqueue(id, it->second);
}

void ConnectionLimiter::FinishServing(Id id, Time now) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state != State::kServing) return;
  Unqueue(id, it->second);
  it->second = Entry{State::kIdle, now};
  Enqueue(id, it->second);
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
  for (Waiting* waiting : {&hello_, &header_}) {
    take(waiting->sent, options_.header_timeout, expired.header);
    take(waiting->silent, options_.header_timeout, expired.header);
  }
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
  for (const Waiting* waiting : {&hello_, &header_}) {
    consider(waiting->sent, options_.header_timeout);
    consider(waiting->silent, options_.header_timeout);
  }
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
