#include "models/tree/mask_scorer.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define TFG_MASK_AVX2 1
#endif

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

// Leaves 32q to 32q + 31's part (q = 0-3) of a wide tree node's masks of leaves 0-63 (`mask`)
// and 64-127 (`high`).
std::uint32_t QuarterMask(std::uint64_t mask, std::uint64_t high, int q) {
  return static_cast<std::uint32_t>((q < 2 ? mask : high) >> (32 * (q & 1)));
}

// The bits of leaves [first, first + count) in the 64-bit word of leaves [base, base + 64).
std::uint64_t LeafBits(int first, int count, int base) {
  const int low = std::max(first, base);
  const int high = std::min(first + count, base + 64);
  if (low >= high) return 0;
  const int width = high - low;
  return (width == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << width) - 1)) << (low - base);
}

}  // namespace

void MaskScorer::Build(const CompactForest& forest) {
  *this = MaskScorer();
  const int trees = forest.num_trees();
  // Leaves's words: one per tree, two for a tree past 64 leaves.
  std::vector<std::int32_t> tree_word(static_cast<std::size_t>(trees) + 1, 0);
  for (int tree = 0; tree < trees; ++tree) {
    const int leaves = CountLeaves(forest, forest.Root(tree));
    if (leaves > kMaxLeaves) return;
    tree_word[static_cast<std::size_t>(tree) + 1] =
        tree_word[static_cast<std::size_t>(tree)] + (leaves > 64 ? 2 : 1);
  }
  tree_word_ = std::move(tree_word);
  numeric_count_ = forest.numeric_count();
  std::vector<std::vector<Entry>> numeric(static_cast<std::size_t>(numeric_count_));
  std::vector<std::vector<Entry>> missing(static_cast<std::size_t>(numeric_count_));
  // Categorical nodes by categorical feature (numbered from 0).
  std::vector<std::vector<NarrowEntry>> narrow_nodes;
  std::vector<std::vector<CategoricalEntry>> wide_nodes;
  struct WideNode {
    TreeNode node;
    std::uint64_t high;  // its mask of leaves 64-127
    int run = 0;         // its run in the tree (see wide_runs_)
  };
  std::vector<WideNode> tree_nodes;  // the tree's, before they are ordered
  leaf_base_.assign(static_cast<std::size_t>(trees), 0);
  tree_node_begin_.assign(static_cast<std::size_t>(trees) + 1, 0);
  tree_missing_right_.assign(static_cast<std::size_t>(trees), 0);
  tree_wide_.assign(static_cast<std::size_t>(trees), -1);
  tree_categorical_begin_.assign(static_cast<std::size_t>(trees) + 1, 0);
  for (int tree = 0; tree < trees; ++tree) {
    const auto base = static_cast<std::int32_t>(leaf_order_.size());
    leaf_base_[static_cast<std::size_t>(tree)] = base;
    const std::int32_t word = tree_word_[static_cast<std::size_t>(tree)];
    const bool two_words = tree_word_[static_cast<std::size_t>(tree) + 1] - word == 2;
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
      // Going right rules out the left subtree's leaves [first, first + left_count): in words
      // of leaves 0-63 and 64-127. Leaves's entries: one per word whose leaves it clears.
      const std::uint64_t low = ~LeafBits(first, left_count, 0);
      const std::uint64_t high = ~LeafBits(first, left_count, 64);
      Entry entries[2];
      int entry_count = 0;
      if (low != ~std::uint64_t{0}) entries[entry_count++] = {low, word, 0.0f};
      if (two_words && high != ~std::uint64_t{0}) entries[entry_count++] = {high, word + 1, 0.0f};
      const int feature = node.feature & CompactForest::kFeatureMask;
      if (node.feature & CompactForest::kCategorical) {
        const CompactForest::Categories& set =
            forest.categories()[static_cast<std::size_t>(node.payload)];
        const auto begin = static_cast<std::int32_t>(bits_.size());
        bits_.insert(bits_.end(), forest.bits().begin() + set.begin,
                     forest.bits().begin() + set.end);
        const auto end = static_cast<std::int32_t>(bits_.size());
        const std::uint32_t head[2] = {
            begin < end ? bits_[static_cast<std::size_t>(begin)] : 0u,
            begin + 1 < end ? bits_[static_cast<std::size_t>(begin) + 1] : 0u};
        tree_categorical_.push_back({low, tree, feature, begin, end, {head[0], head[1]}});
        tree_categorical_high_.push_back(high);
        const auto index = static_cast<std::size_t>(feature - numeric_count_);
        if (index >= narrow_nodes.size()) {
          narrow_nodes.resize(index + 1);
          wide_nodes.resize(index + 1);
        }
        for (int e = 0; e < entry_count; ++e) {
          if (end - begin <= 1) {
            narrow_nodes[index].push_back({entries[e].mask, entries[e].word, head[0]});
          } else {
            wide_nodes[index].push_back({entries[e].mask, entries[e].word, begin, end});
          }
        }
      } else {
        for (int e = 0; e < entry_count; ++e) {
          Entry entry = entries[e];
          entry.threshold = node.threshold;
          numeric[static_cast<std::size_t>(feature)].push_back(entry);
          if (!(node.feature & CompactForest::kDefaultLeft)) {
            missing[static_cast<std::size_t>(feature)].push_back(entry);
          }
        }
        tree_nodes.push_back(
            {{node.threshold,
              feature | ((node.feature & CompactForest::kDefaultLeft) ? 0 : kMissingRight), low},
             high});
      }
      return first;
    };
    int count = 0;
    tree_nodes.clear();
    visit(visit, forest.Root(tree), count);
    const bool wide_tree = count > 32;
    // The nodes of a tree may be taken in any order (clearing bits commutes): those sending
    // missing values left first, so that each kind is one comparison (GroupLeaves); in a tree
    // of over 32 leaves, each kind by the 32-leaf quarter its nodes clear (4: several).
    for (WideNode& wide : tree_nodes) {
      wide.run = (wide.node.feature & kMissingRight) != 0 ? kWideRuns / 2 : 0;
      if (!wide_tree) continue;
      int touched = 0;
      int quarter = 0;
      for (int q = 0; q < 4; ++q) {
        if (QuarterMask(wide.node.mask, wide.high, q) != ~std::uint32_t{0}) {
          ++touched;
          quarter = q;
        }
      }
      wide.run += touched == 1 ? quarter : 4;
    }
    std::stable_sort(tree_nodes.begin(), tree_nodes.end(),
                     [](const WideNode& a, const WideNode& b) { return a.run < b.run; });
    // Where each run starts: the nodes before it, counted.
    std::array<std::int32_t, kWideRuns + 1> runs{};
    for (const WideNode& wide : tree_nodes) ++runs[static_cast<std::size_t>(wide.run) + 1];
    runs[0] = static_cast<std::int32_t>(tree_nodes_.size());
    for (int run = 1; run <= kWideRuns; ++run) runs[run] += runs[run - 1];
    tree_missing_right_[static_cast<std::size_t>(tree)] = runs[kWideRuns / 2];
    if (wide_tree) {
      tree_wide_[static_cast<std::size_t>(tree)] = static_cast<std::int32_t>(wide_runs_.size());
      wide_runs_.push_back(runs);
      // The tree's categorical nodes likewise, by the quarter they clear (4: several).
      const std::size_t categorical_first = tree_categorical_begin_[static_cast<std::size_t>(tree)];
      std::vector<std::pair<int, std::size_t>> by_quarter;  // (run, node)
      for (std::size_t at = categorical_first; at < tree_categorical_.size(); ++at) {
        int touched = 0;
        int quarter = 0;
        for (int q = 0; q < 4; ++q) {
          if (QuarterMask(tree_categorical_[at].mask, tree_categorical_high_[at], q) !=
              ~std::uint32_t{0}) {
            ++touched;
            quarter = q;
          }
        }
        by_quarter.push_back({touched == 1 ? quarter : 4, at});
      }
      std::stable_sort(by_quarter.begin(), by_quarter.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<CategoricalNode> nodes;
      std::vector<std::uint64_t> highs;
      std::array<std::int32_t, kCategoricalRuns + 1> categorical_runs{};
      for (const auto& [run, at] : by_quarter) {
        nodes.push_back(tree_categorical_[at]);
        highs.push_back(tree_categorical_high_[at]);
        ++categorical_runs[static_cast<std::size_t>(run) + 1];
      }
      std::copy(nodes.begin(), nodes.end(), tree_categorical_.begin() + categorical_first);
      std::copy(highs.begin(), highs.end(), tree_categorical_high_.begin() + categorical_first);
      categorical_runs[0] = static_cast<std::int32_t>(categorical_first);
      for (int run = 1; run <= kCategoricalRuns; ++run) {
        categorical_runs[run] += categorical_runs[run - 1];
      }
      wide_categorical_runs_.push_back(categorical_runs);
    }
    for (const WideNode& wide : tree_nodes) {
      tree_nodes_.push_back(wide.node);
      tree_high_.push_back(wide.high);
    }
    tree_node_begin_[static_cast<std::size_t>(tree) + 1] =
        static_cast<std::int32_t>(tree_nodes_.size());
    tree_categorical_begin_[static_cast<std::size_t>(tree) + 1] =
        static_cast<std::int32_t>(tree_categorical_.size());
  }
  numeric_begin_.assign(static_cast<std::size_t>(numeric_count_) + 1, 0);
  missing_begin_.assign(static_cast<std::size_t>(numeric_count_) + 1, 0);
  // The scratch word, after each feature's thresholds.
  const Entry spare{~std::uint64_t{0}, tree_word_.back(), std::numeric_limits<float>::infinity()};
  for (int feature = 0; feature < numeric_count_; ++feature) {
    std::vector<Entry>& nodes = numeric[static_cast<std::size_t>(feature)];
    std::stable_sort(nodes.begin(), nodes.end(),
                     [](const Entry& a, const Entry& b) { return a.threshold < b.threshold; });
    numeric_begin_[static_cast<std::size_t>(feature)] = static_cast<std::int32_t>(numeric_.size());
    numeric_.insert(numeric_.end(), nodes.begin(), nodes.end());
    numeric_.push_back(spare);
    const std::vector<Entry>& sent_right = missing[static_cast<std::size_t>(feature)];
    missing_.insert(missing_.end(), sent_right.begin(), sent_right.end());
    missing_begin_[static_cast<std::size_t>(feature) + 1] =
        static_cast<std::int32_t>(missing_.size());
  }
  numeric_begin_[static_cast<std::size_t>(numeric_count_)] =
      static_cast<std::int32_t>(numeric_.size());
  narrow_begin_.assign(1, 0);
  wide_begin_.assign(1, 0);
  for (std::size_t index = 0; index < narrow_nodes.size(); ++index) {
    narrow_.insert(narrow_.end(), narrow_nodes[index].begin(), narrow_nodes[index].end());
    wide_.insert(wide_.end(), wide_nodes[index].begin(), wide_nodes[index].end());
    narrow_begin_.push_back(static_cast<std::int32_t>(narrow_.size()));
    wide_begin_.push_back(static_cast<std::int32_t>(wide_.size()));
  }
  usable_ = true;
}

