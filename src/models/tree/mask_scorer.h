// Leaves of a forest of small trees found feature by feature instead of tree by tree, by
// bitmasks (the QuickScorer scheme of Lucchese et al., 2015): a tree keeps a bit per leaf in
// left-to-right order (one 64-bit word, two past 64 leaves), all set at first; every node a row
// does not go left at clears the leaves of its left subtree; the row's leaf is then the lowest
// bit left. The nodes a row goes right at are, for a numeric feature, a prefix of that
// feature's nodes sorted by threshold, so a row reads a run of (threshold, word, mask) triples
// per feature with one branch that is hard to predict (the run's end) instead of one at every
// node of every tree, and instead of a chain of node loads that each wait for the last
// (Leaves; a node whose left subtree spans both words of a tree has a triple for each). For
// blocks of rows, GroupLeaves instead evaluates every node of a tree for eight rows at once,
// without branches, the eight rows' words in vector registers (trees of up to 128 leaves:
// 32-bit quarters of a 128-bit word a row past 32 leaves). The leaves are exactly those
// CompactForest::Leaf gives.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "models/tree/binning.h"
#include "models/tree/compact_forest.h"

namespace tabforge::tree {

class MaskScorer {
 public:
  // The most leaves a tree may have.
  static constexpr int kMaxLeaves = 128;

  // Tables for `forest`; empty (usable() false) when a tree has more than kMaxLeaves leaves.
  void Build(const CompactForest& forest);

  // Leaves and GroupLeaves may be used.
  bool usable() const { return usable_; }
  int numeric_count() const { return numeric_count_; }
  // The scratch words Leaves takes.
  int row_words() const { return static_cast<int>(tree_word_.empty() ? 0 : tree_word_.back()) + 1; }

  // A tree's numeric node for GroupLeaves (the vector passes in mask_scorer.cc read these).
  struct TreeNode {
    float threshold;
    std::int32_t feature;  // numeric feature; | kMissingRight when missing values go right
    std::uint64_t mask;    // leaves 0-63 (leaves 64-127 of a wide tree: tree_high_)
  };
  static constexpr std::int32_t kMissingRight = 1 << 30;

  // A categorical node: a row whose bin is not in its set goes right.
  struct CategoricalNode {
    std::uint64_t mask;  // the tree's leaves that stay possible when the row goes right
    std::int32_t tree;
    std::int32_t feature;
    std::int32_t begin;  // words [begin, end) of bits_: bit b set = bin b goes left
    std::int32_t end;
    std::uint32_t head[2];  // the set's first two words (0 past its end), for bins below 64
  };

  // Rows a group of GroupLeaves takes.
  static constexpr int kGroupRows = 8;
  // Runs of a wide tree's numeric nodes (see wide_runs_).
  static constexpr int kWideRuns = 10;
  // Runs of a wide tree's categorical nodes (see wide_categorical_runs_).
  static constexpr int kCategoricalRuns = 5;

  // The leaves of trees [first_tree, end_tree) for kGroupRows rows at once, each tree's nodes
  // all evaluated without branches (a tree's bitmask per row in registers: eight 32-bit words
  // in one register for a tree of at most 32 leaves, four such registers of quarters for up to
  // 128): values[f * kGroupRows + r] is numeric feature f of row r (NaN for missing),
  // bins[c * kGroupRows + r] categorical feature c's bin of row r (BinMapper::CategoryBin).
  // `words` is scratch of kGroupRows words a tree; leaf[(t - first_tree) * kGroupRows + r] is
  // row r's leaf of tree t (numbered as CompactForest::Leaf's). AVX2 instructions are used
  // where the processor has them, unless `portable`.
  void GroupLeaves(const float* values, const int* bins, int first_tree, int end_tree,
                   std::uint64_t* words, std::int32_t* leaf, bool portable = false) const;
  int num_trees() const { return static_cast<int>(leaf_base_.size()); }

