// The device's copy bandwidth, the yardstick of the histogram kernels' effective bandwidth
// (bench/cuda_kernel_times.py):
//   copy_bandwidth [--mib N] [--repeats R]
// Copies an N MiB buffer to another on the device R times (after one warm-up copy) and prints
// one JSON line: the device, the buffer size and the median bytes moved per second, counting
// each byte read and each byte written (2 N MiB per copy).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

bool Check(cudaError_t error, const char* call) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "copy_bandwidth: %s failed: %s\n", call, cudaGetErrorString(error));
  return false;
}

long Option(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::strtol(argv[i + 1], nullptr, 10);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const long mib = Option(argc, argv, "--mib", 1024);
  const long repeats = Option(argc, argv, "--repeats", 20);
  if (mib <= 0 || repeats <= 0) {
    std::fprintf(stderr, "copy_bandwidth: --mib and --repeats take positive integers\n");
    return 2;
  }
  const size_t bytes = static_cast<size_t>(mib) << 20;
  cudaDeviceProp properties{};
  void* source = nullptr;
  void* target = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  if (!Check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties") ||
      !Check(cudaMalloc(&source, bytes), "cudaMalloc") ||
      !Check(cudaMalloc(&target, bytes), "cudaMalloc") ||
      !Check(cudaMemset(source, 1, bytes), "cudaMemset") ||
      !Check(cudaEventCreate(&start), "cudaEventCreate") ||
      !Check(cudaEventCreate(&stop), "cudaEventCreate") ||
      !Check(cudaMemcpy(target, source, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy")) {
    return 1;
  }
  std::vector<double> rates;
  for (long repeat = 0; repeat < repeats; ++repeat) {
    float milliseconds = 0;
    if (!Check(cudaEventRecord(start), "cudaEventRecord") ||
        !Check(cudaMemcpyAsync(target, source, bytes, cudaMemcpyDeviceToDevice),
               "cudaMemcpyAsync") ||
        !Check(cudaEventRecord(stop), "cudaEventRecord") ||
        !Check(cudaEventSynchronize(stop), "cudaEventSynchronize") ||
        !Check(cudaEventElapsedTime(&milliseconds, start, stop), "cudaEventElapsedTime")) {
      return 1;
    }
    rates.push_back(2.0 * static_cast<double>(bytes) / (1e-3 * milliseconds));
  }
  std::sort(rates.begin(), rates.end());
  std::printf(
      "{\"device\":\"%s\",\"buffer_bytes\":%zu,\"repeats\":%ld,"
      "\"copy_bytes_per_second\":%.4g}\n",
      properties.name, bytes, repeats, rates[rates.size() / 2]);
  cudaFree(source);
  cudaFree(target);
  return 0;
}
