// Rows whose bins are equal on every feature go the same way at every split of every tree, so a
// tree can be grown on one merged row per group: its histogram cell is the sum of its members'
// cells and its exact gradient the sum of theirs in fixed point. Histograms are integer sums, so
// the sums, the splits and the leaf values are those of the rows themselves: merging changes the
// time, never the tree. Data with many repeated rows (network logs, binned counts) grow their
// trees over a fraction of the rows.
#pragma once

#include <cstdint>
#include <vector>

#include "models/tree/binning.h"

namespace tabforge::tree {

struct RowGroups {
  BinMatrix bins;                      // one row per group: its first member's bins
  std::vector<std::int32_t> group_of;  // by row
  std::vector<std::int64_t> begin;     // num_groups + 1: group g's rows are
                                       // members[begin[g], begin[g + 1])
  std::vector<std::int32_t> members;   // rows by group, ascending within each group

  std::int64_t num_groups() const { return bins.num_rows; }
};

// Groups the rows of `bins` by equal bin rows, numbered in the order of their first rows; stops
// and returns false as soon as more than `max_groups` groups appear (too few repeats to pay),
// or when there is no feature.
bool GroupEqualRows(const BinMatrix& bins, std::int64_t max_groups, RowGroups& groups);

}  // namespace tabforge::tree
