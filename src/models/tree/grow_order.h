// The order in which best-first (leaf-wise) growth takes leaves, as keys the CUDA grower ranks
// leaves by when it splits them ahead of need (device_select.cu). Host and device (tested on
// the host).
//
// Best-first growth takes, again and again, the open leaf whose split gains most. It takes
// leaves in the lexicographic order of the suffix minima of the split gains on their paths,
// larger first: m1 = the least gain from the root down to the leaf (its own included), m2 = the
// least below the last place m1 occurs, and so on, the leaf's own gain last; a sequence comes
// before its extensions (a leaf before its descendants). Only the first kPathMinima are kept.
#pragma once

#include <cstring>

#include "core/host_device.h"

namespace tabforge::tree {

inline constexpr int kPathMinima = 6;

// A leaf's place in that order: larger `high`, then larger `low`, comes sooner. Each word holds
// three minima as the upper 21 bits of their floats, a missing one as the largest code; zero is
// no leaf. Leaves with equal keys keep the order they were made in. The order only decides
// which splits are made ahead, never which the tree takes, so this precision is enough.
struct RankKey {
  unsigned long long high;
  unsigned long long low;
};

TFG_HOST_DEVICE inline bool Sooner(const RankKey& a, const RankKey& b) {
  return a.high > b.high || (a.high == b.high && a.low > b.low);
}
TFG_HOST_DEVICE inline bool SameRank(const RankKey& a, const RankKey& b) {
  return a.high == b.high && a.low == b.low;
}

// Appends `gain` to the suffix minima minima[0, count) (ascending): the minima at or above it
// go, it comes last. Of a longer sequence only the first kPathMinima are kept: if `gain` is
// above the last kept, they stay as they are (the count stays above kPathMinima).
TFG_HOST_DEVICE inline void AppendMinimum(float* minima, int& count, float gain) {
  if (count > kPathMinima && gain > minima[kPathMinima - 1]) return;
  int kept = count < kPathMinima ? count : kPathMinima;
  while (kept > 0 && minima[kept - 1] >= gain) --kept;
  if (kept < kPathMinima) minima[kept] = gain;
  count = kept + 1;
}

// A float's bits as an unsigned integer of the same order.
TFG_HOST_DEVICE inline unsigned int OrderedBits(float value) {
  unsigned int bits = 0;
  memcpy(&bits, &value, sizeof(bits));
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

// The key of a leaf of gain `gain` below a path whose suffix minima are minima[0, count).
TFG_HOST_DEVICE inline RankKey MakeRankKey(const float* path_minima, int count, float gain) {
  static_assert(kPathMinima == 6, "two words of three 21-bit codes");
  float minima[kPathMinima];
  for (int at = 0; at < kPathMinima; ++at) minima[at] = path_minima[at];
  AppendMinimum(minima, count, gain);
  constexpr unsigned int kMissing = (1u << 21) - 1;
  unsigned long long words[2] = {0, 0};
  for (int at = 0; at < kPathMinima; ++at) {
    const unsigned long long code = at < count ? OrderedBits(minima[at]) >> 11 : kMissing;
    words[at / 3] = (words[at / 3] << 21) | code;
  }
  return RankKey{words[0], words[1]};
}

// A sorting network over n items (any n), for a block of threads to sort keys in shared memory
// in O(log^2 n) steps instead of ranking each key against all others: the bitonic network
// whose merges first compare mirrored pairs, so that every comparator puts the earlier item at
// the lower index. Items past n count as the latest of all, which no comparator moves, so
// comparators that reach past n are skipped. Steps go for width = 2, 4, ... up to the
// power of two at or above n, and within a width for distance = width / 2, ..., 1; a step has
// SortStepComparators(n) comparators, any of which may run in parallel.
TFG_HOST_DEVICE inline int SortStepComparators(int n) {
  int width = 1;
  while (width < n) width *= 2;
  return width / 2;
}

// Comparator `index` of the step (width, distance): the items it orders, low < high; high >= n
// means the comparator is skipped.
TFG_HOST_DEVICE inline void SortComparator(int width, int distance, int index, int& low,
                                           int& high) {
  const int group = index / distance;
  const int offset = index - group * distance;
  const int start = group * 2 * distance;
  low = start + offset;
  high = distance == width / 2 ? start + 2 * distance - 1 - offset : low + distance;
}

}  // namespace tabforge::tree
