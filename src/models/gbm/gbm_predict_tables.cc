#include "models/gbm/gbm_predict_tables.h"

#include <cstddef>

namespace tabforge::gbm {
namespace {

using Forest = tree::CompactForest;

static_assert(sizeof(Forest::Node) == sizeof(kernels::ForestNode) &&
                  offsetof(Forest::Node, feature) == offsetof(kernels::ForestNode, feature) &&
                  offsetof(Forest::Node, threshold) == offsetof(kernels::ForestNode, threshold) &&
                  offsetof(Forest::Node, left) == offsetof(kernels::ForestNode, left) &&
                  offsetof(Forest::Node, right) == offsetof(kernels::ForestNode, right),
              "a forest node's layout in the predictor's arrays");
static_assert(sizeof(Forest::Categories) == sizeof(kernels::ForestCategories) &&
                  offsetof(Forest::Categories, begin) ==
                      offsetof(kernels::ForestCategories, begin) &&
                  offsetof(Forest::Categories, end) == offsetof(kernels::ForestCategories, end),
              "a category range's layout in the predictor's arrays");
static_assert(Forest::kCategorical == kernels::kNodeCategorical &&
                  Forest::kDefaultLeft == kernels::kNodeDefaultLeft &&
                  Forest::kFeatureMask == kernels::kNodeFeatureMask,
              "a forest node's feature bits");

}  // namespace

ForestTables ForestTables::Of(const tree::CompactForest& forest, const tree::BinMapper& mapper) {
  ForestTables tables;
  tables.numeric_count = forest.numeric_count();
  tables.categorical_count = mapper.num_features() - tables.numeric_count;
  tables.code_begin.push_back(0);
  for (int c = 0; c < tables.categorical_count; ++c) {
    const tree::FeatureBins& bins = mapper.feature(tables.numeric_count + c);
    tables.code_bins.insert(tables.code_bins.end(), bins.code_to_bin.begin(),
                            bins.code_to_bin.end());
    tables.code_begin.push_back(static_cast<std::int32_t>(tables.code_bins.size()));
    tables.other_bin.push_back(bins.other_bin);
  }
  return tables;
}

const kernels::ForestNode* ForestTables::Nodes(const tree::CompactForest& forest) {
  return reinterpret_cast<const kernels::ForestNode*>(forest.nodes().data());
}

const kernels::ForestCategories* ForestTables::Categories(const tree::CompactForest& forest) {
  return reinterpret_cast<const kernels::ForestCategories*>(forest.categories().data());
}

kernels::DeviceForest ForestTables::HostView(const tree::CompactForest& forest) const {
  return {Nodes(forest),      forest.roots().data(), forest.num_trees(), forest.leaves().data(),
          Categories(forest), forest.bits().data(),  numeric_count,      code_bins.data(),
          code_begin.data(),  other_bin.data()};
}

}  // namespace tabforge::gbm
