#include <fmt/format.h>

#include "core/error.h"
#include "core/strings.h"
#include "models/gbm/gbm_family.h"
#include "models/model.h"

namespace tabforge::models {

const std::vector<Family>& Families() {
  // One line per family.
  static const std::vector<Family> kFamilies = {
      {"GBM", &gbm::CreateGbmModel, &gbm::DeserializeGbmModel},
  };
  return kFamilies;
}

const Family& GetFamily(std::string_view key) {
  std::vector<std::string> keys;
  for (const Family& family : Families()) {
    if (family.key == key) return family;
    keys.emplace_back(family.key);
  }
  throw InvalidInput(
      fmt::format("unknown model family '{}'; the registered ones are: {}", key, Join(keys, ", ")));
}

}  // namespace tabforge::models
