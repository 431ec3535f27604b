// A forest laid out for prediction: every tree's nodes in one flat array of 16-byte nodes,
// leaves in one array of values, thresholds as floats (the largest float not above the
// trained double bound, so comparisons with float inputs are unchanged). Traversal reads one
// cache line per node and allocates nothing, so a single row can be scored in place.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "models/tree/binning.h"
#include "models/tree/tree.h"

namespace tabforge::tree {

class CompactForest {
 public:
  static constexpr std::int32_t kCategorical = 1 << 30;
  static constexpr std::int32_t kDefaultLeft = 1 << 29;
  static constexpr std::int32_t kFeatureMask = kDefaultLeft - 1;
  struct Node {
    std::int32_t feature = 0;  // index | kCategorical | kDefaultLeft
    union {
      float threshold;       // numeric: values <= threshold go left
      std::int32_t payload;  // categorical: index into categories()
    };
    std::int32_t left = 0;  // >= 0 a node of nodes(), < 0 the leaf ~child of leaves()
    std::int32_t right = 0;
  };
  struct Categories {
    std::int32_t begin = 0;  // words [begin, end) of bits(): bit b set = bin b goes left
    std::int32_t end = 0;
  };
  static_assert(sizeof(Node) == 16);

  // Lays out `trees` (their features index `mapper`'s: numeric first, then categorical) on up to
  // `threads` threads. The forest keeps no reference to `mapper`; Value takes it again.
  void Build(const std::vector<Tree>& trees, const BinMapper& mapper, int threads = 1);

  int num_trees() const { return static_cast<int>(roots_.size()); }

  // The leaf tree `tree` sends a row to, numbered across the forest (trees in order, each
  // tree's leaves in order), for a row whose numeric values are numeric(feature) (NaN for
  // missing) and categorical codes code(feature - numeric_count), codes binned by `mapper`.
  template <typename Numeric, typename Code>
  std::int32_t Leaf(int tree, const BinMapper& mapper, const Numeric& numeric,
                    const Code& code) const {
    std::int32_t at = Root(tree);
    while (at >= 0) at = Next(at, mapper, numeric, code);
    return ~at;
  }
  // Leaf for a row whose categorical features' bins are known (NextByBin).
  template <typename Numeric, typename CategoryBin>
  std::int32_t LeafByBin(int tree, const Numeric& numeric, const CategoryBin& category_bin) const {
    std::int32_t at = Root(tree);
    while (at >= 0) at = NextByBin(at, numeric, category_bin);
    return ~at;
  }

  // Traversal one node at a time (to walk several rows side by side): the tree's first node
  // (>= 0) or ~leaf for a single-leaf tree; then the child of node `at` that the row goes to,
  // a node (>= 0) or ~leaf (numbered as Leaf's).
  std::int32_t Root(int tree) const { return roots_[tree]; }
  template <typename Numeric, typename Code>
  std::int32_t Next(std::int32_t at, const BinMapper& mapper, const Numeric& numeric,
                    const Code& code) const {
    return NextByBin(at, numeric, [&](int categorical) {
      return mapper.feature(numeric_count_ + categorical).CategoryBin(code(categorical));
    });
  }
  // Next for a row whose categorical features' bins are known: category_bin(c) is the bin of
  // categorical feature c (its code binned by the mapper), as a batch finds once a row.
  template <typename Numeric, typename CategoryBin>
  std::int32_t NextByBin(std::int32_t at, const Numeric& numeric,
                         const CategoryBin& category_bin) const {
    const Node& node = nodes_[at];
    bool left;
    if (node.feature & kCategorical) {
      const Categories& categories = categories_[node.payload];
      const int bin = category_bin((node.feature & kFeatureMask) - numeric_count_);
      const std::int32_t word = categories.begin + bin / 32;
      left = word < categories.end && ((bits_[word] >> (bin % 32)) & 1u);
    } else {
      const float value = numeric(node.feature & kFeatureMask);
      left = std::isnan(value) ? (node.feature & kDefaultLeft) != 0 : value <= node.threshold;
    }
    return left ? node.left : node.right;
  }