namespace {

#ifdef TFG_MASK_AVX2
// In the rows whose lanes (eight 32-bit lanes, all ones or zero) go right, keeps only the
// leaves of `mask`'s low 32 bits in `word` (eight rows' 32-bit words): word &= ~(lanes & ~mask),
// with the mask broadcast as it is (no scalar complement on the node's path).
__attribute__((target("avx2"))) inline void ClearNarrow(__m256i lanes, std::uint64_t mask,
                                                        __m256i& word) {
  const __m256i kept = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(mask)));
  word = _mm256_andnot_si256(_mm256_andnot_si256(kept, lanes), word);
}

// The rows (eight 32-bit lanes: all ones or zero) that numeric node `node` sends right, for
// nodes whose missing values go left (kPredicate _CMP_GT_OQ: above the threshold, NaN not) or
// right (_CMP_NLE_UQ: not at or below it, NaN too).
template <int kPredicate>
__attribute__((target("avx2"))) inline __m256i NumericRight(const MaskScorer::TreeNode& node,
                                                            const float* values) {
  const std::uint32_t feature =
      static_cast<std::uint32_t>(node.feature) & (MaskScorer::kMissingRight - 1);
  const __m256 value = _mm256_loadu_ps(values + std::size_t{feature} * MaskScorer::kGroupRows);
  return _mm256_castps_si256(_mm256_cmp_ps(value, _mm256_set1_ps(node.threshold), kPredicate));
}

