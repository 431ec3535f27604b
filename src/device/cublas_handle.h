// A cuBLAS handle owned by one object, and checked cuBLAS calls (CUDA builds only): a failing
// call becomes a CudaError naming it.
#pragma once

#include <cublas_v2.h>
#include <fmt/format.h>

#include "core/error.h"
#include "device/cublas_library.h"

namespace tabforge::device {

inline void CheckCublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw CudaError(fmt::format("cuBLAS call {} failed: status {}", call, int(status)));
  }
}

class CublasHandle {
 public:
  // Throws CudaError when cuBLAS cannot be loaded (CublasUnavailable says why).
  CublasHandle() { CheckCublas(Cublas().create(&handle_), "cublasCreate"); }
  ~CublasHandle() { Cublas().destroy(handle_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace tabforge::device
