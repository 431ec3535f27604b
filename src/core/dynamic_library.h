// Shared libraries opened at run time (dlopen / LoadLibrary), so optional system libraries
// (libcurl for URL input, the CUDA driver and NVML for GPU discovery) cost nothing until used
// and a machine without them gets a diagnosis instead of a program that will not start.
#pragma once

#include <string>
#include <vector>

namespace tabforge {

class DynamicLibrary {
 public:
  // Opens the first of `names` that loads (file names searched the platform's usual way).
  // Returns an unopened library when none does; error() then names each attempt's failure.
  static DynamicLibrary Open(const std::vector<std::string>& names);

  DynamicLibrary() = default;
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  bool loaded() const { return handle_ != nullptr; }
  const std::string& name() const { return name_; }    // the name that loaded
  const std::string& error() const { return error_; }  // why none loaded

  // The address of `symbol`, or null when the library lacks it.
  void* Symbol(const char* symbol) const;
  // Typed: Find(&pointer, "name") sets a function pointer; false when the symbol is missing.
  template <typename Function>
  bool Find(Function** function, const char* symbol) const {
    *function = reinterpret_cast<Function*>(Symbol(symbol));
    return *function != nullptr;
  }

 private:
  void Close();

  void* handle_ = nullptr;
  std::string name_;
  std::string error_;
};

}  // namespace tabforge
