// Bringing the raw bytes of a table into memory: from a local file or an http(s) URL,
// decompressing gzip when the bytes start with its magic number (whatever the file name).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace tabforge::data {

// An owned, immutable byte buffer. data() is followed by kPadding zero bytes that are not
// part of size(), so scanners may read a few bytes past the end without a bounds check.
class ByteBuffer {
 public:
  static constexpr std::size_t kPadding = 64;

  ByteBuffer() = default;
  // A buffer of `size` bytes (contents unspecified) plus the zeroed padding.
  explicit ByteBuffer(std::size_t size);

  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::string_view view() const { return std::string_view(data_.get(), size_); }
  // Shrinks the logical size (the allocation stays) and re-zeroes the padding.
  void Truncate(std::size_t size);

 private:
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
};

// Whether `source` names an http:// or https:// URL (else it is a local path).
bool IsUrl(std::string_view source);

// The bytes of `source` (a path or URL), gunzipped when they start with the gzip magic
// bytes. Throws IoError naming the source and the remedy when it cannot be read, downloaded
// or decompressed.
ByteBuffer LoadSource(const std::string& source);

// Decompresses a complete gzip stream (several members allowed). `name` is used in errors.
ByteBuffer Gunzip(std::string_view compressed, const std::string& name);

}  // namespace tabforge::data
