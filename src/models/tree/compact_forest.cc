#include "models/tree/compact_forest.h"

#include <cmath>
#include <limits>

namespace tabforge::tree {
namespace {

// The largest float f with double(f) <= bound: float values compare with it as with bound.
float FloatAtOrBelow(double bound) {
  if (std::isinf(bound))
    return bound > 0 ? std::numeric_limits<float>::infinity()
                     : -std::numeric_limits<float>::infinity();
  if (bound >= double(std::numeric_limits<float>::max())) return std::numeric_limits<float>::max();
  if (bound < double(std::numeric_limits<float>::lowest())) {
    return -std::numeric_limits<float>::infinity();
  }
  float value = static_cast<float>(bound);
  if (double(value) > bound) value = std::nextafter(value, -std::numeric_limits<float>::infinity());
  return value;
}

}  // namespace

void CompactForest::Build(const std::vector<Tree>& trees, const BinMapper& mapper) {
  numeric_count_ = 0;
  for (int feature = 0; feature < mapper.num_features(); ++feature) {
    if (!mapper.feature(feature).categorical) ++numeric_count_;
  }
  nodes_.clear();
  roots_.clear();
  leaves_.clear();
  categories_.clear();
  bits_.clear();
  // Room for every node and leaf at once: forests of deep trees hold millions.
  std::size_t total_nodes = 0, total_leaves = 0;
  for (const Tree& tree : trees) {
    total_nodes += tree.nodes().size();
    total_leaves += tree.leaf_values().size();
  }
  nodes_.reserve(total_nodes);
  leaves_.reserve(total_leaves);
  roots_.reserve(trees.size());
  for (const Tree& tree : trees) {
    const auto node_base = static_cast<std::int32_t>(nodes_.size());
    const auto leaf_base = static_cast<std::int32_t>(leaves_.size());
    auto link = [&](std::int32_t child) {
      return child >= 0 ? node_base + child : ~(leaf_base + ~child);
    };
    roots_.push_back(tree.nodes().empty() ? ~leaf_base : node_base);
    for (const TreeNode& node : tree.nodes()) {
      Node out;
      out.feature = node.feature | (node.categorical ? kCategorical : 0) |
                    (node.default_left ? kDefaultLeft : 0);
      if (node.categorical) {
        out.payload = static_cast<std::int32_t>(categories_.size());
        const auto begin = static_cast<std::int32_t>(bits_.size());
        bits_.insert(bits_.end(), tree.bitsets().begin() + node.bitset.begin,
                     tree.bitsets().begin() + node.bitset.end);
        categories_.push_back({begin, static_cast<std::int32_t>(bits_.size())});
      } else {
        out.threshold = FloatAtOrBelow(node.threshold);
      }
      out.left = link(node.left);
      out.right = link(node.right);
      nodes_.push_back(out);
    }
    leaves_.insert(leaves_.end(), tree.leaf_values().begin(), tree.leaf_values().end());
  }
}

}  // namespace tabforge::tree
