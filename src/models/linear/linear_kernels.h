// Kernels of the LR family's CUDA path (linear_kernels.cu); pointers are device memory,
// launched on the default stream.
#pragma once

#include <cstdint>

#include "models/linear/linear_device.h"

namespace tabforge::linear::kernels {

// The blocks RowLosses launches for `rows` rows (fixed for a given count, so the sums come out
// the same on every call).
int RowLossBlocks(std::int64_t rows);

// For scores (column-major rows x outputs) and labels: residual (same shape) = the loss's
// derivative in each score times `scale`, and partial[block] = the sum of the losses of the
// rows that block took, RowLossBlocks(rows) of them.
void RowLosses(LossKind loss, const double* scores, const double* labels, std::int64_t rows,
               int outputs, double scale, double* residual, double* partial);

}  // namespace tabforge::linear::kernels
