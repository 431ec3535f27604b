#include "models/tree/row_groups.h"

#include <bit>
#include <cstring>

#include "core/random.h"

namespace tabforge::tree {

namespace {

template <typename Bin>
bool GroupRows(const std::vector<Bin>& matrix, std::int64_t rows, int features,
               std::int64_t max_groups, RowGroups& groups, std::vector<Bin>& kept) {
  if (features == 0) return false;  // nothing to compare: grouping gains nothing
  const std::size_t row_bytes = sizeof(Bin) * static_cast<std::size_t>(features);
  auto row_at = [&](const std::vector<Bin>& source, std::int64_t row) {
    return source.data() + static_cast<std::size_t>(row) * features;
  };
  // The row's bytes mixed 8 at a time (the last word zero-padded).
  auto hash_of = [&](const Bin* bins) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(bins);
    std::uint64_t hash = row_bytes;
    std::size_t at = 0;
    for (; at + 8 <= row_bytes; at += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes + at, 8);
      hash = Mix64(hash ^ word);
    }
    if (at < row_bytes) {
      std::uint64_t word = 0;
      std::memcpy(&word, bytes + at, row_bytes - at);
      hash = Mix64(hash ^ word);
    }
    return hash;
  };
  // Open addressing over group numbers, at most half full.
  const std::size_t capacity = std::bit_ceil(static_cast<std::size_t>(2 * max_groups + 2));
  std::vector<std::int32_t> table(capacity, -1);
  std::vector<std::int32_t> first_row;
  groups.group_of.resize(static_cast<std::size_t>(rows));
  for (std::int64_t row = 0; row < rows; ++row) {
    const Bin* bins = row_at(matrix, row);
    std::size_t at = hash_of(bins) & (capacity - 1);
    while (table[at] >= 0 &&
           std::memcmp(row_at(matrix, first_row[table[at]]), bins, row_bytes) != 0) {
      at = (at + 1) & (capacity - 1);
    }
    if (table[at] < 0) {
      if (static_cast<std::int64_t>(first_row.size()) == max_groups) return false;
      table[at] = static_cast<std::int32_t>(first_row.size());
      first_row.push_back(static_cast<std::int32_t>(row));
    }
    groups.group_of[row] = table[at];
  }
  const std::int64_t count = static_cast<std::int64_t>(first_row.size());
  kept.resize(static_cast<std::size_t>(count) * features);
  for (std::int64_t group = 0; group < count; ++group) {
    std::memcpy(kept.data() + static_cast<std::size_t>(group) * features,
                row_at(matrix, first_row[group]), row_bytes);
  }
  groups.begin.assign(static_cast<std::size_t>(count) + 1, 0);
  for (std::int32_t group : groups.group_of) ++groups.begin[group + 1];
  for (std::int64_t group = 0; group < count; ++group) {
    groups.begin[group + 1] += groups.begin[group];
  }
  groups.members.resize(static_cast<std::size_t>(rows));
  std::vector<std::int64_t> next(groups.begin.begin(), groups.begin.end() - 1);
  for (std::int64_t row = 0; row < rows; ++row) {
    groups.members[next[groups.group_of[row]]++] = static_cast<std::int32_t>(row);
  }
  groups.bins.num_rows = count;
  groups.bins.num_features = features;
  return true;
}

}  // namespace

bool GroupEqualRows(const BinMatrix& bins, std::int64_t max_groups, RowGroups& groups) {
  groups = RowGroups{};
  const bool grouped = bins.wide() ? GroupRows(bins.bins16, bins.num_rows, bins.num_features,
                                               max_groups, groups, groups.bins.bins16)
                                   : GroupRows(bins.bins8, bins.num_rows, bins.num_features,
                                               max_groups, groups, groups.bins.bins8);
  if (!grouped) groups = RowGroups{};
  return grouped;
}

}  // namespace tabforge::tree
