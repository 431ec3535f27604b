#include "models/param_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "core/strings.h"

namespace tabforge::models {

void ApplyJsonParams(const std::string& json, std::string_view family,
                     const std::map<std::string, ParamSetter>& setters) {
  const nlohmann::json object =
      nlohmann::json::parse(json.empty() ? std::string("{}") : json, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    throw InvalidInput(fmt::format("{} parameters must be a JSON object such as {{}}; got: {}",
                                   family, Printable(json, 80)));
  }
  for (const auto& [key, value] : object.items()) {
    auto setter = setters.find(key);
    if (setter == setters.end()) {
      std::vector<std::string> names;
      for (const auto& entry : setters) names.push_back(entry.first);
      throw InvalidInput(fmt::format("unknown {} parameter '{}'; the valid ones are: {}", family,
                                     key, Join(names, ", ")));
    }
    try {
      setter->second.set(value);
    } catch (const nlohmann::json::exception&) {
      throw InvalidInput(fmt::format("{} parameter {} has the wrong type ({}); give a {}", family,
                                     key, value.dump(), setter->second.expected));
    }
  }
}

}  // namespace tabforge::models
