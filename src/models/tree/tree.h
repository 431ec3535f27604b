// A decision tree over the features of a FeatureMatrix, as trained on its bins: numeric nodes
// send a row left when its value is at most the threshold (missing values go to the learned
// default side); categorical nodes send it left when its code's bin is in the node's set.
#pragma once

#include <cstdint>
#include <vector>

#include "features/feature_matrix.h"
#include "models/tree/binning.h"  // also declares ByteReader and ByteWriter

namespace tabforge::tree {

struct TreeNode {
  std::int32_t feature = 0;  // index in the bin mapper's features (numeric first)
  bool categorical = false;
  bool default_left = false;        // numeric: where missing values go
  std::uint16_t threshold_bin = 0;  // numeric: value bins <= threshold_bin go left
  std::uint16_t missing_bin = 0;    // numeric: the feature's missing bin
  double threshold = 0;             // numeric: values <= threshold go left (the bin's bound)
  std::int32_t bitset_begin = 0;    // categorical: words [bitset_begin, bitset_end) of the
  std::int32_t bitset_end = 0;      //   tree's bitsets: bit b set = bin b goes left
  std::int32_t left = 0;            // child: >= 0 a node, < 0 the leaf ~child
  std::int32_t right = 0;
  double gain = 0;  // loss reduction of this split
};

class Tree {
 public:
  // A single-leaf tree of value `value`.
  explicit Tree(double value = 0) : leaf_values_{value}, leaf_depths_{0} {}

  // Splits leaf `leaf` by `node` (its children fields are filled here); the left child keeps
  // index `leaf`, the right child is the new last leaf. Returns the new leaf's index.
  int SplitLeaf(int leaf, TreeNode node, const std::vector<std::uint32_t>& left_bins);

  int num_leaves() const { return static_cast<int>(leaf_values_.size()); }
  int depth() const;
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

  std::vector<TreeNode> nodes_;
  std::vector<double> leaf_values_;
  std::vector<std::uint32_t> bitsets_;
  std::vector<int> leaf_depths_;
  std::vector<std::int32_t> leaf_parent_;  // node whose child the leaf is (-1 for the root)
};

}  // namespace tabforge::tree
