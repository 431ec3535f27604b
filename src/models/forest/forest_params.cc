// ForestParams: validation and parsing from JSON with scikit-learn's names.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/forest/forest.h"
#include "models/param_json.h"
#include "models/tree/binning.h"

namespace tabforge::forest {
namespace {

[[noreturn]] void OutOfRange(const std::string& name, double value, const std::string& range) {
  throw InvalidInput(
      fmt::format("forest parameter {} = {} is out of range: {}", name, value, range));
}

// max_features as scikit-learn reads a number: with a decimal point a fraction in (0, 1] of
// the features, without one a count (at least 1). Returns the fraction, or the count as a
// negative number; NaN when the text is neither.
double MaxFeaturesNumber(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(value > 0)) return std::nan("");
  if (text.find_first_of(".eE") != std::string::npos) return value <= 1 ? value : std::nan("");
  return value == std::floor(value) ? -value : std::nan("");
}

}  // namespace

int FeaturesPerNode(const std::string& max_features, bool classification, int features) {
  if (features <= 0) return 1;
  const std::string rule = max_features.empty() ? (classification ? "sqrt" : "1.0") : max_features;
  int count;
  if (rule == "sqrt") {
    count = static_cast<int>(std::floor(std::sqrt(double(features))));
  } else if (rule == "log2") {
    count = static_cast<int>(std::floor(std::log2(double(features))));
  } else {
    const double value = MaxFeaturesNumber(rule);
    count = value > 0 ? static_cast<int>(std::floor(value * features)) : static_cast<int>(-value);
  }
  return std::clamp(count, 1, features);
}

void ForestParams::Validate() const {
  if (n_estimators < 1) OutOfRange("n_estimators", n_estimators, "at least 1");
  if (!max_features.empty() && max_features != "sqrt" && max_features != "log2" &&
      std::isnan(MaxFeaturesNumber(max_features))) {
    throw InvalidInput(fmt::format(
        "forest parameter max_features = '{}' is not valid: give \"sqrt\", \"log2\", a fraction "
        "in (0, 1] (with a decimal point, e.g. 0.5 or 1.0) or a whole count of features",
        max_features));
  }
  if (max_depth < 0) OutOfRange("max_depth", max_depth, "at least 1, or 0/null for no limit");
  if (min_samples_split < 2)
    OutOfRange("min_samples_split", double(min_samples_split), "at least 2");
  if (min_samples_leaf < 1) OutOfRange("min_samples_leaf", double(min_samples_leaf), "at least 1");
  if (max_leaf_nodes != 0 && max_leaf_nodes < 2) {
    OutOfRange("max_leaf_nodes", max_leaf_nodes, "at least 2, or 0/null for no limit");
  }
  if (!(min_impurity_decrease >= 0))
    OutOfRange("min_impurity_decrease", min_impurity_decrease, "at least 0");
  if (!(max_samples > 0 && max_samples <= 1)) OutOfRange("max_samples", max_samples, "(0, 1]");
  if (device != "cpu" && device != "cuda" && device != "gpu") {
    throw InvalidInput(fmt::format(
        "forest parameter device = '{}' is not supported: use cpu or cuda (gpu is taken as cuda)",
        device));
  }
  if (gpu_device_id < 0) OutOfRange("gpu_device_id", gpu_device_id, "at least 0");
  if (!(gpu_memory_fraction > 0 && gpu_memory_fraction <= 1)) {
    OutOfRange("gpu_memory_fraction", gpu_memory_fraction, "(0, 1]");
  }
  if (!(gpu_lookahead >= 1 && gpu_lookahead <= 1e6)) {
    OutOfRange("gpu_lookahead", gpu_lookahead, "[1, 1e6]");
  }
  tree::BinningOptions binning;
  binning.max_bin = max_bin;
  binning.min_data_in_bin = min_data_in_bin;
  binning.Validate();
}

ForestParams ForestParams::FromJson(const std::string& json, const ForestParams& base) {
  ForestParams params = base;
  auto number = [](auto& field) {
    return models::ParamSetter{
        [&field](const nlohmann::json& v) { field = v.get<std::decay_t<decltype(field)>>(); },
        "number"};
  };
  // A limit where null (scikit-learn's None) means none, stored as 0.
  auto limit = [](auto& field) {
    return models::ParamSetter{[&field](const nlohmann::json& v) {
                                 field = v.is_null() ? 0 : v.get<std::decay_t<decltype(field)>>();
                               },
                               "number or null"};
  };
  const std::map<std::string, models::ParamSetter> setters = {
      {"n_estimators", number(params.n_estimators)},
      {"criterion",
       {[&](const nlohmann::json& v) {
          const std::string name = v.get<std::string>();
          if (name == "gini") {
            params.criterion = Criterion::kGini;
          } else if (name == "entropy" || name == "log_loss") {
            params.criterion = Criterion::kEntropy;
          } else if (name == "squared_error" || name == "mse") {
            params.criterion = Criterion::kSquaredError;
          } else {
            throw InvalidInput(fmt::format(
                "forest parameter criterion = '{}' is not supported: use gini or entropy "
                "(classification) or squared_error (regression)",
                name));
          }
        },
        "string"}},
      {"max_features",
       {[&](const nlohmann::json& v) {
          if (v.is_null()) {
            params.max_features = "1.0";
          } else if (v.is_number()) {
            params.max_features = v.dump();
          } else {
            params.max_features = v.get<std::string>();
          }
        },
        "string, number or null"}},
      {"max_depth", limit(params.max_depth)},
      {"min_samples_split", number(params.min_samples_split)},
      {"min_samples_leaf", number(params.min_samples_leaf)},
      {"max_leaf_nodes", limit(params.max_leaf_nodes)},
      {"min_impurity_decrease", number(params.min_impurity_decrease)},
      {"bootstrap",
       {[&](const nlohmann::json& v) { params.bootstrap = v.get<bool>(); }, "boolean"}},
      {"max_samples", limit(params.max_samples)},
      {"random_state", limit(params.seed)},
      {"n_jobs", {[](const nlohmann::json& v) { (void)v.get<int>(); }, "number"}},
      {"max_bin", number(params.max_bin)},
      {"min_data_in_bin", number(params.min_data_in_bin)},
      {"device",
       {[&](const nlohmann::json& v) { params.device = v.get<std::string>(); }, "string"}},
      {"gpu_device_id", number(params.gpu_device_id)},
      {"gpu_memory_fraction", number(params.gpu_memory_fraction)},
      {"gpu_lookahead", number(params.gpu_lookahead)},
  };
  models::ApplyJsonParams(json, "forest", setters);
  if (params.max_samples == 0) params.max_samples = 1;  // null: every row
  params.Validate();
  return params;
}

}  // namespace tabforge::forest
