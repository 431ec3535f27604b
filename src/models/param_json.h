// Hyperparameters from a JSON object, for the families whose parameters are plain fields
// (forests, KNN, linear models): each accepted key has a setter; an unknown key, a value of the
// wrong type or something that is not an object is InvalidInput naming the family and the key
// and listing the valid ones.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace tabforge::models {

// What one key accepts: `expected` names the type in errors ("number", "string", ...).
struct ParamSetter {
  std::function<void(const nlohmann::json&)> set;
  std::string_view expected = "number";
};

// Applies every key of the JSON object `json` (empty text: no keys) through `setters`.
// `family` (e.g. "RF") prefixes the messages. A setter may throw InvalidInput itself.
void ApplyJsonParams(const std::string& json, std::string_view family,
                     const std::map<std::string, ParamSetter>& setters);

}  // namespace tabforge::models
