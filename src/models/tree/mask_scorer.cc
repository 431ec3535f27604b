#include "models/tree/mask_scorer.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

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
  tree_node_begin_.assign(static_cast<std::size_t>(trees) + 1, 0);
  tree_categorical_begin_.assign(static_cast<std::size_t>(trees) + 1, 0);
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
        tree_nodes_.push_back(
            {node.threshold,
             feature | ((node.feature & CompactForest::kDefaultLeft) ? 0 : kMissingRight),
             entry.mask});
        if (!(node.feature & CompactForest::kDefaultLeft)) {
          missing[static_cast<std::size_t>(feature)].push_back(entry);
        }
      }
      return first;
    };
    int count = 0;
    visit(visit, forest.Root(tree), count);
    tree_node_begin_[static_cast<std::size_t>(tree) + 1] =
        static_cast<std::int32_t>(tree_nodes_.size());
    tree_categorical_begin_[static_cast<std::size_t>(tree) + 1] =
        static_cast<std::int32_t>(categorical_.size());
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
  tree_categorical_ = categorical_;  // tree by tree, as made
  std::stable_sort(
      categorical_.begin(), categorical_.end(),
      [](const CategoricalNode& a, const CategoricalNode& b) { return a.feature < b.feature; });
  usable_ = true;
}

namespace {

#ifdef TFG_MASK_AVX2
// In the rows whose lanes (eight 32-bit lanes, all ones or zero) go right, keeps only the
// leaves of `mask` (words of rows 0-3 in `low`, 4-7 in `high`).
__attribute__((target("avx2"))) inline void ClearGoingRight(__m256i lanes, std::uint64_t mask,
                                                            __m256i& low, __m256i& high) {
  const __m256i cleared = _mm256_set1_epi64x(static_cast<long long>(~mask));
  const __m256i right_low = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(lanes));
  const __m256i right_high = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(lanes, 1));
  low = _mm256_andnot_si256(_mm256_and_si256(right_low, cleared), low);
  high = _mm256_andnot_si256(_mm256_and_si256(right_high, cleared), high);
}

// MaskScorer::GroupLeaves's pass over one tree's numeric nodes for its kGroupRows (8) rows: two
// registers of four 64-bit words; a node clears, in the rows it sends right, its left subtree's
// leaves.
__attribute__((target("avx2"))) void TreeWordsAvx2(const MaskScorer::TreeNode* node,
                                                   const MaskScorer::TreeNode* end,
                                                   const float* values, std::uint64_t* words) {
  static_assert(MaskScorer::kGroupRows == 8, "two registers of four words");
  __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words));
  __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 4));
  for (; node < end; ++node) {
    const int feature = node->feature & (MaskScorer::kMissingRight - 1);
    const __m256 value = _mm256_loadu_ps(values + feature * 8);
    __m256 right = _mm256_cmp_ps(_mm256_set1_ps(node->threshold), value, _CMP_LT_OQ);
    const __m256 missing_right = _mm256_castsi256_ps(
        _mm256_set1_epi32((node->feature & MaskScorer::kMissingRight) ? -1 : 0));
    right = _mm256_or_ps(right,
                         _mm256_and_ps(_mm256_cmp_ps(value, value, _CMP_UNORD_Q), missing_right));
    const __m256i lanes = _mm256_castps_si256(right);
    ClearGoingRight(lanes, node->mask, low, high);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(words), low);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + 4), high);
}

// The same for one tree's categorical nodes: a row goes left when its bin's bit is set.
__attribute__((target("avx2"))) void TreeCategoricalWordsAvx2(
    const MaskScorer::CategoricalNode* node, const MaskScorer::CategoricalNode* end,
    const int* bins, int numeric_count, const std::uint32_t* bits, std::uint64_t* words) {
  __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words));
  __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 4));
  const __m256i one = _mm256_set1_epi32(1);
  for (; node < end; ++node) {
    const __m256i bin = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(bins + (node->feature - numeric_count) * 8));
    const __m256i word =
        _mm256_add_epi32(_mm256_set1_epi32(node->begin), _mm256_srli_epi32(bin, 5));
    const __m256i inside = _mm256_cmpgt_epi32(_mm256_set1_epi32(node->end), word);
    const __m256i loaded = _mm256_mask_i32gather_epi32(
        _mm256_setzero_si256(), reinterpret_cast<const int*>(bits), word, inside, 4);
    const __m256i bit = _mm256_and_si256(
        _mm256_srlv_epi32(loaded, _mm256_and_si256(bin, _mm256_set1_epi32(31))), one);
    const __m256i lanes = _mm256_cmpeq_epi32(bit, _mm256_setzero_si256());  // goes right
    ClearGoingRight(lanes, node->mask, low, high);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(words), low);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + 4), high);
}
#endif

