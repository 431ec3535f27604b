// The RF and XT families behind the model contract (models/model.h), with AutoGluon's defaults
// for its scikit-learn forests: 300 trees, at most 15000 leaves each, Gini (classification) or
// squared error (regression). Both train each tree on a bootstrap sample (AutoGluon sets
// bootstrap for XT too), and their out-of-bag predictions stand in for out-of-fold ones when
// bagged; XT (extremely randomized trees) draws one threshold per feature and node.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "models/model.h"

namespace tabforge::forest {

std::unique_ptr<models::Model> CreateRfModel(const std::string& hyperparameters_json,
                                             const models::Task& task);
std::unique_ptr<models::Model> CreateXtModel(const std::string& hyperparameters_json,
                                             const models::Task& task);
std::unique_ptr<models::Model> DeserializeRfModel(std::string_view bytes, const std::string& name,
                                                  const models::Task& task);
std::unique_ptr<models::Model> DeserializeXtModel(std::string_view bytes, const std::string& name,
                                                  const models::Task& task);

}  // namespace tabforge::forest
