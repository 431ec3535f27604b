#include "models/model.h"

#include "core/error.h"

namespace tabforge::models {

std::vector<double> Model::FitOutOfFold(const features::FeatureMatrix& /*train*/,
                                        std::span<const double> /*labels*/,
                                        const FitContext& /*context*/) {
  TFG_CHECK(false, "FitOutOfFold called on a model without out-of-fold predictions ({})",
            Info().family);
  return {};
}

}  // namespace tabforge::models
