// Binary serialization for model files: little-endian values appended to a byte string, read
// back with bounds checks, inside a frame of magic text, format version and checksum so that a
// truncated, corrupted or foreign file is reported instead of misread.
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
  void PutBytes(std::string_view bytes) { bytes_.append(bytes); }
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
  void Reserve(std::size_t bytes) { bytes_.reserve(bytes); }
  const std::string& bytes() const { return bytes_; }

  // A writer whose bytes become a frame (FrameBytes' layout, below) without copying them: the
  // header goes first, and Frame() fills in the payload size and appends the checksum.
  static ByteWriter Framed(std::string_view magic, std::uint32_t version);
  std::string Frame() &&;

 private:
  std::string bytes_;
  std::size_t header_ = 0;  // Framed: bytes of magic, version and size
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
  // The same, as a view into the bytes being read (valid while they are).
  std::string_view GetStringView() {
    const auto size = Get<std::uint64_t>();
    Need(size);
    const std::string_view text = bytes_.substr(at_, size);
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

// A 64-bit checksum of `bytes` for detecting damage (not an adversary): four independent
// multiply-rotate lanes over 32-byte blocks, as xxHash64 is built, so it runs at memory speed
// (gigabytes per second) where a byte-serial hash manages well under one.
std::uint64_t Checksum64(std::string_view bytes);
// Checksum64 of bytes given piece by piece: Update(a), Update(b) then Finish() equals
// Checksum64(a + b).
class Checksum64Stream {
 public:
  Checksum64Stream();
  void Update(std::string_view bytes);
  std::uint64_t Finish() const;

 private:
  void Blocks(const char* at, std::size_t count);
  std::uint64_t lanes_[4];
  char held_bytes_[32];  // a block not yet complete
  std::size_t held_ = 0;
  std::uint64_t total_ = 0;
};
// Checksum64 as 16 lower-case hex digits.
std::string Checksum64Hex(std::string_view bytes);

// `payload` framed as: magic, version (uint32), payload size (uint64), payload, Checksum64 of
// everything before it. (Frames written before Checksum64 carry FNV-1a 64 there; UnframeBytes
// accepts either, so older model files still load.)
std::string FrameBytes(std::string_view magic, std::uint32_t version, std::string_view payload);

// The payload of a framed blob; throws InvalidInput naming `name` when the magic differs
// ("not a <what> file"), the version differs (saying which version wrote it and which this
// build reads) or the size or checksum does not match.
std::string_view UnframeBytes(std::string_view bytes, std::string_view magic, std::uint32_t version,
                              const std::string& name);

// The whole file at `path` (one read into a string of its size); throws IoError naming it and
// `hint` (what the file should be).
std::string ReadWholeFile(const std::string& path, std::string_view hint);
// Checksum64Hex of the file at `path`, read a megabyte at a time; throws IoError naming it and
// `hint`.
std::string FileChecksum64Hex(const std::string& path, std::string_view hint);

// Writes `bytes` to `path` atomically (a temporary name in the same folder, then rename), so
// a failed write never leaves a half-written file. Throws IoError.
void WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace tabforge
