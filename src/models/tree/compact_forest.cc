#include "models/tree/compact_forest.h"

#include <algorithm>
#include <array>
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

void CompactForest::Build(const std::vector<Tree>& trees, const BinMapper& mapper, int threads) {
  numeric_count_ = 0;
  for (int feature = 0; feature < mapper.num_features(); ++feature) {
    if (!mapper.feature(feature).categorical) ++numeric_count_;
  }
  // Each tree's first node, leaf, category set and bit word, so that trees are laid out in
  // parallel (forests of deep trees hold millions of nodes: 300 trees of 15000 leaves took 0.11
  // s on one thread); their categorical nodes are counted in parallel too (that forest's nodes
  // are 144 MB).
  const std::size_t tree_count = trees.size();
  const int thread_count = tree_count < 8 ? 1 : std::max(1, threads);
  std::vector<std::size_t> node_base(tree_count + 1, 0), leaf_base(tree_count + 1, 0);
  std::vector<std::size_t> category_base(tree_count + 1, 0), bit_base(tree_count + 1, 0);
#pragma omp parallel for num_threads(thread_count) schedule(dynamic, 4)
  for (std::size_t at = 0; at < tree_count; ++at) {
    std::size_t categorical = 0, bit_words = 0;
    for (const TreeNode& node : trees[at].nodes()) {
      if (!node.categorical) continue;
      ++categorical;
      bit_words += static_cast<std::size_t>(node.bitset.end - node.bitset.begin);
    }
    category_base[at + 1] = categorical;
    bit_base[at + 1] = bit_words;
  }
  for (std::size_t at = 0; at < tree_count; ++at) {
    node_base[at + 1] = node_base[at] + trees[at].nodes().size();
    leaf_base[at + 1] = leaf_base[at] + trees[at].leaf_values().size();
    category_base[at + 1] += category_base[at];
    bit_base[at + 1] += bit_base[at];
  }
  nodes_.assign(node_base[tree_count], Node{});
  leaves_.assign(leaf_base[tree_count], 0.0);
  categories_.assign(category_base[tree_count], {});
  bits_.assign(bit_base[tree_count], 0u);
  roots_.assign(tree_count, 0);
#pragma omp parallel for num_threads(thread_count) schedule(dynamic, 4)
  for (std::size_t at = 0; at < tree_count; ++at) {
    const Tree& tree = trees[at];
    const auto first_node = static_cast<std::int32_t>(node_base[at]);
    const auto first_leaf = static_cast<std::int32_t>(leaf_base[at]);
    roots_[at] = tree.nodes().empty() ? ~first_leaf : first_node;
    // Depth first, each node followed by its child with more leaves below it (the side more
    // rows are likely to take), so a walk often finds its next node in the line it just read.
    const std::vector<TreeNode>& tree_nodes = tree.nodes();
    const auto node_count = static_cast<std::int32_t>(tree_nodes.size());
    std::vector<std::int32_t> leaves_below(tree_nodes.size(), 0);
    auto below = [&](std::int32_t child) { return child >= 0 ? leaves_below[child] : 1; };
    for (std::int32_t index = node_count - 1; index >= 0; --index) {  // children after parents
      leaves_below[index] = below(tree_nodes[index].left) + below(tree_nodes[index].right);
    }
    std::vector<std::int32_t> order;  // new position -> node of the tree
    std::vector<std::int32_t> position(tree_nodes.size(), 0);
    order.reserve(tree_nodes.size());
    std::vector<std::int32_t> pending;
    if (node_count > 0) pending.push_back(0);
    while (!pending.empty()) {
      const std::int32_t index = pending.back();
      pending.pop_back();
      position[index] = static_cast<std::int32_t>(order.size());
      order.push_back(index);
      const TreeNode& node = tree_nodes[index];
      const bool left_first = below(node.left) >= below(node.right);
      for (std::int32_t child :
           left_first ? std::array{node.right, node.left} : std::array{node.left, node.right}) {
        if (child >= 0) pending.push_back(child);
      }
    }
    auto link = [&](std::int32_t child) {
      return child >= 0 ? first_node + position[child] : ~(first_leaf + ~child);
    };
    std::size_t category = category_base[at];
    std::size_t bit = bit_base[at];
    std::size_t out_at = node_base[at];
    for (const std::int32_t index : order) {
      const TreeNode& node = tree_nodes[index];
      Node& out = nodes_[out_at++];
      out.feature = node.feature | (node.categorical ? kCategorical : 0) |
                    (node.default_left ? kDefaultLeft : 0);
      if (node.categorical) {
        out.payload = static_cast<std::int32_t>(category);
        const auto begin = static_cast<std::int32_t>(bit);
        for (auto word = node.bitset.begin; word < node.bitset.end; ++word) {
          bits_[bit++] = tree.bitsets()[static_cast<std::size_t>(word)];
        }
        categories_[category++] = {begin, static_cast<std::int32_t>(bit)};
      } else {
        out.threshold = FloatAtOrBelow(node.threshold);
      }
      out.left = link(node.left);
      out.right = link(node.right);
    }
    std::copy(tree.leaf_values().begin(), tree.leaf_values().end(),
              leaves_.begin() + static_cast<std::ptrdiff_t>(leaf_base[at]));
  }
}

}  // namespace tabforge::tree
