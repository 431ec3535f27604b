#include "models/tree/mask_scorer.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace tabforge::tree {
namespace {

// Leaves below `root` (a node, or ~leaf), or kMaxLeaves + 1 once past kMaxLeaves.
int CountLeaves(const CompactForest& forest, std::int32_t root) {
  int leaves = 0;
  std::vector<std::int32_t> pending = {root};
  while (!pending.empty() && leaves <= MaskScorer::kMaxLeaves) {
    const std::int32_t at = pending.back();
    pending.pop_back();
    if (at < 0) {
      ++leaves;
      continue;
    }
    const CompactForest::Node& node = forest.nodes()[static_cast<std::size_t>(at)];
    pending.push_back(node.left);
    pending.push_back(node.right);
  }
  return leaves;
}

}  // namespace

void MaskScorer::Build(const CompactForest& forest) {
  *this = MaskScorer();
  const int trees = forest.num_trees();
  for (int tree = 0; tree < trees; ++tree) {
    if (CountLeaves(forest, forest.Root(tree)) > kMaxLeaves) return;
  }
  numeric_count_ = forest.numeric_count();
  struct NumericNode {
    float threshold;
    Entry entry;
  };
  std::vector<std::vector<NumericNode>> numeric(static_cast<std::size_t>(numeric_count_));
  std::vector<std::vector<Entry>> missing(static_cast<std::size_t>(numeric_count_));
  leaf_base_.assign(static_cast<std::size_t>(trees), 0);
  for (int tree = 0; tree < trees; ++tree) {
    const auto base = static_cast<std::int32_t>(leaf_order_.size());
    leaf_base_[static_cast<std::size_t>(tree)] = base;
    // In order: a node's left subtree's leaves, then its right subtree's. Returns the first
    // leaf position (from base) below `at` and, through `count`, how many there are.
    auto visit = [&](auto& self, std::int32_t at, int& count) -> int {
      if (at < 0) {
        leaf_order_.push_back(~at);
        count = 1;
        return static_cast<int>(leaf_order_.size()) - 1 - base;
      }
      const CompactForest::Node& node = forest.nodes()[static_cast<std::size_t>(at)];
      int left_count = 0;
      int right_count = 0;
      const int first = self(self, node.left, left_count);
      self(self, node.right, right_count);
      count = left_count + right_count;
      // Going right rules out the left subtree's leaves [first, first + left_count).
      const std::uint64_t left_bits =
          (left_count == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << left_count) - 1)) << first;
      const Entry entry{~left_bits, tree};
      const int feature = node.feature & CompactForest::kFeatureMask;
      if (node.feature & CompactForest::kCategorical) {
        const CompactForest::Categories& set =
            forest.categories()[static_cast<std::size_t>(node.payload)];
        const auto begin = static_cast<std::int32_t>(bits_.size());
        bits_.insert(bits_.end(), forest.bits().begin() + set.begin,
                     forest.bits().begin() + set.end);
        categorical_.push_back(
            {entry.mask, tree, feature, begin, static_cast<std::int32_t>(bits_.size())});
      } else {
        numeric[static_cast<std::size_t>(feature)].push_back({node.threshold, entry});
        if (!(node.feature & CompactForest::kDefaultLeft)) {
          missing[static_cast<std::size_t>(feature)].push_back(entry);
        }
      }
      return first;
    };
    int count = 0;
    visit(visit, forest.Root(tree), count);
  }
  numeric_begin_.assign(static_cast<std::size_t>(numeric_count_) + 1, 0);
  missing_begin_.assign(static_cast<std::size_t>(numeric_count_) + 1, 0);
  const Entry spare{~std::uint64_t{0}, trees};  // words[trees] is scratch
  for (int feature = 0; feature < numeric_count_; ++feature) {
    std::vector<NumericNode>& nodes = numeric[static_cast<std::size_t>(feature)];
    std::stable_sort(nodes.begin(), nodes.end(), [](const NumericNode& a, const NumericNode& b) {
      return a.threshold < b.threshold;
    });
    numeric_begin_[static_cast<std::size_t>(feature)] =
        static_cast<std::int32_t>(thresholds_.size());
    for (const NumericNode& node : nodes) {
      thresholds_.push_back(node.threshold);
      numeric_.push_back(node.entry);
    }
    thresholds_.push_back(std::numeric_limits<float>::infinity());
    numeric_.push_back(spare);
    const std::vector<Entry>& sent_right = missing[static_cast<std::size_t>(feature)];
    missing_.insert(missing_.end(), sent_right.begin(), sent_right.end());
    missing_begin_[static_cast<std::size_t>(feature) + 1] =
        static_cast<std::int32_t>(missing_.size());
  }
  numeric_begin_[static_cast<std::size_t>(numeric_count_)] =
      static_cast<std::int32_t>(thresholds_.size());
  std::stable_sort(
      categorical_.begin(), categorical_.end(),
      [](const CategoricalNode& a, const CategoricalNode& b) { return a.feature < b.feature; });
  usable_ = true;
}

}  // namespace tabforge::tree