// The rows categorical node `node` sends right: those whose bin's bit is clear. A set of one or
// two words is tested in the node's copy of them; a longer set is read word by word (a gather).
__attribute__((target("avx2"))) inline __m256i CategoricalRight(
    const MaskScorer::CategoricalNode& node, const int* bins, int numeric_count,
    const std::uint32_t* bits) {
  const __m256i bin = _mm256_loadu_si256(
      reinterpret_cast<const __m256i*>(bins + (node.feature - numeric_count) * 8));
  __m256i word;
  if (node.end - node.begin <= 1) {
    // A set of bins 0-31: the row's bit (none past bin 31: a shift by 32 or more gives 0).
    const __m256i bit = _mm256_sllv_epi32(_mm256_set1_epi32(1), bin);
    const __m256i left = _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(node.head[0])), bit);
    return _mm256_cmpeq_epi32(left, _mm256_setzero_si256());
  }
  if (node.end - node.begin == 2) {
    // A shift by 32 or more (bins past the word, and bin - 32 below 0 as unsigned) gives 0.
    const __m256i low = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(node.head[0])), bin);
    const __m256i high = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(node.head[1])),
                                           _mm256_sub_epi32(bin, _mm256_set1_epi32(32)));
    word = _mm256_or_si256(low, high);
  } else {
    const __m256i at = _mm256_add_epi32(_mm256_set1_epi32(node.begin), _mm256_srli_epi32(bin, 5));
    const __m256i inside = _mm256_cmpgt_epi32(_mm256_set1_epi32(node.end), at);
    const __m256i loaded = _mm256_mask_i32gather_epi32(
        _mm256_setzero_si256(), reinterpret_cast<const int*>(bits), at, inside, 4);
    word = _mm256_srlv_epi32(loaded, _mm256_and_si256(bin, _mm256_set1_epi32(31)));
  }
  const __m256i bit = _mm256_and_si256(word, _mm256_set1_epi32(1));
  return _mm256_cmpeq_epi32(bit, _mm256_setzero_si256());
}

