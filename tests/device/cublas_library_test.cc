#include "device/cublas_library.h"

#include <gtest/gtest.h>

#include "core/dynamic_library.h"
#include "core/error.h"

namespace tabforge::device {
namespace {

// cuBLAS is opened at run time: where the dynamic linker finds the library (the CUDA toolkit
// is installed), every function tabforge calls resolves; where it does not, the reason names
// the library and the remedy, and Cublas() throws it as a CudaError. Either way the program
// itself starts without cuBLAS (it is not linked).
TEST(CublasLibrary, LoadsWhereTheLinkerFindsItAndSaysWhyNotElsewhere) {
  const std::string major = std::to_string(CUBLAS_VER_MAJOR);
#ifdef _WIN32
  const DynamicLibrary direct = DynamicLibrary::Open({"cublas64_" + major + ".dll"});
#else
  const DynamicLibrary direct = DynamicLibrary::Open({"libcublas.so." + major, "libcublas.so"});
#endif
  if (direct.loaded()) {
    EXPECT_EQ(CublasUnavailable(), "");
    const CublasApi& api = Cublas();
    EXPECT_NE(api.create, nullptr);
    EXPECT_NE(api.destroy, nullptr);
    EXPECT_NE(api.set_math_mode, nullptr);
    EXPECT_NE(api.sgemm, nullptr);
    EXPECT_NE(api.dgemm, nullptr);
    EXPECT_NE(api.dgemv, nullptr);
  } else {
    EXPECT_NE(CublasUnavailable().find("cuBLAS"), std::string::npos);
    EXPECT_NE(CublasUnavailable().find("install"), std::string::npos);
    EXPECT_THROW(Cublas(), CudaError);
  }
}

}  // namespace
}  // namespace tabforge::device
