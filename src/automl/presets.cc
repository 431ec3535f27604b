#include "automl/presets.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "data/problem_type.h"

namespace tabforge::automl {
namespace {

// AutoGluon's default priorities by family (higher trains first).
int DefaultPriority(std::string_view family) {
  static const std::map<std::string_view, int> kPriorities = {{"KNN", 100}, {"GBM", 90}, {"RF", 80},
                                                              {"CAT", 70},  {"XT", 60},  {"NN", 50},
                                                              {"XGB", 40},  {"LR", 30}};
  auto at = kPriorities.find(family);
  return at == kPriorities.end() ? 0 : at->second;
}

nlohmann::json ParseObject(std::string_view text, const std::string& what) {
  nlohmann::json object = nlohmann::json::parse(text, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    throw InvalidInput(fmt::format("{} is not a JSON object such as {{\"GBM\": [{{}}]}}: {}", what,
                                   Printable(text, 80)));
  }
  return object;
}

std::string_view EmbeddedFile(const std::string& name) {
  for (const auto& [file, text] : PresetFiles()) {
    if (file == name) return text;
  }
  return {};
}

}  // namespace

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const auto& [file, text] : PresetFiles()) {
    if (!file.starts_with("hyperparameters_")) names.emplace_back(file);
  }
  return names;
}

Preset GetPreset(const std::string& name) {
  const std::string_view text = name.starts_with("hyperparameters_") ? "" : EmbeddedFile(name);
  if (text.empty()) {
    throw InvalidInput(
        fmt::format("unknown preset '{}'; the presets are: {}", name, Join(PresetNames(), ", ")));
  }
  const nlohmann::json object = ParseObject(text, "preset " + name);
  Preset preset;
  preset.name = name;
  preset.description = object.value("description", "");
  preset.num_bag_folds = object.value("num_bag_folds", 0);
  const nlohmann::json sets = object.value("num_bag_sets", nlohmann::json(1));
  preset.num_bag_sets =
      sets.is_string() && sets.get<std::string>() == "auto" ? -1 : sets.get<int>();
  preset.num_stack_levels = object.value("num_stack_levels", 0);
  preset.refit_full = object.value("refit_full", false);
  preset.dynamic_stacking = object.value("dynamic_stacking", false);
  preset.hyperparameters = object.value("hyperparameters", "default");
  return preset;
}

