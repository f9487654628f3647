// Small deterministic pseudo-random helpers for the simulator: a splitmix64 mixer used as a counter-based
// generator, so the noise at (seed, gpu, tick, channel) is the same however and whenever it is asked for.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace gpuscope::sim {

// One splitmix64 step: a bijective 64-bit mix with good avalanche.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A 64-bit value determined by the four inputs only.
constexpr uint64_t Hash4(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return SplitMix64(SplitMix64(SplitMix64(seed ^ SplitMix64(a)) ^ b) ^ c);
}

// Uniform in [0, 1) from the four inputs.
constexpr double Unit(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return static_cast<double>(Hash4(seed, a, b, c) >> 11) * (1.0 / 9007199254740992.0);
}

// Uniform in [-1, 1) from the four inputs.
constexpr double Signed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return Unit(seed, a, b, c) * 2.0 - 1.0;
}

}  // namespace gpuscope::sim
