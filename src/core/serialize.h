// Binary serialization for model files: little-endian values appended to a byte string, read
// back with bounds checks, inside a frame of magic text, format version and FNV-1a checksum so
// that a truncated, corrupted or foreign file is reported instead of misread.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace tabforge {

class ByteWriter {
 public:
  // Appends the bytes of an arithmetic value (this library targets little-endian hosts).
  template <typename T>
  void Put(T value) {
    static_assert(std::is_arithmetic_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void PutString(std::string_view text) {
    Put<std::uint64_t>(text.size());
    bytes_.append(text);
  }
  template <typename T>
  void PutVector(const std::vector<T>& values) {
    static_assert(std::is_arithmetic_v<T>);
    Put<std::uint64_t>(values.size());
    bytes_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  // Reads `bytes`; `name` (a file name) appears in errors.
  ByteReader(std::string_view bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}

  template <typename T>
  T Get() {
    static_assert(std::is_arithmetic_v<T>);
    Need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    const auto size = Get<std::uint64_t>();
    Need(size);
    std::string text(bytes_.substr(at_, size));
    at_ += size;
    return text;
  }
  template <typename T>
  std::vector<T> GetVector() {
    const auto size = Get<std::uint64_t>();
    if (size > bytes_.size() / sizeof(T)) Corrupted("a length runs past the end");
    Need(size * sizeof(T));
    std::vector<T> values(size);
    if (size > 0) std::memcpy(values.data(), bytes_.data() + at_, size * sizeof(T));
    at_ += size * sizeof(T);
    return values;
  }
  bool AtEnd() const { return at_ == bytes_.size(); }
  [[noreturn]] void Corrupted(std::string_view what) const {
    throw InvalidInput(
        fmt::format("{}: the model file is corrupted or truncated ({}); train "
                    "the model again or restore it from a copy.",
                    name_, what));
  }

 private:
  void Need(std::uint64_t size) const {
    if (size > bytes_.size() - at_) Corrupted("it ends early");
  }
  std::string_view bytes_;
  std::string name_;
  std::size_t at_ = 0;
};

// `payload` framed as: magic, version (uint32), payload size (uint64), payload, FNV-1a 64 of
// everything before it.
std::string FrameBytes(std::string_view magic, std::uint32_t version, std::string_view payload);

// The payload of a framed blob; throws InvalidInput naming `name` when the magic differs
// ("not a <what> file"), the version differs (saying which version wrote it and which this
// build reads) or the size or checksum does not match.
std::string_view UnframeBytes(std::string_view bytes, std::string_view magic, std::uint32_t version,
                              const std::string& name);

// Writes `bytes` to `path` atomically (a temporary name in the same folder, then rename), so
// a failed write never leaves a half-written file. Throws IoError.
void WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace tabforge