// The position of each lane's lowest set bit (lanes that are zero give -127): the lowest bit
// alone, a power of two, converts to a float exactly, and its exponent is the position (2^31
// converts to -2^31, whose exponent is the same).
__attribute__((target("avx2"))) inline __m256i LowestBit(__m256i word) {
  const __m256i lowest = _mm256_and_si256(word, _mm256_sub_epi32(_mm256_setzero_si256(), word));
  const __m256i exponent = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(lowest)), 23);
  return _mm256_sub_epi32(_mm256_and_si256(exponent, _mm256_set1_epi32(0xff)),
                          _mm256_set1_epi32(127));
}

// The eight rows' leaves: order[position] of each lane.
__attribute__((target("avx2"))) inline void StoreLeaves(const std::int32_t* order, __m256i position,
                                                        std::int32_t* leaf) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(leaf),
                      _mm256_i32gather_epi32(reinterpret_cast<const int*>(order), position, 4));
}

// MaskScorer::GroupLeaves's pass over one tree of at most 32 leaves for its kGroupRows (8) rows:
// every node clears, in the rows it sends right, its left subtree's leaves; the eight words are
// the 32-bit lanes of one register. leaf[r] receives row r's leaf, order[lowest bit left].
__attribute__((target("avx2"))) void NarrowTreeWordsAvx2(
    const MaskScorer::TreeNode* node, const MaskScorer::TreeNode* right_nodes,
    const MaskScorer::TreeNode* end, const MaskScorer::CategoricalNode* categorical,
    const MaskScorer::CategoricalNode* categorical_end, const float* values, const int* bins,
    int numeric_count, const std::uint32_t* bits, const std::int32_t* order, std::int32_t* leaf) {
  static_assert(MaskScorer::kGroupRows == 8, "eight lanes");
  __m256i word = _mm256_set1_epi32(-1);
  for (; node < right_nodes; ++node) {
    ClearNarrow(NumericRight<_CMP_GT_OQ>(*node, values), node->mask, word);
  }
  for (; node < end; ++node) {
    ClearNarrow(NumericRight<_CMP_NLE_UQ>(*node, values), node->mask, word);
  }
  for (; categorical < categorical_end; ++categorical) {
    ClearNarrow(CategoricalRight(*categorical, bins, numeric_count, bits), categorical->mask, word);
  }
  // A row of a tree always has a leaf left.
  StoreLeaves(order, LowestBit(word), leaf);
}

