// cuBLAS, opened at run time (CUDA builds only). Linking it would make every start of the
// program need the library; opened on first use, a CUDA build starts (and trains on the CPU
// or with its own kernels) on a machine whose CUDA installation lacks cuBLAS, and only the GPU
// paths that use it (KNN and LR) fall back to the CPU, with the reason.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace tabforge::device {

// The functions tabforge calls, as the library exports them.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasDgemm_v2) dgemm = nullptr;
  decltype(&cublasDgemv_v2) dgemv = nullptr;
};

// Why cuBLAS cannot be used (the library names tried, what failed, the remedy); empty when it
// loaded. The library is opened once, on the first call, and stays open.
const std::string& CublasUnavailable();

// The loaded functions; throws CudaError with CublasUnavailable()'s words when it did not load.
const CublasApi& Cublas();

}  // namespace tabforge::device
