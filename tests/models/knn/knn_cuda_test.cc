// CPU/GPU parity of the KNN search; skips where no CUDA device is usable.
#include <gtest/gtest.h>

#include <cmath>

#include "core/random.h"
#include "device/cuda_device.h"
#include "gpu_support.h"
#include "models/knn/knn.h"
#include "models/knn/knn_search.h"

namespace tabforge::knn {
namespace {

std::vector<float> Rows(std::int64_t rows, int dims, std::uint64_t stream) {
  std::vector<float> out(static_cast<std::size_t>(rows * dims));
  for (std::size_t at = 0; at < out.size(); ++at) {
    // Coarse values make exact distance ties common, as in real data.
    out[at] = float(std::floor(RandomUniform(3, stream, at) * 16) / 4);
  }
  return out;
}

// Every neighbour the GPU returns is the CPU's, except where two neighbours' distances agree to
// float rounding (then their order may differ): compared as distance lists and as index sets.
void ExpectSameNeighbours(std::int64_t references, std::int64_t queries, int dims, int k,
                          bool skip_self) {
  const std::vector<float> reference = Rows(references, dims, 1);
  const std::vector<float> query = skip_self ? reference : Rows(queries, dims, 2);
  std::vector<std::int32_t> cpu, gpu;
  std::vector<float> cpu_distance, gpu_distance;
  NearestNeighbors(reference, references, query, queries, dims, k, skip_self, 2, cpu, cpu_distance);
  std::string why, name;
  ASSERT_TRUE(DeviceNearestNeighbors(reference, references, query, queries, dims, k, skip_self, 0,
                                     0.9, gpu, gpu_distance, why, name))
      << why;
  ASSERT_EQ(gpu.size(), cpu.size());
  std::int64_t moved = 0;
  for (std::int64_t q = 0; q < queries; ++q) {
    for (int slot = 0; slot < k; ++slot) {
      const std::size_t at = static_cast<std::size_t>(q * k + slot);
      ASSERT_NEAR(gpu_distance[at], cpu_distance[at], 1e-4f * (1 + cpu_distance[at]))
          << "query " << q << " slot " << slot;
      if (gpu[at] != cpu[at]) {
        ++moved;
        // Only among (near-)equal distances: the CPU's neighbour at this slot has the GPU's
        // distance to rounding.
        ASSERT_NEAR(cpu_distance[at], gpu_distance[at], 1e-4f * (1 + cpu_distance[at]));
      }
      if (skip_self) {
        ASSERT_NE(gpu[at], q);
      }
    }
  }
  ::testing::Test::RecordProperty("moved_among_ties", static_cast<int>(moved));
}

TEST(KnnCuda, NeighboursMatchTheCpu) {
  TFG_REQUIRE_GPU();
  // The fused search (rows of up to kMaxFusedDims values).
  ExpectSameNeighbours(50000, 3000, 8, 5, false);
  ExpectSameNeighbours(70000, 5000, 28, 40, false);  // the long-list kernel, partial tiles
  ExpectSameNeighbours(20000, 20000, 6, 10, true);   // leave-one-out
  ExpectSameNeighbours(3001, 129, 61, 7, false);     // few queries: many lists each
  ExpectSameNeighbours(20, 5, 8, 10, false);         // more lists than references: empty ones
  // Wider rows: cuBLAS products over several tiles and the selection kernel.
  ExpectSameNeighbours(70000, 2000, 70, 10, false);
  ExpectSameNeighbours(40000, 3000, 66, 5, true);
}

TEST(KnnCuda, ModelPredictionsMatchTheCpu) {
  TFG_REQUIRE_GPU();
  const std::int64_t rows = 30000;
  features::FeatureMatrix x;
  x.num_rows = rows;
  for (int f = 0; f < 4; ++f) x.numeric_info.push_back({"x" + std::to_string(f), "", 0, {}});
  x.numeric.resize(static_cast<std::size_t>(rows) * 4);
  std::vector<double> labels;
  for (std::int64_t row = 0; row < rows; ++row) {
    double sum = 0;
    for (int f = 0; f < 4; ++f) {
      x.numeric[f * rows + row] = float(RandomUniform(5, f, row));
      sum += x.numeric[f * rows + row];
    }
    labels.push_back(sum > 2 ? 1.0 : 0.0);
  }
  models::Task task;
  models::FitContext cpu_context, gpu_context;
  gpu_context.num_gpus = 1;
  auto on_cpu = CreateKnnModel(R"({"n_neighbors": 10})", task);
  auto on_gpu = CreateKnnModel(R"({"n_neighbors": 10})", task);
  on_cpu->Fit(x, labels, nullptr, {}, cpu_context);
  on_gpu->Fit(x, labels, nullptr, {}, gpu_context);
  const std::vector<double> cpu = on_cpu->Predict(x, 2);
  const std::vector<double> gpu = on_gpu->Predict(x, 2);
  EXPECT_NE(on_gpu->Info().device.find("cuda:0"), std::string::npos) << on_gpu->Info().device_note;
  ASSERT_EQ(cpu.size(), gpu.size());
  std::int64_t differing = 0;
  for (std::size_t at = 0; at < cpu.size(); ++at) differing += std::fabs(cpu[at] - gpu[at]) > 1e-12;
  // Random real-valued features: distance ties are rare, so nearly every row agrees exactly.
  EXPECT_LE(differing, static_cast<std::int64_t>(cpu.size() / 1000));
}

}  // namespace
}  // namespace tabforge::knn
