#include "models/tree/tree.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/serialize.h"

namespace tabforge::tree {

int Tree::SplitLeaf(int leaf, TreeNode node, const std::vector<std::uint32_t>& left_bins) {
  if (leaf_parent_.size() != leaf_values_.size()) {
    leaf_parent_.assign(leaf_values_.size(), -1);
    for (std::int32_t index = 0; index < static_cast<std::int32_t>(nodes_.size()); ++index) {
      for (std::int32_t child : {nodes_[index].left, nodes_[index].right}) {
        if (child < 0) leaf_parent_[~child] = index;
      }
    }
  }
  const int new_leaf = num_leaves();
  const auto node_index = static_cast<std::int32_t>(nodes_.size());
  if (node.categorical) {
    node.bitset.begin = static_cast<std::int32_t>(bitsets_.size());
    bitsets_.insert(bitsets_.end(), left_bins.begin(), left_bins.end());
    node.bitset.end = static_cast<std::int32_t>(bitsets_.size());
  }
  node.left = ~leaf;
  node.right = ~new_leaf;
  // Re-point the parent's link from the leaf to the new node.
  const std::int32_t parent = leaf_parent_[leaf];
  if (parent >= 0) {
    TreeNode& up = nodes_[parent];
    if (up.left == ~leaf) {
      up.left = node_index;
    } else {
      up.right = node_index;
    }
  }
  nodes_.push_back(node);
  leaf_values_.push_back(leaf_values_[leaf]);
  leaf_parent_[leaf] = node_index;
  leaf_parent_.push_back(node_index);
  return new_leaf;
}

void Tree::Compact() {
  std::vector<std::int32_t>().swap(leaf_parent_);
  nodes_.shrink_to_fit();
  leaf_values_.shrink_to_fit();
  bitsets_.shrink_to_fit();
}

std::vector<std::int32_t> Tree::LeafDepths() const {
  // Children come after their parents, so one pass in node order sees each parent first.
  std::vector<std::int32_t> leaf_depths(leaf_values_.size(), 0);
  std::vector<std::int32_t> node_depths(nodes_.size(), 0);
  for (std::size_t index = 0; index < nodes_.size(); ++index) {
    for (std::int32_t child : {nodes_[index].left, nodes_[index].right}) {
      (child >= 0 ? node_depths[child] : leaf_depths[~child]) = node_depths[index] + 1;
    }
  }
  return leaf_depths;
}

int Tree::depth() const {
  const std::vector<std::int32_t> depths = LeafDepths();
  return *std::max_element(depths.begin(), depths.end());
}

bool Tree::GoesLeftBin(const TreeNode& node, int bin) const {
  const std::int32_t word = node.bitset.begin + bin / 32;
  if (word >= node.bitset.end) return false;
  return (bitsets_[word] >> (bin % 32)) & 1u;
}

int Tree::LeafOfBins(const BinMatrix& bins, std::int64_t row) const {
  if (nodes_.empty()) return 0;
  std::int32_t at = 0;
  while (at >= 0) {
    const TreeNode& node = nodes_[at];
    const int bin = bins.Bin(node.feature, row);
    bool left;
    if (node.categorical) {
      left = GoesLeftBin(node, bin);
    } else {
      left = bin == node.missing_bin ? node.default_left : bin <= node.threshold_bin;
    }
    at = left ? node.left : node.right;
  }
  return ~at;
}

int Tree::LeafOfRow(const features::FeatureMatrix& features, const BinMapper& mapper,
                    std::int64_t row) const {
  if (nodes_.empty()) return 0;
  const int numeric = features.num_numeric();
  std::int32_t at = 0;
  while (at >= 0) {
    const TreeNode& node = nodes_[at];
    bool left;
    if (node.categorical) {
      const std::int32_t code = features.CategoricalColumn(node.feature - numeric)[row];
      left = GoesLeftBin(node, mapper.feature(node.feature).CategoryBin(code));
    } else {
      const float value = features.NumericColumn(node.feature)[row];
      left = std::isnan(value) ? node.default_left : double(value) <= node.threshold;
    }
    at = left ? node.left : node.right;
  }
  return ~at;
}

void Tree::AddImportance(std::vector<double>& splits, std::vector<double>& gains) const {
  for (const TreeNode& node : nodes_) {
    splits[node.feature] += 1;
    gains[node.feature] += node.gain;
  }
}

void Tree::Write(ByteWriter& writer) const {
  writer.Put<std::uint32_t>(static_cast<std::uint32_t>(nodes_.size()));
  for (const TreeNode& node : nodes_) {
    writer.Put<std::int32_t>(static_cast<std::int32_t>(node.feature));
    writer.Put<std::uint8_t>((node.categorical ? 1 : 0) | (node.default_left ? 2 : 0));
    writer.Put<std::uint16_t>(node.threshold_bin);
    writer.Put<std::uint16_t>(node.missing_bin);
    // Numeric nodes write an empty bitset range, categorical ones a zero threshold.
    writer.Put<double>(node.categorical ? 0.0 : node.threshold);
    writer.Put<std::int32_t>(node.categorical ? node.bitset.begin : 0);
    writer.Put<std::int32_t>(node.categorical ? node.bitset.end : 0);
    writer.Put<std::int32_t>(node.left);
    writer.Put<std::int32_t>(node.right);
    writer.Put<double>(node.gain);
  }
  writer.PutVector(leaf_values_);
  writer.PutVector(bitsets_);
  writer.PutVector(LeafDepths());
}

Tree Tree::Read(ByteReader& reader, int num_features) {
  Tree tree;
  const auto count = reader.Get<std::uint32_t>();
  bool valid = true;
  for (std::uint32_t index = 0; index < count; ++index) {
    TreeNode node;
    const auto feature = reader.Get<std::int32_t>();
    valid = valid && feature >= 0 && feature < num_features;
    node.feature = static_cast<std::uint32_t>(valid ? feature : 0);
    const auto flags = reader.Get<std::uint8_t>();
    node.categorical = flags & 1;
    node.default_left = (flags & 2) != 0;
    node.threshold_bin = reader.Get<std::uint16_t>();
    node.missing_bin = reader.Get<std::uint16_t>();
    const auto threshold = reader.Get<double>();
    const auto bitset_begin = reader.Get<std::int32_t>();
    const auto bitset_end = reader.Get<std::int32_t>();
    if (node.categorical) {
      node.bitset = {bitset_begin, bitset_end};
    } else {
      node.threshold = threshold;
    }
    node.left = reader.Get<std::int32_t>();
    node.right = reader.Get<std::int32_t>();
    node.gain = reader.Get<double>();
    tree.nodes_.push_back(node);
  }
  tree.leaf_values_ = reader.GetVector<double>();
  tree.bitsets_ = reader.GetVector<std::uint32_t>();
  const std::vector<std::int32_t> depths = reader.GetVector<std::int32_t>();
  const auto nodes = static_cast<std::int32_t>(tree.nodes_.size());
  const auto leaves = static_cast<std::int32_t>(tree.leaf_values_.size());
  valid = valid && leaves == nodes + 1 && depths.size() == tree.leaf_values_.size();
  for (std::int32_t index = 0; index < nodes; ++index) {
    const TreeNode& node = tree.nodes_[index];
    for (std::int32_t child : {node.left, node.right}) {
      // Children point forward (nodes are made after their parents, so no cycle), or to a leaf.
      valid = valid && (child >= 0 ? child > index && child < nodes : ~child < leaves);
    }
    valid = valid && (!node.categorical ||
                      (node.bitset.begin >= 0 && node.bitset.begin <= node.bitset.end &&
                       node.bitset.end <= static_cast<std::int32_t>(tree.bitsets_.size())));
  }
  // The stored depths are those of the nodes (checked once the links are known sound).
  valid = valid && depths == tree.LeafDepths();
  if (!valid) reader.Corrupted("inconsistent tree");
  return tree;
}

}  // namespace tabforge::tree
