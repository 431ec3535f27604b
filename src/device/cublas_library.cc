#include "device/cublas_library.h"

#include <fmt/format.h>

#include <vector>

#include "core/dynamic_library.h"
#include "core/error.h"

namespace tabforge::device {
namespace {

struct Loaded {
  DynamicLibrary library;
  CublasApi api;
  std::string problem;
};

Loaded Load() {
  Loaded loaded;
  const std::string major = std::to_string(CUBLAS_VER_MAJOR);
#ifdef _WIN32
  const std::vector<std::string> names = {"cublas64_" + major + ".dll"};
#else
  const std::vector<std::string> names = {"libcublas.so." + major, "libcublas.so"};
#endif
  loaded.library = DynamicLibrary::Open(names);
  if (!loaded.library.loaded()) {
    loaded.problem = fmt::format(
        "cuBLAS {} could not be loaded ({}); install the CUDA toolkit's cuBLAS (or put its "
        "folder on the library path) to run LR, and KNN on rows wider than 64 columns, on the "
        "GPU",
        major, loaded.library.error());
    return loaded;
  }
  CublasApi& api = loaded.api;
  std::string missing;
  auto find = [&](auto** function, const char* symbol) {
    if (!loaded.library.Find(function, symbol))
      missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
  find(&api.create, "cublasCreate_v2");
  find(&api.destroy, "cublasDestroy_v2");
  find(&api.set_math_mode, "cublasSetMathMode");
  find(&api.sgemm, "cublasSgemm_v2");
  find(&api.dgemm, "cublasDgemm_v2");
  find(&api.dgemv, "cublasDgemv_v2");
  if (!missing.empty()) {
    loaded.problem = fmt::format(
        "{} lacks {}: it is not the cuBLAS {} this build expects; install the CUDA toolkit's "
        "cuBLAS {}",
        loaded.library.name(), missing, major, major);
  }
  return loaded;
}

const Loaded& Library() {
  static const Loaded loaded = Load();
  return loaded;
}

}  // namespace

const std::string& CublasUnavailable() { return Library().problem; }

const CublasApi& Cublas() {
  const Loaded& loaded = Library();
  if (!loaded.problem.empty()) throw CudaError(loaded.problem);
  return loaded.api;
}

}  // namespace tabforge::device