// In the rows whose lanes go right, clears a wide tree node's leaves (`mask`: of leaves 0-63,
// `high`: 64-127): kQuarter 0-3, a node clearing leaves of that quarter only (one register of
// eight 32-bit words); 4, of several (all four registers).
template <int kQuarter>
__attribute__((target("avx2"))) inline void ClearQuarters(__m256i lanes, std::uint64_t mask,
                                                          std::uint64_t high, __m256i& q0,
                                                          __m256i& q1, __m256i& q2, __m256i& q3) {
  if constexpr (kQuarter == 0) {
    ClearNarrow(lanes, QuarterMask(mask, 0, 0), q0);
  } else if constexpr (kQuarter == 1) {
    ClearNarrow(lanes, QuarterMask(mask, 0, 1), q1);
  } else if constexpr (kQuarter == 2) {
    ClearNarrow(lanes, QuarterMask(0, high, 2), q2);
  } else if constexpr (kQuarter == 3) {
    ClearNarrow(lanes, QuarterMask(0, high, 3), q3);
  } else {
    ClearNarrow(lanes, QuarterMask(mask, high, 0), q0);
    ClearNarrow(lanes, QuarterMask(mask, high, 1), q1);
    ClearNarrow(lanes, QuarterMask(mask, high, 2), q2);
    ClearNarrow(lanes, QuarterMask(mask, high, 3), q3);
  }
}

// One run of a wide tree's numeric nodes, compared by kPredicate (as NumericRight's), clearing
// leaves as ClearQuarters<kQuarter> does.
template <int kPredicate, int kQuarter>
__attribute__((target("avx2"))) inline void QuarterRun(const MaskScorer::TreeNode* node,
                                                       const MaskScorer::TreeNode* end,
                                                       const std::uint64_t* node_high,
                                                       const float* values, __m256i& q0,
                                                       __m256i& q1, __m256i& q2, __m256i& q3) {
  for (; node < end; ++node, ++node_high) {
    ClearQuarters<kQuarter>(NumericRight<kPredicate>(*node, values), node->mask, *node_high, q0, q1,
                            q2, q3);
  }
}

// One run of a wide tree's categorical nodes, likewise (`high`: their masks of leaves 64-127).
template <int kQuarter>
__attribute__((target("avx2"))) inline void CategoricalQuarterRun(
    const MaskScorer::CategoricalNode* node, const MaskScorer::CategoricalNode* end,
    const std::uint64_t* high, const int* bins, int numeric_count, const std::uint32_t* bits,
    __m256i& q0, __m256i& q1, __m256i& q2, __m256i& q3) {
  for (; node < end; ++node, ++high) {
    ClearQuarters<kQuarter>(CategoricalRight(*node, bins, numeric_count, bits), node->mask, *high,
                            q0, q1, q2, q3);
  }
}

