#include "test_support.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace tabforge::testing {

std::string DatasetsDir() {
  namespace fs = std::filesystem;
  if (const char* from_env = std::getenv("TABFORGE_DATASETS_DIR"); from_env && *from_env) {
    return fs::is_directory(from_env) ? std::string(from_env) : std::string();
  }
  return fs::is_directory(TABFORGE_DATASETS_DIR) ? std::string(TABFORGE_DATASETS_DIR)
                                                 : std::string();
}

std::string DatasetPath(const std::string& file_name) {
  std::string dir = DatasetsDir();
  return dir.empty() ? std::string() : dir + "/" + file_name;
}

std::string TempDir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::temp_directory_path() / ("tabforge_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary);
  TFG_CHECK(out.good(), "cannot open {} for writing", path);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
}

}  // namespace tabforge::testing
