// The LR family's CUDA path (CUDA builds only; linear_no_cuda.cc answers in CPU-only ones).
#include <fmt/format.h>

#include <numeric>

#include "device/cublas_handle.h"
#include "device/cuda_check.h"
#include "device/cuda_device.h"
#include "models/linear/linear_device.h"
#include "models/linear/linear_kernels.h"

namespace tabforge::linear {
namespace {

using device::CheckCublas;
using device::DeviceArray;

class CudaDesign final : public DeviceDesign {
 public:
  CudaDesign(const std::vector<double>& design, std::int64_t rows, int columns,
             const double* labels, LossKind loss, int outputs, std::string device_name)
      : rows_(rows),
        columns_(columns),
        outputs_(outputs),
        loss_(loss),
        device_name_(std::move(device_name)) {
    CheckCublas(device::Cublas().set_math_mode(cublas_.get(), CUBLAS_PEDANTIC_MATH),
                "cublasSetMathMode");
    device::Upload(design_, design.data(), design.size());
    device::Upload(labels_, labels, static_cast<std::size_t>(rows));
    theta_.Resize(static_cast<std::size_t>(columns) * outputs);
    gradient_.Resize(theta_.size());
    scores_.Resize(static_cast<std::size_t>(rows * outputs));
    residual_.Resize(scores_.size());
    partial_.Resize(static_cast<std::size_t>(kernels::RowLossBlocks(rows)));
    host_partial_.resize(partial_.size());
  }

  double MeanLoss(const std::vector<double>& theta, std::vector<double>& gradient) override {
    TFG_CUDA_CHECK(cudaMemcpy(theta_.data(), theta.data(), theta_.bytes(), cudaMemcpyHostToDevice));
    const double one = 1, zero = 0;
    const int rows = static_cast<int>(rows_);
    // scores (column-major rows x outputs) = X theta; theta row-major columns x outputs is
    // column-major outputs x columns, so it enters transposed.
    CheckCublas(device::Cublas().dgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, rows, outputs_,
                                       columns_, &one, design_.data(), rows, theta_.data(),
                                       outputs_, &zero, scores_.data(), rows),
                "cublasDgemm (scores)");
    kernels::RowLosses(loss_, scores_.data(), labels_.data(), rows_, outputs_, 1.0 / double(rows_),
                       residual_.data(), partial_.data());
    // gradient (column-major outputs x columns, i.e. row-major columns x outputs) = R^T X.
    CheckCublas(device::Cublas().dgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, outputs_, columns_,
                                       rows, &one, residual_.data(), rows, design_.data(), rows,
                                       &zero, gradient_.data(), outputs_),
                "cublasDgemm (gradient)");
    gradient.resize(theta.size());
    TFG_CUDA_CHECK(
        cudaMemcpy(gradient.data(), gradient_.data(), gradient_.bytes(), cudaMemcpyDeviceToHost));
    TFG_CUDA_CHECK(cudaMemcpy(host_partial_.data(), partial_.data(), partial_.bytes(),
                              cudaMemcpyDeviceToHost));
    return std::accumulate(host_partial_.begin(), host_partial_.end(), 0.0) / double(rows_);
  }

  void NormalEquations(std::vector<double>& gram, std::vector<double>& rhs) override {
    const double one = 1, zero = 0;
    const int rows = static_cast<int>(rows_);
    DeviceArray<double> d_gram(static_cast<std::size_t>(columns_) * columns_);
    DeviceArray<double> d_rhs(static_cast<std::size_t>(columns_));
    CheckCublas(device::Cublas().dgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, columns_, columns_,
                                       rows, &one, design_.data(), rows, design_.data(), rows,
                                       &zero, d_gram.data(), columns_),
                "cublasDgemm (gram)");
    CheckCublas(
        device::Cublas().dgemv(cublas_.get(), CUBLAS_OP_T, rows, columns_, &one, design_.data(),
                               rows, labels_.data(), 1, &zero, d_rhs.data(), 1),
        "cublasDgemv");
    gram.resize(d_gram.size());
    rhs.resize(d_rhs.size());
    TFG_CUDA_CHECK(cudaMemcpy(gram.data(), d_gram.data(), d_gram.bytes(), cudaMemcpyDeviceToHost));
    TFG_CUDA_CHECK(cudaMemcpy(rhs.data(), d_rhs.data(), d_rhs.bytes(), cudaMemcpyDeviceToHost));
  }

  const std::string& device_name() const override { return device_name_; }

 private:
  std::int64_t rows_;
  int columns_, outputs_;
  LossKind loss_;
  std::string device_name_;
  device::CublasHandle cublas_;
  DeviceArray<double> design_, labels_, theta_, gradient_, scores_, residual_, partial_;
  std::vector<double> host_partial_;
};

}  // namespace

std::unique_ptr<DeviceDesign> UploadDesign(const std::vector<double>& design, std::int64_t rows,
                                           int columns, const double* labels, LossKind loss,
                                           int outputs, int device_id, double memory_fraction,
                                           std::string& why) {
  const device::CudaDeviceInfo info = device::QueryCudaDevice(device_id);
  if (!info.usable) {
    why = info.problem;
    return nullptr;
  }
  if (!device::CublasUnavailable().empty()) {
    why = device::CublasUnavailable();
    return nullptr;
  }
  if (rows > std::int64_t(INT32_MAX) - 1) {
    why = fmt::format("{} rows are more than cuBLAS takes in one product", rows);
    return nullptr;
  }
  // The design, the labels, scores and residuals, and the small vectors.
  const double need =
      8.0 * (double(rows) * (columns + 1 + 2.0 * outputs) + 4.0 * columns * double(outputs) + 1024);
  const double budget = double(info.free_bytes) * memory_fraction;
  if (need > budget) {
    why = fmt::format(
        "the design matrix needs {:.2f} GB, more than the {:.2f} GB allowed ({} of the free "
        "memory)",
        need / 1e9, budget / 1e9, memory_fraction);
    return nullptr;
  }
  TFG_CUDA_CHECK(cudaSetDevice(device_id));
  return std::make_unique<CudaDesign>(design, rows, columns, labels, loss, outputs,
                                      fmt::format("cuda:{} {}", device_id, info.name));
}

}  // namespace tabforge::linear
