// The CUDA grower's kernels around a tree's batches: the bins' column-major copy and the row
// order's fill before growth, and, once a tree is complete, the repair of tree leaf ranges
// that splits made ahead wrote over, then the leaf sums and values.
#include <cub/cub.cuh>

#include "core/portable_math.h"
#include "device/cuda_check.h"
#include "models/tree/device_common.cuh"

namespace tabforge::tree::kernels {
namespace {

template <typename Bin>
__global__ void ColumnsKernel(const Bin* bins, int stride, std::int64_t rows, int features,
                              Bin* columns) {
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; row < rows;
       row += std::int64_t(gridDim.x) * blockDim.x) {
    for (int feature = 0; feature < features; ++feature) {
      columns[feature * rows + row] = bins[row * stride + feature];
    }
  }
}

template <typename Bin>
void LaunchColumns(const Bin* bins, int stride, std::int64_t rows, int features, Bin* columns,
                   cudaStream_t stream) {
  if (rows == 0) return;
  ColumnsKernel<Bin><<<GridFor(rows), kThreads, 0, stream>>>(bins, stride, rows, features, columns);
  CheckLaunch("ColumnsKernel");
}

// Copies the pieces of overwritten tree leaf ranges (see Select) to the tree leaves' halves:
// work items are chunks of kLeafChunk positions of one piece (repair_prefix).
__global__ void RepairKernel(GrowContext context) {
  const int device_leaves = context.state->device_leaves;
  const int chunks = context.repair_prefix[device_leaves];
  for (int item = blockIdx.x; item < chunks; item += gridDim.x) {
    const LeafChunk chunk =
        LeafChunkOf(context.repair_ranges, context.repair_prefix, device_leaves, item);
    for (std::int64_t at = chunk.begin + threadIdx.x; at < chunk.end; at += blockDim.x) {
      context.order[OtherHalf(at, context.half)] = context.order[at];
    }
  }
}

// The tree leaves' sums of their rows' exact gradients in fixed point at the CPU grower's
// scale: work items are chunks of kLeafChunk positions of one leaf (leaf_prefix), each adding
// its integer sum to the leaf's.
__global__ void LeafSumKernel(GrowContext context, const float* gradients) {
  const GrowState& state = *context.state;
  const int leaves = state.tree_leaves;
  const int chunks = context.leaf_prefix[leaves];
  const double fixed = FixedPointScale(context.scales->max_abs_gradient, state.count);
  using Reduce = cub::BlockReduce<long long, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  for (int item = blockIdx.x; item < chunks; item += gridDim.x) {
    const LeafChunk chunk = LeafChunkOf(context.tree_ranges, context.leaf_prefix, leaves, item);
    const int leaf = chunk.leaf;
    long long sum = 0;
    for (std::int64_t at = chunk.begin + threadIdx.x; at < chunk.end; at += blockDim.x) {
      sum += RoundToInteger(double(gradients[context.order[at]]) * fixed);
    }
    const long long total = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) {
      atomicAdd(reinterpret_cast<unsigned long long*>(&context.leaf_sums[leaf]),
                static_cast<unsigned long long>(total));
    }
    __syncthreads();  // the reduction's storage is reused by the next item
  }
}

// values[l] = tree leaf l's value from its sums.
__global__ void LeafValueKernel(GrowContext context, double* values) {
  const GrowState& state = *context.state;
  const double fixed = FixedPointScale(context.scales->max_abs_gradient, state.count);
  for (int leaf = blockIdx.x * blockDim.x + threadIdx.x; leaf < state.tree_leaves;
       leaf += gridDim.x * blockDim.x) {
    const GrowLeaf& record = context.leaves[context.tree_to_device[leaf]];
    values[leaf] =
        LeafValue(double(context.leaf_sums[leaf]) / fixed,
                  double(record.total_hessian) * context.scales->hessian_scale, context.scan.reg);
  }
}

__global__ void SequenceKernel(std::int32_t* out, std::int64_t count) {
  for (std::int64_t at = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; at < count;
       at += std::int64_t(gridDim.x) * blockDim.x) {
    out[at] = static_cast<std::int32_t>(at);
  }
}

}  // namespace

void FillColumns(const std::uint8_t* bins, int stride, std::int64_t rows, int features,
                 std::uint8_t* columns, cudaStream_t stream) {
  LaunchColumns(bins, stride, rows, features, columns, stream);
}

void FillColumns(const std::uint16_t* bins, int stride, std::int64_t rows, int features,
                 std::uint16_t* columns, cudaStream_t stream) {
  LaunchColumns(bins, stride, rows, features, columns, stream);
}

void EnqueueLeafValues(const GrowContext& context, const float* exact_gradients, double* values,
                       Stream stream) {
  RepairKernel<<<static_cast<unsigned>(context.max_blocks), kThreads, 0, stream>>>(context);
  CheckLaunch("RepairKernel");
  LeafSumKernel<<<static_cast<unsigned>(context.max_blocks), kThreads, 0, stream>>>(
      context, exact_gradients);
  CheckLaunch("LeafSumKernel");
  LeafValueKernel<<<static_cast<unsigned>((context.num_leaves + kThreads - 1) / kThreads), kThreads,
                    0, stream>>>(context, values);
  CheckLaunch("LeafValueKernel");
}

void FillSequence(std::int32_t* order, std::int64_t count, Stream stream) {
  SequenceKernel<<<GridFor(count, 4), kThreads, 0, stream>>>(order, count);
  CheckLaunch("SequenceKernel");
}

}  // namespace tabforge::tree::kernels
