#include "core/dynamic_library.h"

#include <utility>

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace tabforge {
namespace {

#ifdef _WIN32
std::string LastWindowsError() {
  const DWORD code = GetLastError();
  char* text = nullptr;
  FormatMessageA(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
      nullptr, code, 0, reinterpret_cast<char*>(&text), 0, nullptr);
  std::string message = text != nullptr ? text : "error " + std::to_string(code);
  if (text != nullptr) LocalFree(text);
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
    message.pop_back();
  }
  return message;
}
#endif

}  // namespace

DynamicLibrary DynamicLibrary::Open(const std::vector<std::string>& names) {
  DynamicLibrary library;
  for (const std::string& name : names) {
#ifdef _WIN32
    void* handle = reinterpret_cast<void*>(LoadLibraryA(name.c_str()));
    const std::string failure = handle == nullptr ? LastWindowsError() : "";
#else
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    const char* reason = handle == nullptr ? dlerror() : nullptr;
    const std::string failure = reason != nullptr ? reason : "cannot be loaded";
#endif
    if (handle != nullptr) {
      library.handle_ = handle;
      library.name_ = name;
      library.error_.clear();
      return library;
    }
    if (!library.error_.empty()) library.error_ += "; ";
    library.error_ += name + ": " + failure;
  }
  return library;
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      name_(std::move(other.name_)),
      error_(std::move(other.error_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    Close();
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    error_ = std::move(other.error_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() { Close(); }

void DynamicLibrary::Close() {
  if (handle_ == nullptr) return;
#ifdef _WIN32
  FreeLibrary(reinterpret_cast<HMODULE>(handle_));
#else
  dlclose(handle_);
#endif
  handle_ = nullptr;
}

void* DynamicLibrary::Symbol(const char* symbol) const {
  if (handle_ == nullptr) return nullptr;
#ifdef _WIN32
  return reinterpret_cast<void*>(GetProcAddress(reinterpret_cast<HMODULE>(handle_), symbol));
#else
  return dlsym(handle_, symbol);
#endif
}

}  // namespace tabforge
