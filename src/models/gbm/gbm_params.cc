// GbmParams: validation and parsing from JSON with LightGBM's names and common aliases.
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/strings.h"
#include "models/gbm/gbm.h"

namespace tabforge::gbm {
namespace {

[[noreturn]] void OutOfRange(const std::string& name, double value, const std::string& range) {
  throw InvalidInput(fmt::format("GBM parameter {} = {} is out of range: {}", name, value, range));
}

}  // namespace

bool IsKnownObjective(const std::string& objective) {
  return objective == "binary" || objective == "multiclass" || IsRegressionObjective(objective);
}

bool IsRegressionObjective(const std::string& objective) {
  return objective == "regression" || objective == "regression_l1" || objective == "huber" ||
         objective == "quantile";
}

void GbmParams::Validate() const {
  if (!IsKnownObjective(objective)) {
    throw InvalidInput(fmt::format(
        "GBM parameter objective = '{}' is not supported: use binary, multiclass, regression, "
        "regression_l1, huber or quantile",
        objective));
  }
  if (objective == "quantile" && !(alpha > 0 && alpha < 1))
    OutOfRange("alpha", alpha, "(0, 1) for quantile");
  if (objective == "huber" && !(alpha > 0)) OutOfRange("alpha", alpha, "greater than 0 for huber");
  if (objective == "multiclass" && num_class < 3)
    OutOfRange("num_class", num_class, "at least 3 for multiclass");
  if (num_iterations < 1) OutOfRange("num_iterations", num_iterations, "at least 1");
  if (!(learning_rate > 0)) OutOfRange("learning_rate", learning_rate, "greater than 0");
  if (num_leaves < 2 || num_leaves > 131072) OutOfRange("num_leaves", num_leaves, "2..131072");
  if (min_data_in_leaf < 1) OutOfRange("min_data_in_leaf", double(min_data_in_leaf), "at least 1");
  if (min_sum_hessian_in_leaf < 0)
    OutOfRange("min_sum_hessian_in_leaf", min_sum_hessian_in_leaf, "at least 0");
  if (lambda_l1 < 0) OutOfRange("lambda_l1", lambda_l1, "at least 0");
  if (lambda_l2 < 0) OutOfRange("lambda_l2", lambda_l2, "at least 0");
  if (min_gain_to_split < 0) OutOfRange("min_gain_to_split", min_gain_to_split, "at least 0");
  if (max_delta_step < 0 && max_delta_step != -1) {
    OutOfRange("max_delta_step", max_delta_step,
               "at least 0 (0 = no cap), or -1 for the default (10 for multiclass, else no cap)");
  }
  if (!(feature_fraction > 0 && feature_fraction <= 1))
    OutOfRange("feature_fraction", feature_fraction, "(0, 1]");
  if (!(feature_fraction_bynode > 0 && feature_fraction_bynode <= 1)) {
    OutOfRange("feature_fraction_bynode", feature_fraction_bynode, "(0, 1]");
  }
  if (!(bagging_fraction > 0 && bagging_fraction <= 1))
    OutOfRange("bagging_fraction", bagging_fraction, "(0, 1]");
  if (bagging_freq < 0) OutOfRange("bagging_freq", bagging_freq, "at least 0");
  if (max_cat_threshold < 1) OutOfRange("max_cat_threshold", max_cat_threshold, "at least 1");
  if (cat_smooth < 0) OutOfRange("cat_smooth", cat_smooth, "at least 0");
  if (cat_l2 < 0) OutOfRange("cat_l2", cat_l2, "at least 0");
  if (!(histogram_pool_size > 0) && histogram_pool_size != -1) {
    OutOfRange("histogram_pool_size", histogram_pool_size,
               "greater than 0 (megabytes), or -1 for the default");
  }
  if (!(scale_pos_weight > 0)) OutOfRange("scale_pos_weight", scale_pos_weight, "greater than 0");
  if (num_grad_quant_bins < 2 || num_grad_quant_bins > (1 << 21)) {
    OutOfRange("num_grad_quant_bins", num_grad_quant_bins, "2..2097152");
  }
  if (early_stopping_round < -1)
    OutOfRange("early_stopping_round", early_stopping_round,
               "at least 0 (0 = off), or -1 for AutoGluon's adaptive patience");
  if (merge_equal_rows != "auto" && merge_equal_rows != "always" && merge_equal_rows != "never") {
    throw InvalidInput(fmt::format(
        "GBM parameter merge_equal_rows = '{}' is not supported: use auto, always or never",
        merge_equal_rows));
  }
  if (device != "cpu" && device != "cuda" && device != "gpu") {
    throw InvalidInput(fmt::format(
        "GBM parameter device = '{}' is not supported: use cpu or cuda (gpu is taken as cuda)",
        device));
  }
  if (gpu_device_id < 0) OutOfRange("gpu_device_id", gpu_device_id, "at least 0");
  if (!(gpu_memory_fraction > 0 && gpu_memory_fraction <= 1))
    OutOfRange("gpu_memory_fraction", gpu_memory_fraction, "(0, 1]");
  tree::BinningOptions binning;
  binning.max_bin = max_bin;
  binning.min_data_in_bin = min_data_in_bin;
  binning.sample_rows = bin_construct_sample_cnt;
  binning.Validate();
}

GbmParams GbmParams::FromJson(const std::string& json) { return FromJson(json, GbmParams()); }

GbmParams GbmParams::FromJson(const std::string& json, const GbmParams& base) {
  nlohmann::json object = nlohmann::json::parse(json, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    throw InvalidInput(
        fmt::format("GBM parameters must be a JSON object such as "
                    "{{\"num_leaves\": 63}}; got: {}",
                    Printable(json, 80)));
  }
  GbmParams params = base;
  using Setter = std::function<void(const nlohmann::json&)>;
  auto set = [](auto& field) {
    return Setter(
        [&field](const nlohmann::json& v) { field = v.get<std::decay_t<decltype(field)>>(); });
  };
  const std::map<std::string, Setter> setters = {
      {"objective",
       [&](const nlohmann::json& v) {
         // LightGBM's aliases of the objectives.
         static const std::map<std::string, std::string> kAliases = {
             {"l2", "regression"},
             {"mse", "regression"},
             {"mean_squared_error", "regression"},
             {"regression_l2", "regression"},
             {"l1", "regression_l1"},
             {"mae", "regression_l1"},
             {"mean_absolute_error", "regression_l1"},
             {"multiclassova", "multiclass"},
             {"softmax", "multiclass"},
             {"logistic", "binary"}};
         params.objective = v.get<std::string>();
         if (auto alias = kAliases.find(params.objective); alias != kAliases.end()) {
           params.objective = alias->second;
         }
       }},
      {"alpha", set(params.alpha)},
      {"num_class", set(params.num_class)},
      {"num_iterations", set(params.num_iterations)},
      {"num_boost_round", set(params.num_iterations)},
      {"n_estimators", set(params.num_iterations)},
      {"learning_rate", set(params.learning_rate)},
      {"eta", set(params.learning_rate)},
      {"num_leaves", set(params.num_leaves)},
      {"max_leaves", set(params.num_leaves)},
      {"max_depth", set(params.max_depth)},
      {"min_data_in_leaf", set(params.min_data_in_leaf)},
      {"min_child_samples", set(params.min_data_in_leaf)},
      {"min_sum_hessian_in_leaf", set(params.min_sum_hessian_in_leaf)},
      {"min_child_weight", set(params.min_sum_hessian_in_leaf)},
      {"lambda_l1", set(params.lambda_l1)},
      {"reg_alpha", set(params.lambda_l1)},
      {"lambda_l2", set(params.lambda_l2)},
      {"reg_lambda", set(params.lambda_l2)},
      {"min_gain_to_split", set(params.min_gain_to_split)},
      {"max_delta_step", set(params.max_delta_step)},
      {"feature_fraction", set(params.feature_fraction)},
      {"colsample_bytree", set(params.feature_fraction)},
      {"feature_fraction_bynode", set(params.feature_fraction_bynode)},
      {"bagging_fraction", set(params.bagging_fraction)},
      {"subsample", set(params.bagging_fraction)},
      {"bagging_freq", set(params.bagging_freq)},
      {"max_bin", set(params.max_bin)},
      {"min_data_in_bin", set(params.min_data_in_bin)},
      {"bin_construct_sample_cnt", set(params.bin_construct_sample_cnt)},
      {"max_cat_to_onehot", set(params.max_cat_to_onehot)},
      {"max_cat_threshold", set(params.max_cat_threshold)},
      {"cat_smooth", set(params.cat_smooth)},
      {"cat_l2", set(params.cat_l2)},
      {"min_data_per_group", set(params.min_data_per_group)},
      {"scale_pos_weight", set(params.scale_pos_weight)},
      {"histogram_pool_size", set(params.histogram_pool_size)},
      {"extra_trees", set(params.extra_trees)},
      {"merge_equal_rows",
       [&](const nlohmann::json& v) { params.merge_equal_rows = v.get<std::string>(); }},
      {"class_weight",
       [&](const nlohmann::json& v) {
         if (v.is_string()) {
           params.class_weight = v.get<std::string>();
           if (params.class_weight != "balanced") {
             throw InvalidInput(
                 fmt::format("class_weight '{}' is not known; give \"balanced\" or an array of one "
                             "weight per class",
                             params.class_weight));
           }
           return;
         }
         params.class_weights = v.get<std::vector<double>>();
         for (double weight : params.class_weights) {
           if (!(weight > 0) || !std::isfinite(weight)) {
             throw InvalidInput(
                 fmt::format("class_weight has weight {}; every weight must be > 0", weight));
           }
         }
       }},
      {"num_grad_quant_bins", set(params.num_grad_quant_bins)},
      {"use_quantized_grad", set(params.use_quantized_grad)},
      {"early_stopping_round", set(params.early_stopping_round)},
      {"early_stopping_rounds", set(params.early_stopping_round)},
      {"metric", [&](const nlohmann::json& v) { params.metric = v.get<std::string>(); }},
      {"seed", set(params.seed)},
      {"device", [&](const nlohmann::json& v) { params.device = v.get<std::string>(); }},
      {"device_type", [&](const nlohmann::json& v) { params.device = v.get<std::string>(); }},
      {"gpu_device_id", set(params.gpu_device_id)},
      {"gpu_memory_fraction", set(params.gpu_memory_fraction)},
  };
  for (const auto& [key, value] : object.items()) {
    auto setter = setters.find(key);
    if (setter == setters.end()) {
      std::vector<std::string> names;
      for (const auto& entry : setters) names.push_back(entry.first);
      throw InvalidInput(fmt::format("unknown GBM parameter '{}'; the valid ones are: {}", key,
                                     Join(names, ", ")));
    }
    try {
      setter->second(value);
    } catch (const nlohmann::json::exception&) {
      throw InvalidInput(
          fmt::format("GBM parameter {} has the wrong type ({}); give a {}", key, value.dump(),
                      key == "class_weight" ? "\"balanced\" or an array of numbers"
                      : key == "objective" || key == "metric" || key == "device" ||
                              key == "device_type" || key == "merge_equal_rows"
                          ? "string"
                      : key == "use_quantized_grad" || key == "extra_trees" ? "boolean"
                                                                            : "number"));
    }
  }
  params.Validate();
  return params;
}

}  // namespace tabforge::gbm
