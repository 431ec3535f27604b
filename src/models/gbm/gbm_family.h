// The GBM family behind the model contract (models/model.h), registered as "GBM" with
// AutoGluon's LightGBM defaults: learning rate 0.05, up to 10000 rounds, stopped by the
// eval metric on the validation rows with AutoGluon's adaptive patience.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "models/model.h"

namespace tabforge::gbm {

std::unique_ptr<models::Model> CreateGbmModel(const std::string& hyperparameters_json,
                                              const models::Task& task);
std::unique_ptr<models::Model> DeserializeGbmModel(std::string_view bytes, const std::string& name,
                                                   const models::Task& task);

}  // namespace tabforge::gbm
