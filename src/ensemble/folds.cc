#include "ensemble/folds.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "core/error.h"
#include "core/random.h"

namespace tabforge::ensemble {
namespace {
constexpr std::uint64_t kFoldStream = 0x666f6c64;  // "fold"
}  // namespace

std::vector<std::int32_t> AssignFolds(std::span<const double> labels, bool stratified, int folds,
                                      std::uint64_t seed, int set) {
  TFG_CHECK(folds >= 2, "{} folds", folds);
  const auto rows = static_cast<std::int64_t>(labels.size());
  // Rows grouped by class (one group without stratification), each group in a random order.
  std::map<double, std::vector<std::pair<double, std::int64_t>>> groups;
  for (std::int64_t row = 0; row < rows; ++row) {
    const double key = RandomUniform(seed, kFoldStream + std::uint64_t(set), row);
    groups[stratified ? labels[row] : 0.0].push_back({key, row});
  }
  std::vector<std::int32_t> fold_of(static_cast<std::size_t>(rows), 0);
  std::int64_t dealt = 0;
  for (auto& [label, members] : groups) {
    std::sort(members.begin(), members.end());
    for (const auto& [key, row] : members)
      fold_of[row] = static_cast<std::int32_t>(dealt++ % folds);
  }
  return fold_of;
}

std::vector<std::uint8_t> HoldOutRows(std::span<const double> strata, double fraction,
                                      std::uint64_t seed, std::uint64_t stream) {
  std::map<double, std::vector<std::pair<double, std::int64_t>>> groups;
  for (std::size_t row = 0; row < strata.size(); ++row) {
    groups[strata[row]].push_back(
        {RandomUniform(seed, stream, row), static_cast<std::int64_t>(row)});
  }
  std::vector<std::uint8_t> held(strata.size(), 0);
  for (auto& [stratum, members] : groups) {
    std::sort(members.begin(), members.end());
    const auto take =
        std::min(members.size(), static_cast<std::size_t>(std::llround(fraction * members.size())));
    for (std::size_t at = 0; at < take; ++at) held[members[at].second] = 1;
  }
  return held;
}

}  // namespace tabforge::ensemble