// One tree's categorical nodes without vector instructions.
void TreeCategoricalWordsPortable(const MaskScorer::CategoricalNode* node,
                                  const MaskScorer::CategoricalNode* end, const int* bins,
                                  int numeric_count, const std::uint32_t* bits,
                                  std::uint64_t* words) {
  constexpr int kRows = MaskScorer::kGroupRows;
  for (; node < end; ++node) {
    const int* row_bins = bins + (node->feature - numeric_count) * kRows;
    for (int row = 0; row < kRows; ++row) {
      const int bin = row_bins[row];
      const std::int32_t word = node->begin + bin / 32;
      const bool left = word < node->end && ((bits[word] >> (bin % 32)) & 1u);
      if (!left) words[row] &= node->mask;
    }
  }
}

// The same without vector instructions.
void TreeWordsPortable(const MaskScorer::TreeNode* node, const MaskScorer::TreeNode* end,
                       const float* values, std::uint64_t* words) {
  constexpr int kRows = MaskScorer::kGroupRows;
  for (; node < end; ++node) {
    const float* row_values = values + (node->feature & (MaskScorer::kMissingRight - 1)) * kRows;
    const bool missing_goes_right = (node->feature & MaskScorer::kMissingRight) != 0;
    for (int row = 0; row < kRows; ++row) {
      const float value = row_values[row];
      const bool right = node->threshold < value || (value != value && missing_goes_right);
      if (right) words[row] &= node->mask;
    }
  }
}

}  // namespace

void MaskScorer::GroupLeaves(const float* values, const int* bins, std::uint64_t* words,
                             std::int32_t* leaf, bool portable) const {
  constexpr int kRows = kGroupRows;
  const int trees = num_trees();
  // words[t * kRows + r]: tree t's leaves row r may still reach.
  for (std::int64_t at = 0; at < std::int64_t(kRows) * trees; ++at) words[at] = ~std::uint64_t{0};
#ifdef TFG_MASK_AVX2
  static const bool supported = __builtin_cpu_supports("avx2");
  const bool avx2 = supported && !portable;
#else
  (void)portable;
#endif
  for (int tree = 0; tree < trees; ++tree) {
    const TreeNode* first = tree_nodes_.data() + tree_node_begin_[tree];
    const TreeNode* end = tree_nodes_.data() + tree_node_begin_[tree + 1];
    const CategoricalNode* first_categorical =
        tree_categorical_.data() + tree_categorical_begin_[tree];
    const CategoricalNode* end_categorical =
        tree_categorical_.data() + tree_categorical_begin_[tree + 1];
    std::uint64_t* tree_words = words + std::int64_t(tree) * kRows;
#ifdef TFG_MASK_AVX2
    if (avx2) {
      TreeWordsAvx2(first, end, values, tree_words);
      TreeCategoricalWordsAvx2(first_categorical, end_categorical, bins, numeric_count_,
                               bits_.data(), tree_words);
    } else {
      TreeWordsPortable(first, end, values, tree_words);
      TreeCategoricalWordsPortable(first_categorical, end_categorical, bins, numeric_count_,
                                   bits_.data(), tree_words);
    }
#else
    TreeWordsPortable(first, end, values, tree_words);
    TreeCategoricalWordsPortable(first_categorical, end_categorical, bins, numeric_count_,
                                 bits_.data(), tree_words);
#endif
    for (int row = 0; row < kRows; ++row) {
      leaf[std::int64_t(row) * trees + tree] =
          leaf_order_[leaf_base_[tree] + std::countr_zero(tree_words[row])];
    }
  }
}

}  // namespace tabforge::tree
