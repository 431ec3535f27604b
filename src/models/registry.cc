#include <fmt/format.h>

#include "core/error.h"
#include "core/strings.h"
#include "models/forest/forest_family.h"
#include "models/gbm/gbm_family.h"
#include "models/knn/knn.h"
#include "models/linear/linear.h"
#include "models/model.h"

namespace tabforge::models {

namespace {

std::vector<Family>& Registry() {
  // One line per family.
  static std::vector<Family> families = {
      {"GBM", &gbm::CreateGbmModel, &gbm::DeserializeGbmModel},
      {"RF", &forest::CreateRfModel, &forest::DeserializeRfModel},
      {"XT", &forest::CreateXtModel, &forest::DeserializeXtModel},
      {"KNN", &knn::CreateKnnModel, &knn::DeserializeKnnModel},
      {"LR", &linear::CreateLinearModel, &linear::DeserializeLinearModel},
  };
  return families;
}

}  // namespace

const std::vector<Family>& Families() { return Registry(); }

void RegisterFamily(const Family& family) {
  for (const Family& known : Registry()) {
    if (known.key == family.key) {
      throw InvalidInput(
          fmt::format("a model family called '{}' is registered already", family.key));
    }
  }
  Registry().push_back(family);
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