  // The leaves (numbered as CompactForest::Leaf's) of every tree, into leaf[0, num_trees()), for
  // a row whose numeric values are numeric(feature) (NaN for missing) and categorical codes
  // code(feature - numeric_count), codes binned by `mapper`. `words` is scratch of row_words().
  template <typename Numeric, typename Code>
  void Leaves(const BinMapper& mapper, const Numeric& numeric, const Code& code,
              std::uint64_t* words, std::int32_t* leaf) const {
    const int trees = num_trees();
    const int word_count = row_words();
    for (int word = 0; word < word_count; ++word) words[word] = ~std::uint64_t{0};
    for (int feature = 0; feature < numeric_count_; ++feature) {
      const float value = numeric(feature);
      if (value != value) {  // NaN: the nodes whose missing values go right
        for (std::int32_t at = missing_begin_[feature]; at < missing_begin_[feature + 1]; ++at) {
          words[missing_[at].word] &= missing_[at].mask;
        }
        continue;
      }
      // The feature's thresholds ascend and end with +inf, which no value is above.
      const Entry* entry = numeric_.data() + numeric_begin_[feature];
      while (entry->threshold < value) {
        words[entry->word] &= entry->mask;
        ++entry;
      }
    }
    const int categorical = static_cast<int>(narrow_begin_.size()) - 1;
    for (int feature = 0; feature < categorical; ++feature) {
      const std::int32_t narrow_end = narrow_begin_[feature + 1];
      const std::int32_t wide_end = wide_begin_[feature + 1];
      std::int32_t at = narrow_begin_[feature];
      std::int32_t wide = wide_begin_[feature];
      if (at == narrow_end && wide == wide_end) continue;
      const int bin = mapper.feature(numeric_count_ + feature).CategoryBin(code(feature));
      if (static_cast<unsigned>(bin) < 32) {
        // Without a branch: which way a row goes is as good as random to a predictor.
        for (; at < narrow_end; ++at) {
          const NarrowEntry& node = narrow_[at];
          words[node.word] &= node.mask | (0 - std::uint64_t{(node.set >> bin) & 1u});
        }
      } else {
        for (; at < narrow_end; ++at) words[narrow_[at].word] &= narrow_[at].mask;
      }
      for (; wide < wide_end; ++wide) {
        const CategoricalEntry& node = wide_[wide];
        const std::int32_t word = node.begin + bin / 32;
        const bool left = word < node.end && ((bits_[word] >> (bin % 32)) & 1u);
        words[node.word] &= left ? ~std::uint64_t{0} : node.mask;
      }
    }
    // A tree's lowest leaf left: in its first word, or (a tree past 64 leaves whose first word
    // is clear) in its second. A tree of one word always has a bit left there.
    for (int tree = 0; tree < trees; ++tree) {
      const std::int32_t word = tree_word_[tree];
      const std::uint64_t low = words[word];
      const int position =
          low != 0 ? std::countr_zero(low) : 64 + std::countr_zero(words[word + 1]);
      leaf[tree] = leaf_order_[leaf_base_[tree] + position];
    }
  }

 private:
  struct Entry {
    std::uint64_t mask;  // the word's leaves that stay possible when the row goes right
    std::int32_t word;   // of Leaves's words (tree_word_)
    float threshold;     // a numeric node's (unused for missing values)
  };
  // A categorical node of Leaves's tables whose set lies in bins 0-31, one per word its left
  // subtree touches: a row of a bin past 31 goes right.
  struct NarrowEntry {
    std::uint64_t mask;  // as Entry's
    std::int32_t word;
    std::uint32_t set;  // bit b set = bin b goes left
  };
  // A categorical node whose set reaches past bin 31.
  struct CategoricalEntry {
    std::uint64_t mask;  // as Entry's
    std::int32_t word;
    std::int32_t begin;  // words [begin, end) of bits_: bit b set = bin b goes left
    std::int32_t end;
  };

  bool usable_ = false;
  int numeric_count_ = 0;
  // Leaves's tables.
  std::vector<std::int32_t> tree_word_;  // num_trees + 1: a tree's first word; the last, spare
  std::vector<Entry> numeric_;  // per numeric feature, ascending thresholds, then +inf (spare word)
  std::vector<std::int32_t> numeric_begin_;  // numeric feature -> its first entry
  std::vector<Entry> missing_;               // per numeric feature: nodes sending NaN right
  std::vector<std::int32_t> missing_begin_;  // numeric_count + 1
  // Categorical nodes by feature (categorical feature c: [begin[c], begin[c + 1])).
  std::vector<NarrowEntry> narrow_;
  std::vector<std::int32_t> narrow_begin_;
  std::vector<CategoricalEntry> wide_;
  std::vector<std::int32_t> wide_begin_;
  std::vector<std::uint32_t> bits_;
  // Every tree's numeric nodes, tree by tree, each tree's nodes that send missing values left
  // before those that send them right (from tree_missing_right_[tree]).
  std::vector<TreeNode> tree_nodes_;
  std::vector<std::uint64_t> tree_high_;  // beside tree_nodes_: masks of leaves 64-127
  // A tree of over 32 leaves has its numeric nodes in kWideRuns runs: missing values left (then
  // right), each by the leaves it clears: those of one quarter (0-31, 32-63, 64-95 or 96-127;
  // GroupLeaves keeps a quarter of eight rows in one register, so such a node updates one), or
  // of several. wide_runs_[tree_wide_[tree]][k] is run k's first node, [kWideRuns] the end;
  // tree_wide_ is -1 for trees of at most 32 leaves (one 32-bit word a row).
  std::vector<std::array<std::int32_t, kWideRuns + 1>> wide_runs_;
  std::vector<std::int32_t> tree_wide_;
  // A wide tree's categorical nodes in kCategoricalRuns runs, by the quarter they clear (4:
  // several): wide_categorical_runs_[tree_wide_[tree]][k] is run k's first node (of
  // tree_categorical_), [kCategoricalRuns] the end.
  std::vector<std::array<std::int32_t, kCategoricalRuns + 1>> wide_categorical_runs_;
  std::vector<std::int32_t> tree_node_begin_;      // num_trees + 1
  std::vector<std::int32_t> tree_missing_right_;   // num_trees
  std::vector<CategoricalNode> tree_categorical_;  // every tree's categorical nodes, tree by tree
  std::vector<std::uint64_t> tree_categorical_high_;  // beside tree_categorical_
  std::vector<std::int32_t> tree_categorical_begin_;  // num_trees + 1
  std::vector<std::int32_t> leaf_base_;               // tree -> its first entry of leaf_order_
  std::vector<std::int32_t> leaf_order_;  // a tree's leaves left to right, as forest leaves
};

}  // namespace tabforge::tree