// The same for a tree of 33-128 leaves: the eight rows' words of leaves 32q to 32q + 31 in
// register q (0-3), its numeric nodes in the runs that start at runs[0 .. kWideRuns - 1]
// (runs[kWideRuns]: the end; MaskScorer's wide_runs_), its categorical nodes likewise in
// categorical_runs (wide_categorical_runs_), node_high and categorical_high their masks of
// leaves 64-127. leaf[r] receives row r's leaf, order[lowest bit left].
__attribute__((target("avx2"))) void WideTreeWordsAvx2(
    const MaskScorer::TreeNode* const* runs, const std::uint64_t* node_high,
    const MaskScorer::CategoricalNode* const* categorical_runs,
    const std::uint64_t* categorical_high, const float* values, const int* bins, int numeric_count,
    const std::uint32_t* bits, const std::int32_t* order, std::int32_t* leaf) {
  static_assert(MaskScorer::kWideRuns == 10, "two sides of five runs");
  static_assert(MaskScorer::kCategoricalRuns == 5, "four quarters, then several");
  __m256i q0 = _mm256_set1_epi32(-1);
  __m256i q1 = q0;
  __m256i q2 = q0;
  __m256i q3 = q0;
  auto high = [&](int run) { return node_high + (runs[run] - runs[0]); };
  QuarterRun<_CMP_GT_OQ, 0>(runs[0], runs[1], high(0), values, q0, q1, q2, q3);
  QuarterRun<_CMP_GT_OQ, 1>(runs[1], runs[2], high(1), values, q0, q1, q2, q3);
  QuarterRun<_CMP_GT_OQ, 2>(runs[2], runs[3], high(2), values, q0, q1, q2, q3);
  QuarterRun<_CMP_GT_OQ, 3>(runs[3], runs[4], high(3), values, q0, q1, q2, q3);
  QuarterRun<_CMP_GT_OQ, 4>(runs[4], runs[5], high(4), values, q0, q1, q2, q3);
  QuarterRun<_CMP_NLE_UQ, 0>(runs[5], runs[6], high(5), values, q0, q1, q2, q3);
  QuarterRun<_CMP_NLE_UQ, 1>(runs[6], runs[7], high(6), values, q0, q1, q2, q3);
  QuarterRun<_CMP_NLE_UQ, 2>(runs[7], runs[8], high(7), values, q0, q1, q2, q3);
  QuarterRun<_CMP_NLE_UQ, 3>(runs[8], runs[9], high(8), values, q0, q1, q2, q3);
  QuarterRun<_CMP_NLE_UQ, 4>(runs[9], runs[10], high(9), values, q0, q1, q2, q3);
  auto categorical_run = [&](int run) {
    return categorical_high + (categorical_runs[run] - categorical_runs[0]);
  };
  CategoricalQuarterRun<0>(categorical_runs[0], categorical_runs[1], categorical_run(0), bins,
                           numeric_count, bits, q0, q1, q2, q3);
  CategoricalQuarterRun<1>(categorical_runs[1], categorical_runs[2], categorical_run(1), bins,
                           numeric_count, bits, q0, q1, q2, q3);
  CategoricalQuarterRun<2>(categorical_runs[2], categorical_runs[3], categorical_run(2), bins,
                           numeric_count, bits, q0, q1, q2, q3);
  CategoricalQuarterRun<3>(categorical_runs[3], categorical_runs[4], categorical_run(3), bins,
                           numeric_count, bits, q0, q1, q2, q3);
  CategoricalQuarterRun<4>(categorical_runs[4], categorical_runs[5], categorical_run(4), bins,
                           numeric_count, bits, q0, q1, q2, q3);
  // A row's leaf: the lowest bit left in its first quarter that has one.
  const __m256i zero = _mm256_setzero_si256();
  __m256i position = _mm256_add_epi32(LowestBit(q3), _mm256_set1_epi32(96));
  position = _mm256_blendv_epi8(_mm256_add_epi32(LowestBit(q2), _mm256_set1_epi32(64)), position,
                                _mm256_cmpeq_epi32(q2, zero));
  position = _mm256_blendv_epi8(_mm256_add_epi32(LowestBit(q1), _mm256_set1_epi32(32)), position,
                                _mm256_cmpeq_epi32(q1, zero));
  position = _mm256_blendv_epi8(LowestBit(q0), position, _mm256_cmpeq_epi32(q0, zero));
  StoreLeaves(order, position, leaf);
}
#endif

// One tree's categorical nodes without vector instructions.
// For a wide tree (over 32 leaves), `high` holds the nodes' masks of leaves 64-127 and
// words[kGroupRows + r] row r's word of them; null otherwise.
void TreeCategoricalWordsPortable(const MaskScorer::CategoricalNode* node,
                                  const MaskScorer::CategoricalNode* end, const int* bins,
                                  int numeric_count, const std::uint32_t* bits,
                                  const std::uint64_t* high, std::uint64_t* words) {
  constexpr int kRows = MaskScorer::kGroupRows;
  for (; node < end; ++node) {
    const int* row_bins = bins + (node->feature - numeric_count) * kRows;
    for (int row = 0; row < kRows; ++row) {
      const int bin = row_bins[row];
      const std::int32_t word = node->begin + bin / 32;
      const bool left = word < node->end && ((bits[word] >> (bin % 32)) & 1u);
      if (left) continue;
      words[row] &= node->mask;
      if (high != nullptr) words[kRows + row] &= *high;
    }
    if (high != nullptr) ++high;
  }
}

