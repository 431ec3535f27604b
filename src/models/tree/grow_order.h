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
// three minima as the upper 21 bits of their floats, a missing one as the largest code. Leaves
// with equal keys keep the order they were made in. The order only decides which splits are
// made ahead, never which the tree takes, so this precision is enough.
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

// A split gain's bits as an unsigned integer of the same order (-0 as +0, so that equal gains
// have equal bits); never zero for a gain above -inf, so zero can stand for none.
TFG_HOST_DEVICE inline unsigned long long OrderedGain(double gain) {
  const double normal = gain + 0.0;
  unsigned long long bits = 0;
  memcpy(&bits, &normal, sizeof(bits));
  return (bits >> 63) != 0 ? ~bits : bits | (1ull << 63);
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

// A list of open leaves kept in best-first order (RankKey, then id: a total order) from one
// selection to the next without sorting it again: `keys` and `ids` hold the last order's
// entries [0, old_count), of which `removed` (removed_count indices, any order) have left it,
// then `fresh` entries [old_count, old_count + fresh) that join it, in any order. Each kept
// entry's place in the new order is counted: the old entries before it that stay, and the fresh
// entries before it (a linear count: a selection adds a few leaves to a few hundred).
struct RankedStage {
  const RankKey* keys;
  const int* ids;
  int old_count;
  int fresh;
  const int* removed;
  int removed_count;
};

// The place of kept entry `at` in the new order (0 first).
TFG_HOST_DEVICE inline int StagedPlace(const RankedStage& stage, int at) {
  const RankKey key = stage.keys[at];
  const int id = stage.ids[at];
  auto before = [&](int other) {
    const RankKey other_key = stage.keys[other];
    return Sooner(other_key, key) || (SameRank(other_key, key) && stage.ids[other] < id);
  };
  // Old entries before it: its own index, or for a fresh entry the first old entry after it
  // (the old ones are in order).
  int old_before = at;
  if (at >= stage.old_count) {
    int low = 0;
    int high = stage.old_count;
    while (low < high) {
      const int middle = (low + high) / 2;
      if (before(middle)) {
        low = middle + 1;
      } else {
        high = middle;
      }
    }
    old_before = low;
  }
  int place = old_before;
  for (int removed_at = 0; removed_at < stage.removed_count; ++removed_at) {
    place -= stage.removed[removed_at] < old_before ? 1 : 0;
  }
  const int end = stage.old_count + stage.fresh;
  for (int other = stage.old_count; other < end; ++other) place += before(other) ? 1 : 0;
  return place;
}

}  // namespace tabforge::tree
