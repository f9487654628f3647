#!/usr/bin/env bash
# Fails when product code (src/, sim/) locks with a raw std::mutex, std::condition_variable or a standard
# lock type: only src/core/mutex.h's annotated Mutex/MutexLock/CondVar are checked by -Wthread-safety
# (libstdc++'s std::mutex carries no annotations), so a raw one would escape the clang build's analysis.
set -euo pipefail
cd "$(dirname "$0")/../.."
pattern='std::(mutex|recursive_mutex|shared_mutex|timed_mutex|condition_variable|lock_guard|unique_lock|scoped_lock|shared_lock)\b'
if hits=$(git ls-files 'src/*.h' 'src/*.cc' 'sim/*.h' 'sim/*.cc' | grep -v '^src/core/mutex.h$' |
          xargs grep -nE "$pattern"); then
  echo "$hits"
  echo "check_locks: use gpuscope::Mutex, MutexLock and CondVar (src/core/mutex.h) instead"
  exit 1
fi
echo "check_locks: no raw standard locks in src/ and sim/"
