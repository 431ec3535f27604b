// Presets and hyperparameters. A preset (presets/<name>.json) fixes the training strategy
// (bagging folds and sets, stack levels, refit) and names a hyperparameter set
// (presets/hyperparameters_<set>.json): the portfolio of model configurations in AutoGluon's
// shape, {"GBM": [{...}, {...}], "RF": {...}}, each configuration holding the family's own
// parameters plus "ag_args" (name_suffix, name, priority, problem_types: the problem types the
// configuration applies to, others skip it) and "ag_args_fit" (num_cpus,
// num_gpus, max_time_limit_ratio).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/model.h"

namespace tabforge::automl {

// The embedded files: (file name without .json, text).
const std::vector<std::pair<std::string_view, std::string_view>>& PresetFiles();

struct Preset {
  std::string name;
  std::string description;
  int num_bag_folds = 0;
  int num_bag_sets = 1;  // -1 ("auto"): as many as the time limit allows, up to 20; 1 without one
  int num_stack_levels = 0;
  bool refit_full = false;
  bool dynamic_stacking = false;  // check on a holdout whether stacking overfits (FitOptions)
  std::string hyperparameters;    // a hyperparameter set's name
};

// The preset called `name`; throws InvalidInput listing the presets.
Preset GetPreset(const std::string& name);
std::vector<std::string> PresetNames();

// The weighted ensembles' names start with this (WeightedEnsemble_L2, ...); no configuration
// may take such a name.
inline constexpr std::string_view kEnsemblePrefix = "WeightedEnsemble";

// One model configuration of the portfolio.
struct ModelConfig {
  std::string family;                 // registry key
  std::string name;                   // e.g. "GBMXT" (family plus name_suffix, or ag_args name)
  std::string params_json;            // the family's parameters (ag_args removed)
  int priority = 0;                   // higher trains first
  int num_cpus = 0;                   // 0: the fit's
  int num_gpus = -1;                  // -1: the fit's
  double max_time_limit_ratio = 1.0;  // share of the time left this model may use
};

// The portfolio from `text`: a JSON object in AutoGluon's shape, a file holding one, or the
// name of an embedded set ("default", "light"). Every configuration is checked by creating its
// model for `task`, so an unknown family, key or value is reported before training starts.
// Sorted by priority, highest first (stable, so listed order breaks ties).
std::vector<ModelConfig> ParseHyperparameters(const std::string& text, const models::Task& task);

}  // namespace tabforge::automl