// The same without vector instructions (`high` as for TreeCategoricalWordsPortable).
void TreeWordsPortable(const MaskScorer::TreeNode* node, const MaskScorer::TreeNode* end,
                       const float* values, const std::uint64_t* high, std::uint64_t* words) {
  constexpr int kRows = MaskScorer::kGroupRows;
  for (; node < end; ++node) {
    const float* row_values = values + (node->feature & (MaskScorer::kMissingRight - 1)) * kRows;
    const bool missing_goes_right = (node->feature & MaskScorer::kMissingRight) != 0;
    for (int row = 0; row < kRows; ++row) {
      const float value = row_values[row];
      const bool right = node->threshold < value || (value != value && missing_goes_right);
      if (!right) continue;
      words[row] &= node->mask;
      if (high != nullptr) words[kRows + row] &= *high;
    }
    if (high != nullptr) ++high;
  }
}

}  // namespace

void MaskScorer::GroupLeaves(const float* values, const int* bins, int first_tree, int end_tree,
                             std::uint64_t* words, std::int32_t* leaf, bool portable) const {
  constexpr int kRows = kGroupRows;
#ifdef TFG_MASK_AVX2
  static const bool supported = __builtin_cpu_supports("avx2");
  const bool avx2 = supported && !portable;
#else
  (void)portable;
  constexpr bool avx2 = false;
#endif
  for (int tree = first_tree; tree < end_tree; ++tree) {
    const std::int64_t slot = std::int64_t(tree - first_tree) * kRows;  // of words and leaf
    const TreeNode* first = tree_nodes_.data() + tree_node_begin_[tree];
    const TreeNode* end = tree_nodes_.data() + tree_node_begin_[tree + 1];
    const CategoricalNode* first_categorical =
        tree_categorical_.data() + tree_categorical_begin_[tree];
    const CategoricalNode* end_categorical =
        tree_categorical_.data() + tree_categorical_begin_[tree + 1];
    const std::int32_t* order = leaf_order_.data() + leaf_base_[tree];
    if (tree_wide_[tree] >= 0) {
      const std::uint64_t* node_high = tree_high_.data() + tree_node_begin_[tree];
      const std::uint64_t* categorical_high =
          tree_categorical_high_.data() + tree_categorical_begin_[tree];
      if (avx2) {
#ifdef TFG_MASK_AVX2
        const std::array<std::int32_t, kWideRuns + 1>& bounds = wide_runs_[tree_wide_[tree]];
        const TreeNode* runs[kWideRuns + 1];
        for (int run = 0; run <= kWideRuns; ++run) runs[run] = tree_nodes_.data() + bounds[run];
        const std::array<std::int32_t, kCategoricalRuns + 1>& categorical_bounds =
            wide_categorical_runs_[tree_wide_[tree]];
        const CategoricalNode* categorical_runs[kCategoricalRuns + 1];
        for (int run = 0; run <= kCategoricalRuns; ++run) {
          categorical_runs[run] = tree_categorical_.data() + categorical_bounds[run];
        }
        WideTreeWordsAvx2(runs, node_high, categorical_runs, categorical_high, values, bins,
                          numeric_count_, bits_.data(), order, leaf + slot);
#endif
      } else {
        // Two words a row: leaves 0-63 in wide[r], 64-127 in wide[kRows + r].
        std::uint64_t wide[2 * kRows];
        std::fill(wide, wide + 2 * kRows, ~std::uint64_t{0});
        TreeWordsPortable(first, end, values, node_high, wide);
        TreeCategoricalWordsPortable(first_categorical, end_categorical, bins, numeric_count_,
                                     bits_.data(), categorical_high, wide);
        for (int row = 0; row < kRows; ++row) {
          const int position = wide[row] != 0 ? std::countr_zero(wide[row])
                                              : 64 + std::countr_zero(wide[kRows + row]);
          leaf[slot + row] = order[position];
        }
      }
      continue;
    }
    if (avx2) {
#ifdef TFG_MASK_AVX2
      NarrowTreeWordsAvx2(first, tree_nodes_.data() + tree_missing_right_[tree], end,
                          first_categorical, end_categorical, values, bins, numeric_count_,
                          bits_.data(), order, leaf + slot);
#endif
    } else {
      std::uint64_t* tree_words = words + slot;
      std::fill(tree_words, tree_words + kRows, ~std::uint64_t{0});
      TreeWordsPortable(first, end, values, nullptr, tree_words);
      TreeCategoricalWordsPortable(first_categorical, end_categorical, bins, numeric_count_,
                                   bits_.data(), nullptr, tree_words);
      for (int row = 0; row < kRows; ++row) {
        leaf[slot + row] = order[std::countr_zero(tree_words[row])];
      }
    }
  }
}

}  // namespace tabforge::tree
