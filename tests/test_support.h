// Helpers shared by the test executables.
#pragma once

#include <string>

#include "core/error.h"

namespace tabforge::testing {

// The message of the InvalidInput that `call()` throws, or "" when it throws none.
template <typename Call>
std::string InvalidInputMessage(Call&& call) {
  try {
    call();
  } catch (const InvalidInput& error) {
    return error.what();
  }
  return {};
}

// The folder of the public datasets: $TABFORGE_DATASETS_DIR when set, else the path fixed at
// configure time (../shared/datasets beside the repository). Empty when neither exists.
std::string DatasetsDir();

// Full path of one dataset file (e.g. "adult_train.csv.gz"), or empty when the folder is missing.
std::string DatasetPath(const std::string& file_name);

// A fresh empty folder under the system temporary folder, unique to this process and name.
std::string TempDir(const std::string& name);

// Writes `contents` to `path` byte for byte.
void WriteFile(const std::string& path, const std::string& contents);

}  // namespace tabforge::testing

// Skips the current test with a clear message when the public datasets are not present.
#define TFG_REQUIRE_DATASETS()                                                         \
  do {                                                                                 \
    if (::tabforge::testing::DatasetsDir().empty())                                    \
      GTEST_SKIP() << "public datasets not found (expected ../shared/datasets beside " \
                      "the repository, or set TABFORGE_DATASETS_DIR)";                 \
  } while (false)
