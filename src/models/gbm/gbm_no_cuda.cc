// CPU-only build: there are no CUDA rounds; a fit asking for them runs on the CPU and says why.
#include "models/gbm/gbm_rounds.h"

namespace tabforge::gbm {

std::int64_t EstimateDeviceBytes(const RoundSetup& /*setup*/) { return 0; }

std::unique_ptr<RoundTrainer> MakeCudaRoundTrainer(const RoundSetup& /*setup*/, std::string& why,
                                                   std::string& /*device*/,
                                                   std::int64_t& /*reserved*/) {
  why =
      "this tabforge was built without CUDA; build with -DTABFORGE_CUDA=ON on a machine with "
      "the CUDA toolkit for GPU training";
  return nullptr;
}

bool DevicePredictRaw(const tree::CompactForest& /*forest*/, const tree::BinMapper& /*mapper*/,
                      const features::FeatureMatrix& /*features*/, int /*outputs*/,
                      const std::vector<double>& /*init_score*/, int /*device_id*/,
                      double /*memory_fraction*/, std::vector<double>& /*raw*/, std::string& why) {
  why = "this tabforge was built without CUDA";
  return false;
}

}  // namespace tabforge::gbm