  // The categorical codes of rows [first, last) of a column-major matrix
  // (features::FeatureMatrix), binned by `mapper` once for a batch's walks: into
  // bins[c * (last - first) + row - first] for categorical feature c, as NextByBin reads them.
  template <typename Matrix>
  void BinCategories(const BinMapper& mapper, const Matrix& features, std::int64_t first,
                     std::int64_t last, std::vector<int>& bins) const {
    const std::int64_t span = last - first;
    const int categorical = mapper.num_features() - numeric_count_;
    bins.resize(static_cast<std::size_t>(categorical * span));
    for (int feature = 0; feature < categorical; ++feature) {
      const FeatureBins& feature_bins = mapper.feature(numeric_count_ + feature);
      const std::int32_t* codes = features.CategoricalColumn(feature);
      for (std::int64_t row = first; row < last; ++row) {
        bins[static_cast<std::size_t>(feature * span + (row - first))] =
            feature_bins.CategoryBin(codes[row]);
      }
    }
  }

  // The layout itself (the CUDA predictor copies it to the device).
  int numeric_count() const { return numeric_count_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<std::int32_t>& roots() const { return roots_; }
  const std::vector<double>& leaves() const { return leaves_; }
  const std::vector<Categories>& categories() const { return categories_; }
  const std::vector<std::uint32_t>& bits() const { return bits_; }

  // Rows per block for a batch walked block by block, tree by tree, on `threads` threads:
  // large blocks fetch each tree (a large model is far larger than the caches) once for more
  // rows; four blocks per thread at least keep the threads even.
  static std::int64_t BlockRows(std::int64_t rows, int threads) {
    constexpr std::int64_t kMinBlockRows = 64;
    constexpr std::int64_t kMaxBlockRows = 1024;
    return std::clamp<std::int64_t>(rows / (4 * std::int64_t(threads)), kMinBlockRows,
                                    kMaxBlockRows);
  }

  // The most trees WalkTrees takes at once.
  static constexpr int kWalkGroup = 16;

  // The leaves (numbered as Leaf's) of trees [first, first + count), count <= kWalkGroup, for
  // one row, into leaf[0, count): the trees are walked side by side, a level of each in turn, so
  // their node loads (a large model misses the caches) overlap instead of waiting on each other.
  template <typename Numeric, typename Code>
  void WalkTrees(int first, int count, const BinMapper& mapper, const Numeric& numeric,
                 const Code& code, std::int32_t* leaf) const {
    std::int32_t at[kWalkGroup];
    for (int member = 0; member < count; ++member) at[member] = Root(first + member);
    // The next group's first nodes are fetched while this group walks (a caller takes the
    // groups in order): its walks then start on lines already on their way.
    const int next_end = std::min(first + 2 * count, num_trees());
    for (int tree = first + count; tree < next_end; ++tree) {
      if (roots_[tree] >= 0) __builtin_prefetch(&nodes_[static_cast<std::size_t>(roots_[tree])]);
    }
    for (bool walking = true; walking;) {
      walking = false;
      for (int member = 0; member < count; ++member) {
        if (at[member] < 0) continue;
        at[member] = Next(at[member], mapper, numeric, code);
        walking = walking || at[member] >= 0;
      }
    }
    for (int member = 0; member < count; ++member) leaf[member] = ~at[member];
  }

  // WalkTrees for row `row` of a column-major matrix (features::FeatureMatrix).
  template <typename Matrix>
  void WalkRowTrees(int first, int count, const BinMapper& mapper, const Matrix& features,
                    std::int64_t row, std::int32_t* leaf) const {
    WalkTrees(
        first, count, mapper, [&](int feature) { return features.NumericColumn(feature)[row]; },
        [&](int feature) { return features.CategoricalColumn(feature)[row]; }, leaf);
  }

  // The leaf value of that leaf.
  template <typename Numeric, typename Code>
  double Value(int tree, const BinMapper& mapper, const Numeric& numeric, const Code& code) const {
    return leaves_[Leaf(tree, mapper, numeric, code)];
  }

 private:
  int numeric_count_ = 0;
  std::vector<Node> nodes_;
  std::vector<std::int32_t> roots_;  // per tree: a node, or ~leaf for a single-leaf tree
  std::vector<double> leaves_;
  std::vector<Categories> categories_;
  std::vector<std::uint32_t> bits_;
};

}  // namespace tabforge::tree
