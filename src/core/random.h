// Counter-based randomness: every random choice is a pure function of (seed, stream, counter),
// so results do not depend on thread count or evaluation order. Streams separate independent
// uses (row sampling, bagging per round, feature sampling per node); counters index within a
// stream (a row, a feature).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace tabforge {

// The SplitMix64 finaliser: a bijective mix of 64 bits with good avalanche.
TFG_HOST_DEVICE inline std::uint64_t Mix64(std::uint64_t value) {
  value += 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

// 64 random bits for (seed, stream, counter).
TFG_HOST_DEVICE inline std::uint64_t RandomBits(std::uint64_t seed, std::uint64_t stream,
                                                std::uint64_t counter) {
  return Mix64(Mix64(seed ^ Mix64(stream)) ^ counter);
}

// RandomBits in two steps, for loops over the counters of one stream: the stream's key, then
// the bits of each counter.
TFG_HOST_DEVICE inline std::uint64_t StreamKey(std::uint64_t seed, std::uint64_t stream) {
  return Mix64(seed ^ Mix64(stream));
}
TFG_HOST_DEVICE inline double KeyedUniform(std::uint64_t key, std::uint64_t counter) {
  return static_cast<double>(Mix64(key ^ counter) >> 11) * 0x1.0p-53;
}

// A uniform double in [0, 1) for (seed, stream, counter), with 53 random bits.
TFG_HOST_DEVICE inline double RandomUniform(std::uint64_t seed, std::uint64_t stream,
                                            std::uint64_t counter) {
  return static_cast<double>(RandomBits(seed, stream, counter) >> 11) * 0x1.0p-53;
}

// A uniform integer in [0, span) for a stream's key and a counter; span at most 2^52.
TFG_HOST_DEVICE inline std::uint64_t KeyedBelow(std::uint64_t key, std::uint64_t counter,
                                                std::uint64_t span) {
  const auto value =
      static_cast<std::uint64_t>(KeyedUniform(key, counter) * static_cast<double>(span));
  return value < span ? value : span - 1;
}

// A uniform integer in [0, span) for (seed, stream, counter); span at most 2^52.
TFG_HOST_DEVICE inline std::uint64_t RandomBelow(std::uint64_t seed, std::uint64_t stream,
                                                 std::uint64_t counter, std::uint64_t span) {
  return KeyedBelow(StreamKey(seed, stream), counter, span);
}

}  // namespace tabforge