std::vector<ModelConfig> ParseHyperparameters(const std::string& text, const models::Task& task) {
  std::string json;
  std::string what = "hyperparameters";
  const std::string_view trimmed = TrimSpaces(text);
  if (trimmed.starts_with("{")) {
    json = std::string(trimmed);
  } else if (std::string_view embedded = EmbeddedFile("hyperparameters_" + std::string(trimmed));
             !embedded.empty()) {
    json = std::string(embedded);
    what = fmt::format("hyperparameter set {}", trimmed);
  } else {
    std::ifstream file{std::string(trimmed)};
    if (!file) {
      throw InvalidInput(fmt::format(
          "hyperparameters '{}' is neither a JSON object, a readable file, nor a set name "
          "(default, light); give e.g. '{{\"GBM\": [{{}}, {{\"num_leaves\": 128}}]}}'",
          Printable(text, 80)));
    }
    std::stringstream buffer;
    buffer << file.rdbuf();
    json = buffer.str();
    what = fmt::format("hyperparameters file {}", trimmed);
  }
  const nlohmann::json object = ParseObject(json, what);
  std::vector<ModelConfig> configs;
  for (const auto& [family_key, value] : object.items()) {
    const models::Family& family = models::GetFamily(family_key);
    std::vector<nlohmann::json> entries;
    if (value.is_array()) {
      for (const auto& entry : value) entries.push_back(entry);
    } else {
      entries.push_back(value);
    }
    for (std::size_t index = 0; index < entries.size(); ++index) {
      nlohmann::json params = entries[index];
      if (!params.is_object()) {
        throw InvalidInput(fmt::format(
            "{}: {} configuration {} is not a JSON object (got {}); give {{}} for the defaults",
            what, family_key, index + 1, params.dump()));
      }
      ModelConfig config;
      bool applies = true;
      config.family = family_key;
      config.name = family_key;
      config.priority = DefaultPriority(family_key);
      if (params.contains("ag_args")) {
        const nlohmann::json& args = params["ag_args"];
        for (const auto& [key, arg] : args.items()) {
          try {
            if (key == "name_suffix") {
              config.name = family_key + arg.get<std::string>();
            } else if (key == "name") {
              config.name = arg.get<std::string>();
            } else if (key == "priority") {
              config.priority = arg.get<int>();
            } else if (key == "problem_types") {
              // The problem types the configuration applies to; others skip it.
              bool listed = false;
              for (const std::string& type : arg.get<std::vector<std::string>>()) {
                const ProblemType parsed = data::ParseProblemType(type);
                listed = listed || parsed == task.problem_type;
              }
              applies = listed;
            } else {
              throw InvalidInput(fmt::format(
                  "{}: unknown ag_args key '{}' in {} configuration {}; the valid ones are: "
                  "name, name_suffix, priority, problem_types",
                  what, key, family_key, index + 1));
            }
          } catch (const nlohmann::json::exception&) {
            throw InvalidInput(
                fmt::format("{}: ag_args {} has the wrong type ({})", what, key, arg.dump()));
          }
        }
        params.erase("ag_args");
      }
      if (params.contains("ag_args_fit")) {
        const nlohmann::json& args = params["ag_args_fit"];
        for (const auto& [key, arg] : args.items()) {
          try {
            if (key == "num_cpus") {
              config.num_cpus = arg.get<int>();
            } else if (key == "num_gpus") {
              config.num_gpus = arg.get<int>();
            } else if (key == "max_time_limit_ratio") {
              config.max_time_limit_ratio = arg.get<double>();
              if (!(config.max_time_limit_ratio > 0 && config.max_time_limit_ratio <= 1)) {
                throw InvalidInput(
                    fmt::format("{}: ag_args_fit max_time_limit_ratio {} must be in (0, 1]", what,
                                config.max_time_limit_ratio));
              }
            } else {
              throw InvalidInput(fmt::format(
                  "{}: unknown ag_args_fit key '{}' in {} configuration {}; the valid ones are: "
                  "max_time_limit_ratio, num_cpus, num_gpus",
                  what, key, family_key, index + 1));
            }
          } catch (const nlohmann::json::exception&) {
            throw InvalidInput(
                fmt::format("{}: ag_args_fit {} has the wrong type ({})", what, key, arg.dump()));
          }
        }
        params.erase("ag_args_fit");
      }
      if (!applies) continue;
      if (config.name.starts_with(kEnsemblePrefix)) {
        throw InvalidInput(fmt::format(
            "{}: {} configuration {} is named '{}'; names starting with {} are the weighted "
            "ensembles'; choose another ag_args name or name_suffix",
            what, family_key, index + 1, config.name, kEnsemblePrefix));
      }
      config.params_json = params.dump();
      try {
        family.create(config.params_json, task);
      } catch (const InvalidInput& error) {
        throw InvalidInput(
            fmt::format("{}: {} configuration {}: {}", what, family_key, index + 1, error.what()));
      }
      configs.push_back(std::move(config));
    }
  }
  // Names must be unique: a second configuration without its own suffix gets a number.
  std::map<std::string, int> seen;
  for (ModelConfig& config : configs) {
    const int count = seen[config.name]++;
    if (count > 0) config.name += fmt::format("_{}", count + 1);
  }
  std::stable_sort(configs.begin(), configs.end(), [](const ModelConfig& a, const ModelConfig& b) {
    return a.priority > b.priority;
  });
  if (configs.empty()) throw InvalidInput(fmt::format("{} lists no model configuration", what));
  return configs;
}

}  // namespace tabforge::automl
