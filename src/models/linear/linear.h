// Linear models (the LR family): logistic regression (binary, and multinomial for several
// classes) and ridge regression, on the dense view of the features (models/dense_encoder.h:
// standardised or quantile-transformed numerics plus one-hot categoricals with a capped
// number of columns), as AutoGluon's scikit-learn LR models. Logistic regression minimises
// scikit-learn's objective, the mean log loss plus ||W||^2 / (2 C n), with L-BFGS (fixed
// iteration and gradient-tolerance limits); ridge regression is solved in closed form.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/model.h"

namespace tabforge::linear {

// Parameters under scikit-learn's names.
struct LinearParams {
  bool penalize = true;        // penalty: "l2" (true) or "none"
  double C = 1;                // classification: inverse regularisation strength
  double alpha = 1;            // regression (Ridge): regularisation strength
  int max_iter = 100;          // L-BFGS iterations, at most
  double tol = 1e-4;           // stop once every gradient entry is at most this
  bool one_hot = true;         // categorical: "onehot" or "drop"
  int max_categories = 32;     // one-hot columns per categorical feature
  bool quantile = false;       // transform: "standard" or "quantile"
  std::string device = "cpu";  // "cpu", or "cuda"/"gpu" (not built for LR: runs on the CPU)

  void Validate() const;
  // From a JSON object: penalty, C, alpha, max_iter, tol, categorical, max_categories,
  // transform, solver ("lbfgs"), n_jobs (accepted, no effect), device.
  static LinearParams FromJson(const std::string& json);
};

// Minimises f with L-BFGS (10 corrections, backtracking line search) from `x`; `evaluate`
// returns f(x) and writes the gradient. Stops when every |gradient entry| <= tol, when f stops
// changing or after max_iter iterations; returns the iterations run.
int MinimizeLbfgs(
    const std::function<double(const std::vector<double>&, std::vector<double>&)>& evaluate,
    std::vector<double>& x, int max_iter, double tol);

std::unique_ptr<models::Model> CreateLinearModel(const std::string& hyperparameters_json,
                                                 const models::Task& task);
std::unique_ptr<models::Model> DeserializeLinearModel(std::string_view bytes,
                                                      const std::string& name,
                                                      const models::Task& task);

}  // namespace tabforge::linear
