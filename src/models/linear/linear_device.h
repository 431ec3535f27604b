// The LR family's data on the GPU (linear_cuda.cc; linear_no_cuda.cc answers in CPU-only
// builds): the design matrix and the labels are uploaded once, and each evaluation of the loss
// sends the coefficients up and brings the gradient back, with the products done by cuBLAS in
// double precision and the per-row losses summed in a fixed order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tabforge::linear {

enum class LossKind {
  kLogistic,  // binary: log(1 + e^z) - y z, one score column
  kSoftmax,   // multinomial: log sum_k e^(z_k) - z_y
  kSquared,   // regression: (z - y)^2 / 2
};

class DeviceDesign {
 public:
  virtual ~DeviceDesign() = default;
  // The mean loss over the rows at `theta` (row-major columns x outputs, the last row the
  // intercepts) and its gradient (same shape), overwritten.
  virtual double MeanLoss(const std::vector<double>& theta, std::vector<double>& gradient) = 0;
  // X^T X (row-major columns x columns) and X^T y, over the design with its column of ones.
  virtual void NormalEquations(std::vector<double>& gram, std::vector<double>& rhs) = 0;
  // "cuda:N NAME".
  virtual const std::string& device_name() const = 0;
};

// Uploads `design` (column-major rows x columns, the last column all ones) and `labels` (`rows`
// class indices or targets) to device `device_id`. Returns null with `why` set when there is no
// usable device or the data would take more than `memory_fraction` of its free memory.
std::unique_ptr<DeviceDesign> UploadDesign(const std::vector<double>& design, std::int64_t rows,
                                           int columns, const double* labels, LossKind loss,
                                           int outputs, int device_id, double memory_fraction,
                                           std::string& why);

}  // namespace tabforge::linear
