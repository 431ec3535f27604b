// CPU/GPU parity of the forests: the CUDA batch device grows the CPU grower's trees (kernels:
// bootstrap, histograms and split search, partitions), and a forest fitted with device cuda
// is byte-for-byte the CPU's model. Skips where no CUDA device is usable.
#include <gtest/gtest.h>

#include "gpu_support.h"
#include "models/forest/forest.h"
#include "models/forest/forest_batch.h"
#include "models/forest/forest_parity.h"
#include "test_support.h"

namespace tabforge::forest {
namespace {

using parity::MakeSynthetic;

// The CUDA device with at most 4 trees a batch (fewer than the trees grown, so slots are reused
// across batches).
std::unique_ptr<BatchDevice> Cuda(const BatchData& batch) {
  std::string why, name;
  auto device = MakeCudaBatchDevice(batch, 0, 0.9, why, name, 4);
  EXPECT_NE(device, nullptr) << why;
  return device;
}

// The synthetic cases include 12 classes on 1000 bins: a histogram over 48 KiB of shared memory.
TEST(ForestCuda, SyntheticTreesMatchTheCpuGrower) {
  TFG_REQUIRE_GPU();
  parity::ExpectSyntheticParity(Cuda, 5000, 6);
}

TEST(ForestCuda, AdultAndLetterTreesMatchTheCpuGrower) {
  TFG_REQUIRE_GPU();
  TFG_REQUIRE_DATASETS();
  parity::ExpectDatasetParity(Cuda, 4, true);
}

// A forest fitted on the CPU and with device cuda: the same bytes, out-of-bag predictions and
// test predictions.
// With 16 threads the GPU's batches go eight at a time (each on its own stream and host thread);
// under a time limit (`limit`) the first, small one goes alone.
void ExpectSameFit(const features::FeatureMatrix& train, const std::vector<double>& labels,
                   int classes, ForestParams params, const features::FeatureMatrix& test,
                   const char* what, bool limit = false) {
  std::vector<double> cpu_oob, gpu_oob;
  const ForestModel cpu = ForestModel::Fit(train, labels, classes, params, 0, Deadline(), &cpu_oob);
  params.device = "cuda";
  const ForestModel gpu = ForestModel::Fit(train, labels, classes, params, 16,
                                           limit ? Deadline::In(600) : Deadline(), &gpu_oob);
  if (params.extra_trees) {
    // Extremely randomized trees stay on the CPU (their batches are tested above) and say so.
    EXPECT_EQ(gpu.report().device, "cpu") << what;
    EXPECT_NE(gpu.report().device_note.find("CPU"), std::string::npos) << what;
  } else {
    EXPECT_NE(gpu.report().device, "cpu") << what << ": " << gpu.report().device_note;
    EXPECT_NE(gpu.report().device_note.find("on 8 host threads at once"), std::string::npos)
        << what << ": " << gpu.report().device_note;
  }
  EXPECT_EQ(gpu.Serialize(), cpu.Serialize()) << what;
  EXPECT_EQ(gpu_oob, cpu_oob) << what;
  EXPECT_EQ(gpu.Predict(test, 0), cpu.Predict(test, 0)) << what;
}

TEST(ForestCuda, FittedModelIsTheCpuModel) {
  TFG_REQUIRE_GPU();
  TFG_REQUIRE_DATASETS();
  const tabforge::testing::AdultFeatures adult = tabforge::testing::LoadAdultFeatures();
  for (bool extra : {false, true}) {
    ForestParams params;
    params.n_estimators = 12;
    params.extra_trees = extra;
    ExpectSameFit(adult.train, adult.train_labels, 2, params, adult.test, extra ? "XT" : "RF");
  }
  ForestParams limited;
  limited.n_estimators = 21;  // a first batch of 4, then 3, 3, 3, 3, 3 and 2 at once
  ExpectSameFit(adult.train, adult.train_labels, 2, limited, adult.test, "RF, time limit", true);
  // Regression (quantized targets).
  const parity::Synthetic train = MakeSynthetic(6000, true, 33);
  ForestParams params;
  params.n_estimators = 10;
  params.criterion = Criterion::kSquaredError;
  ExpectSameFit(train.features, train.labels, 1, params, train.features, "RF regression");
}

}  // namespace
}  // namespace tabforge::forest
