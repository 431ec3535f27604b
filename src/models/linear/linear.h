// Linear models (the LR family): logistic regression (binary, and multinomial for several
// classes) and linear regression, on the dense view of the features (models/dense_encoder.h:
// standardised or quantile-transformed numerics plus one-hot categoricals with a capped
// number of columns), as AutoGluon's scikit-learn LR models. Penalties as scikit-learn's:
// logistic regression minimises the mean log loss plus P(W) / (C n), with P the L2 term
// ||W||^2 / 2, the L1 term ||W||_1 or the elastic net mix of both (l1_ratio); regression with
// L2 is Ridge (||y - X w - b||^2 + alpha ||w||^2, solved in closed form), with L1 Lasso and
// with elasticnet ElasticNet (||y - X w - b||^2 / (2 n) + alpha P(w)). Iterative fits run
// L-BFGS, or OWL-QN (Andrew and Gao 2007) when there is an L1 term, with fixed iteration and
// gradient-tolerance limits. With a GPU the products over the rows run on it (cuBLAS, double
// precision; linear_device.h) and the optimiser stays on the host.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/model.h"

namespace tabforge::linear {

enum class Penalty { kNone, kL2, kL1, kElasticNet };

// Parameters under scikit-learn's names.
struct LinearParams {
  Penalty penalty = Penalty::kL2;  // "l2", "l1", "elasticnet" or "none" (also null)
  double l1_ratio = 0.5;           // elasticnet: the L1 share of the penalty, in [0, 1]
  double C = 1;                    // classification: inverse regularisation strength
  double alpha = 1;                // regression: regularisation strength
  int max_iter = 100;              // L-BFGS / OWL-QN iterations, at most
  double tol = 1e-4;               // stop once every gradient entry is at most this
  bool one_hot = true;             // categorical: "onehot" or "drop"
  int max_categories = 32;         // one-hot columns per categorical feature
  bool quantile = false;           // transform: "standard" or "quantile"
  std::string device = "cpu";      // "cpu", or "cuda" (also "gpu")

  void Validate() const;
  // From a JSON object: penalty, l1_ratio, C, alpha, max_iter, tol, categorical,
  // max_categories, transform, solver ("lbfgs": L-BFGS, or OWL-QN
  // with an L1 term), n_jobs (accepted, no effect), device.
  static LinearParams FromJson(const std::string& json);
};

// Minimises f(x) + sum_i l1[i] |x_i| from `x`: L-BFGS (10 corrections, backtracking line
// search) when `l1` is empty, OWL-QN otherwise (l1 has one weight >= 0 per entry of x).
// `evaluate` returns the smooth f(x) and writes its gradient. Stops when every entry of the
// (pseudo-)gradient is at most tol in size, when the objective stops changing, when even the
// steepest-descent direction finds no decrease, or after max_iter iterations; returns the
// iterations run.
int MinimizeLbfgs(
    const std::function<double(const std::vector<double>&, std::vector<double>&)>& evaluate,
    std::vector<double>& x, int max_iter, double tol, std::span<const double> l1 = {});

std::unique_ptr<models::Model> CreateLinearModel(const std::string& hyperparameters_json,
                                                 const models::Task& task);
std::unique_ptr<models::Model> DeserializeLinearModel(std::string_view bytes,
                                                      const std::string& name,
                                                      const models::Task& task);

}  // namespace tabforge::linear
