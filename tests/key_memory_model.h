// A test double of the model contract: it remembers the keys (the first numeric feature) of
// its training rows and predicts one value, 1 for a row it did not train on and 1000 for one
// it did, so out-of-fold predictions of exactly 1 prove that every row was predicted once per
// set by a model that never saw it. `on_fit`, when set, sees each training matrix.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <utility>

#include "models/model.h"

namespace tabforge::testing {

class KeyMemoryModel final : public models::Model {
 public:
  explicit KeyMemoryModel(std::function<void(const features::FeatureMatrix&)> on_fit = {})
      : on_fit_(std::move(on_fit)) {}
  void Fit(const features::FeatureMatrix& train, std::span<const double>,
           const features::FeatureMatrix*, std::span<const double>,
           const models::FitContext&) override {
    for (std::int64_t row = 0; row < train.num_rows; ++row) seen_.insert(train.numeric[row]);
    if (on_fit_) on_fit_(train);
  }
  std::vector<double> Predict(const features::FeatureMatrix& x, int) const override {
    std::vector<double> out;
    for (std::int64_t row = 0; row < x.num_rows; ++row) {
      out.push_back(seen_.count(x.numeric[row]) ? 1000.0 : 1.0);
    }
    return out;
  }
  std::string Serialize() const override { return {}; }
  models::ModelInfo Info() const override {
    models::ModelInfo info;
    info.family = "KEYS";
    return info;
  }
  std::unique_ptr<models::Model> CloneForRefit(int) const override {
    return std::make_unique<KeyMemoryModel>(on_fit_);
  }

 private:
  std::function<void(const features::FeatureMatrix&)> on_fit_;
  std::set<float> seen_;
};

}  // namespace tabforge::testing
