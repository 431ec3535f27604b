// A decision tree over the features of a FeatureMatrix, as trained on its bins: numeric nodes
// send a row left when its value is at most the threshold (missing values go to the learned
// default side); categorical nodes send it left when its code's bin is in the node's set.
#pragma once

#include <cstdint>
#include <vector>

#include "features/feature_matrix.h"
#include "models/tree/binning.h"  // also declares ByteReader and ByteWriter

namespace tabforge::tree {

// A split node, 32 bytes: trees are most of a model's memory.
struct TreeNode {
  // Categorical nodes: bit b of the tree's bitset words [begin, end) set = bin b goes left.
  struct BitsetRange {
    std::int32_t begin;
    std::int32_t end;
  };
  double gain = 0;  // loss reduction of this split
  union {
    double threshold = 0;  // numeric: values <= threshold go left (the bin's bound)
    BitsetRange bitset;    // categorical
  };
  std::int32_t left = 0;  // child: >= 0 a node, < 0 the leaf ~child
  std::int32_t right = 0;
  std::uint16_t threshold_bin = 0;     // numeric: value bins <= threshold_bin go left
  std::uint16_t missing_bin = 0;       // numeric: the feature's missing bin
  std::uint32_t feature : 30 = 0;      // index in the bin mapper's features (numeric first)
  std::uint32_t categorical : 1 = 0;   // 1: a categorical split (bitset), 0: numeric (threshold)
  std::uint32_t default_left : 1 = 0;  // numeric: where missing values go
};
static_assert(sizeof(TreeNode) == 32, "a tree node is 32 bytes");

class Tree {
 public:
  // A single-leaf tree of value `value`.
  explicit Tree(double value = 0) : leaf_values_{value} {}

  // Splits leaf `leaf` by `node` (its children fields are filled here); the left child keeps
  // index `leaf`, the right child is the new last leaf. Returns the new leaf's index.
  int SplitLeaf(int leaf, TreeNode node, const std::vector<std::uint32_t>& left_bins);
  // Drops what only growing needs (the leaves' parent links, rebuilt if the tree is split
  // again) and spare capacity; growers call it on each finished tree.
  void Compact();

  int num_leaves() const { return static_cast<int>(leaf_values_.size()); }
  int depth() const;  // the deepest leaf's depth (0: a single leaf)
  const std::vector<TreeNode>& nodes() const { return nodes_; }
  std::vector<double>& leaf_values() { return leaf_values_; }
  const std::vector<double>& leaf_values() const { return leaf_values_; }
  const std::vector<std::uint32_t>& bitsets() const { return bitsets_; }

  // The leaf of `row` of the bin matrix.
  int LeafOfBins(const BinMatrix& bins, std::int64_t row) const;
  // The leaf of `row` of `features` (raw values; categorical codes through `mapper`).
  int LeafOfRow(const features::FeatureMatrix& features, const BinMapper& mapper,
                std::int64_t row) const;

  // Split counts and total gain per feature, added into the vectors (num_features long).
  void AddImportance(std::vector<double>& splits, std::vector<double>& gains) const;

  // Appends the tree field by field (so the bytes never hold padding) / reads it back,
  // checking that every child and feature index is in range (`num_features`).
  void Write(ByteWriter& writer) const;
  static Tree Read(ByteReader& reader, int num_features);

 private:
  bool GoesLeftBin(const TreeNode& node, int bin) const;
  std::vector<std::int32_t> LeafDepths() const;

  std::vector<TreeNode> nodes_;
  std::vector<double> leaf_values_;
  std::vector<std::uint32_t> bitsets_;
  std::vector<std::int32_t> leaf_parent_;  // while growing: node whose child the leaf is
                                           // (-1 for the root)
};

}  // namespace tabforge::tree
