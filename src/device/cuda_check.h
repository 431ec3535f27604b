// Checked CUDA runtime calls and owned device memory, for .cu files. Every failure becomes a
// CudaError naming the call, the device and the runtime's words for the error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tabforge::device {

// Throws CudaError: "CUDA call CALL failed on device N (NAME): ERROR (FILE:LINE)".
[[noreturn]] void ThrowCudaError(cudaError_t error, const char* call, const char* file, int line);

}  // namespace tabforge::device

#define TFG_CUDA_CHECK(call)                                                         \
  do {                                                                               \
    const cudaError_t tfg_cuda_error = (call);                                       \
    if (tfg_cuda_error != cudaSuccess) {                                             \
      ::tabforge::device::ThrowCudaError(tfg_cuda_error, #call, __FILE__, __LINE__); \
    }                                                                                \
  } while (false)

namespace tabforge::device {

// `count` elements of T in device memory, freed with the object.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t count) { Resize(count); }
  ~DeviceArray() { Release(); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }

  // Reallocates when `count` differs (contents are not kept).
  void Resize(std::size_t count) {
    if (count == size_) return;
    Release();
    if (count > 0) TFG_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
    size_ = count;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }

 private:
  void Release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// `count` elements of T in page-locked host memory mapped into the device's address space
// (copies to and from it run asynchronously; kernels may write it directly), freed with the
// object.
template <typename T>
class PinnedArray {
 public:
  PinnedArray() = default;
  ~PinnedArray() { Release(); }
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;

  // Reallocates when `count` differs (contents are not kept).
  void Resize(std::size_t count) {
    if (count == size_) return;
    Release();
    if (count > 0) {
      TFG_CUDA_CHECK(
          cudaHostAlloc(reinterpret_cast<void**>(&data_), count * sizeof(T), cudaHostAllocMapped));
      TFG_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), data_, 0));
    }
    size_ = count;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* device_data() { return device_; }  // the same memory, as kernels address it
  std::size_t size() const { return size_; }

 private:
  void Release() {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    device_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  T* device_ = nullptr;
  std::size_t size_ = 0;
};

// Resizes `target` to `count` elements and copies them from host memory.
template <typename T>
void Upload(DeviceArray<T>& target, const T* source, std::size_t count) {
  target.Resize(count);
  if (count > 0) {
    TFG_CUDA_CHECK(cudaMemcpy(target.data(), source, count * sizeof(T), cudaMemcpyHostToDevice));
  }
}

// Copies the first `count` elements of `source` to host memory at `target`.
template <typename T>
void Download(T* target, const DeviceArray<T>& source, std::size_t count) {
  if (count > 0) {
    TFG_CUDA_CHECK(cudaMemcpy(target, source.data(), count * sizeof(T), cudaMemcpyDeviceToHost));
  }
}

}  // namespace tabforge::device
