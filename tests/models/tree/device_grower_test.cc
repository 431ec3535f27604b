// The CUDA grower's row bookkeeping (labelled "gpu"; each test skips with the reason where no
// usable CUDA device is present): the bins' column-major copy the partitions read, and the row
// order a grown tree leaves behind, which the GBM's leaf values and score updates read.
#include "models/tree/device_grower.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "device/cuda_check.h"
#include "gpu_support.h"
#include "models/tree/binning.h"
#include "models/tree/device_kernels.h"

namespace tabforge::tree {
namespace {

using device::DeviceArray;

template <typename Cell>
void ExpectColumns(std::int64_t rows, int features, int stride) {
  std::vector<Cell> cells(static_cast<std::size_t>(rows) * stride);
  for (std::size_t at = 0; at < cells.size(); ++at) {
    cells[at] = static_cast<Cell>((at * 2654435761u) >> 9);
  }
  DeviceArray<Cell> bins;
  device::Upload(bins, cells.data(), cells.size());
  DeviceArray<Cell> columns(static_cast<std::size_t>(rows) * features);
  kernels::FillColumns(bins.data(), stride, rows, features, columns.data(), nullptr);
  std::vector<Cell> turned(columns.size());
  device::Download(turned.data(), columns, turned.size());
  for (int feature = 0; feature < features; ++feature) {
    for (std::int64_t row = 0; row < rows; ++row) {
      ASSERT_EQ(turned[feature * rows + row], cells[row * stride + feature])
          << "row " << row << ", feature " << feature;
    }
  }
}

TEST(DeviceGrower, ColumnsAreTheRowsTurnedAround) {
  TFG_REQUIRE_GPU();
  ExpectColumns<std::uint8_t>(100003, 7, 8);
  ExpectColumns<std::uint16_t>(5001, 13, 16);
}

features::FeatureMatrix UniformMatrix(std::int64_t rows, int features, std::mt19937& random) {
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  features::FeatureMatrix matrix;
  matrix.num_rows = rows;
  for (int feature = 0; feature < features; ++feature) {
    for (std::int64_t row = 0; row < rows; ++row) matrix.numeric.push_back(uniform(random));
    matrix.numeric_info.push_back({fmt::format("f{}", feature), "f", 0, {}});
  }
  return matrix;
}

// Trees of 255 leaves on the device, whose splits are made ahead several levels below the
// leaves a tree keeps (their partitions write over the ranges of leaves above them, which the
// end of the tree repairs): every row grown on is in exactly one tree leaf's range, and in the
// leaf the tree routes it to. Odd trees grow on a bag of about two thirds of the rows.
TEST(DeviceGrower, TreeLeafRangesHoldEachRowOnceInItsLeaf) {
  TFG_REQUIRE_GPU();
  constexpr std::int64_t kRows = 40000;
  constexpr int kFeatures = 8;
  constexpr std::uint32_t kHessian = 1u << 20;  // fixed point: hessian 1
  std::mt19937 random(5);
  const features::FeatureMatrix matrix = UniformMatrix(kRows, kFeatures, random);
  const BinMapper mapper = BinMapper::Fit(matrix, BinningOptions{});
  const BinMatrix bins = ApplyBins(mapper, matrix);
  GrowerParams params;
  params.num_leaves = 255;
  params.min_data_in_leaf = 5;
  DeviceTreeGrower grower(bins, mapper, params);
  DeviceArray<GradientPair> device_pairs(kRows);
  DeviceArray<float> device_exact(kRows);
  DeviceArray<kernels::RoundScales> device_scales(1);
  DeviceArray<std::int32_t> device_bag(kRows);
  const DeviceGradients gradients{device_pairs.data(), device_exact.data(), device_scales.data()};
  const std::vector<std::uint8_t> active(kFeatures, 1);
  std::uniform_int_distribution<int> noise(-2, 2);
  for (int tree_index = 0; tree_index < 6; ++tree_index) {
    const bool bagged = tree_index % 2 == 1;
    std::vector<GradientPair> pairs(kRows);
    std::vector<float> exact(kRows);
    float max_abs = 0;
    for (std::int64_t row = 0; row < kRows; ++row) {
      const float x0 = matrix.numeric[static_cast<std::size_t>(row)];
      const float x1 = matrix.numeric[static_cast<std::size_t>(kRows + row)];
      const float x2 = matrix.numeric[static_cast<std::size_t>(2 * kRows + row)];
      const int quantized = static_cast<int>(
          std::lround(6 * std::sin(7 * x0 + tree_index) + 4 * x1 * x2 + noise(random)));
      pairs[static_cast<std::size_t>(row)] = {quantized, kHessian};
      exact[static_cast<std::size_t>(row)] = 0.25f * static_cast<float>(quantized);
      max_abs = std::max(max_abs, std::fabs(exact[static_cast<std::size_t>(row)]));
    }
    const kernels::RoundScales scales{0.25, 1.0 / kHessian, max_abs};
    std::vector<std::int32_t> grown;
    for (std::int64_t row = 0; row < kRows; ++row) {
      if (!bagged || random() % 3 != 0) grown.push_back(static_cast<std::int32_t>(row));
    }
    TFG_CUDA_CHECK(cudaMemcpy(device_pairs.data(), pairs.data(), kRows * sizeof(GradientPair),
                              cudaMemcpyHostToDevice));
    TFG_CUDA_CHECK(cudaMemcpy(device_exact.data(), exact.data(), kRows * sizeof(float),
                              cudaMemcpyHostToDevice));
    TFG_CUDA_CHECK(
        cudaMemcpy(device_scales.data(), &scales, sizeof(scales), cudaMemcpyHostToDevice));
    TFG_CUDA_CHECK(cudaMemcpy(device_bag.data(), grown.data(), grown.size() * sizeof(std::int32_t),
                              cudaMemcpyHostToDevice));
    const Tree tree =
        grower.Grow(bagged ? device_bag.data() : nullptr, static_cast<std::int64_t>(grown.size()),
                    gradients, active, static_cast<std::uint64_t>(tree_index));
    ASSERT_GT(tree.num_leaves(), 100) << "tree " << tree_index;
    std::vector<std::int32_t> order(2 * kRows);
    std::vector<long long> ranges(2 * static_cast<std::size_t>(tree.num_leaves()));
    TFG_CUDA_CHECK(cudaMemcpy(order.data(), grower.device_order(),
                              order.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost));
    TFG_CUDA_CHECK(cudaMemcpy(ranges.data(), grower.device_leaf_ranges(),
                              ranges.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    std::vector<int> times_seen(kRows, 0);
    for (int leaf = 0; leaf < tree.num_leaves(); ++leaf) {
      const long long begin = ranges[2 * static_cast<std::size_t>(leaf)];
      const long long end = ranges[2 * static_cast<std::size_t>(leaf) + 1];
      ASSERT_TRUE(0 <= begin && begin <= end && end <= 2 * kRows)
          << "tree " << tree_index << ", leaf " << leaf << ": [" << begin << ", " << end << ")";
      for (long long at = begin; at < end; ++at) {
        const std::int32_t row = order[static_cast<std::size_t>(at)];
        ASSERT_TRUE(row >= 0 && row < kRows) << "tree " << tree_index << ", position " << at;
        ++times_seen[static_cast<std::size_t>(row)];
        ASSERT_EQ(tree.LeafOfBins(bins, row), leaf) << "tree " << tree_index << ", row " << row;
      }
    }
    std::vector<int> expected(kRows, 0);
    for (std::int32_t row : grown) expected[static_cast<std::size_t>(row)] = 1;
    EXPECT_EQ(times_seen, expected) << "tree " << tree_index;
  }
  EXPECT_GT(grower.unused_split_rows(), 0)
      << "no split was made ahead and left untaken: the overwritten ranges were not reached";
}

}  // namespace
}  // namespace tabforge::tree
