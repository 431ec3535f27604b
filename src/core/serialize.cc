#include "core/serialize.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace tabforge {
namespace {

std::uint64_t Fnv1a64(std::string_view bytes) {
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char byte : bytes) hash = (hash ^ byte) * 1099511628211ull;
  return hash;
}

constexpr std::uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr std::uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr std::uint64_t kPrime3 = 0x165667B19E3779F9ull;

std::uint64_t Rotl(std::uint64_t value, int bits) {
  return (value << bits) | (value >> (64 - bits));
}
std::uint64_t Load64(const char* at) {
  std::uint64_t value;
  std::memcpy(&value, at, sizeof(value));
  return value;
}
std::uint64_t Round(std::uint64_t lane, std::uint64_t word) {
  return Rotl(lane + word * kPrime2, 31) * kPrime1;
}

}  // namespace

Checksum64Stream::Checksum64Stream() : lanes_{kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1} {}

void Checksum64Stream::Blocks(const char* at, std::size_t count) {
  for (std::size_t block = 0; block < count; ++block, at += 32) {
    for (int lane = 0; lane < 4; ++lane) lanes_[lane] = Round(lanes_[lane], Load64(at + 8 * lane));
  }
}

void Checksum64Stream::Update(std::string_view bytes) {
  total_ += bytes.size();
  if (held_ > 0) {  // complete the held block first
    const std::size_t take = std::min(bytes.size(), sizeof(held_bytes_) - held_);
    std::memcpy(held_bytes_ + held_, bytes.data(), take);
    held_ += take;
    bytes.remove_prefix(take);
    if (held_ < sizeof(held_bytes_)) return;
    Blocks(held_bytes_, 1);
    held_ = 0;
  }
  const std::size_t blocks = bytes.size() / 32;
  Blocks(bytes.data(), blocks);
  bytes.remove_prefix(blocks * 32);
  std::memcpy(held_bytes_, bytes.data(), bytes.size());
  held_ = bytes.size();
}

std::uint64_t Checksum64Stream::Finish() const {
  std::uint64_t hash = Rotl(lanes_[0], 1) + Rotl(lanes_[1], 7) + Rotl(lanes_[2], 12) +
                       Rotl(lanes_[3], 18) + static_cast<std::uint64_t>(total_);
  for (int lane = 0; lane < 4; ++lane) hash = (hash ^ Round(0, lanes_[lane])) * kPrime1 + kPrime3;
  const char* at = held_bytes_;
  const char* const end = at + held_;
  for (; end - at >= 8; at += 8) hash = Rotl(hash ^ Round(0, Load64(at)), 27) * kPrime1 + kPrime3;
  for (; at < end; ++at) {
    hash = Rotl(hash ^ (static_cast<unsigned char>(*at) * kPrime3), 11) * kPrime1;
  }
  hash ^= hash >> 33;
  hash *= kPrime2;
  hash ^= hash >> 29;
  hash *= kPrime3;
  hash ^= hash >> 32;
  return hash;
}

std::uint64_t Checksum64(std::string_view bytes) {
  Checksum64Stream stream;
  stream.Update(bytes);
  return stream.Finish();
}

std::string Checksum64Hex(std::string_view bytes) {
  return fmt::format("{:016x}", Checksum64(bytes));
}

ByteWriter ByteWriter::Framed(std::string_view magic, std::uint32_t version) {
  ByteWriter writer;
  writer.bytes_.append(magic);
  writer.Put<std::uint32_t>(version);
  writer.Put<std::uint64_t>(0);  // the payload size, set by Frame()
  writer.header_ = writer.bytes_.size();
  return writer;
}

std::string ByteWriter::Frame() && {
  TFG_CHECK(header_ > 0, "Frame() on a writer not made by ByteWriter::Framed");
  const std::uint64_t size = bytes_.size() - header_;
  std::memcpy(bytes_.data() + header_ - sizeof(size), &size, sizeof(size));
  const std::uint64_t checksum = Checksum64(bytes_);
  Put<std::uint64_t>(checksum);
  header_ = 0;
  return std::move(bytes_);
}

std::string FrameBytes(std::string_view magic, std::uint32_t version, std::string_view payload) {
  ByteWriter writer = ByteWriter::Framed(magic, version);
  writer.Reserve(magic.size() + 12 + payload.size() + 8);
  writer.PutBytes(payload);
  return std::move(writer).Frame();
}

std::string_view UnframeBytes(std::string_view bytes, std::string_view magic, std::uint32_t version,
                              const std::string& name) {
  if (!bytes.starts_with(magic)) {
    throw InvalidInput(
        fmt::format("{}: not a {} file (it does not start with the expected "
                    "header); check the path.",
                    name, magic));
  }
  ByteReader header(bytes.substr(magic.size()), name);
  const auto found_version = header.Get<std::uint32_t>();
  const auto size = header.Get<std::uint64_t>();
  if (found_version != version) {
    throw InvalidInput(
        fmt::format("{}: written in format version {}, and this build of tabforge "
                    "reads version {}; use the tabforge version that wrote it, or "
                    "train again.",
                    name, found_version, version));
  }
  const std::size_t payload_at = magic.size() + sizeof(std::uint32_t) + sizeof(std::uint64_t);
  if (size > bytes.size() || bytes.size() - payload_at - sizeof(std::uint64_t) != size) {
    header.Corrupted("its size does not match its header");
  }
  std::uint64_t checksum;
  std::memcpy(&checksum, bytes.data() + payload_at + size, sizeof(checksum));
  const std::string_view framed = bytes.substr(0, payload_at + size);
  if (Checksum64(framed) != checksum && Fnv1a64(framed) != checksum) {
    header.Corrupted("checksum mismatch");
  }
  return bytes.substr(payload_at, size);
}

std::string ReadWholeFile(const std::string& path, std::string_view hint) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  auto fail = [&] {
    if (file != nullptr) std::fclose(file);
    return IoError(fmt::format("cannot read {}; {}", path, hint));
  };
  if (file == nullptr) throw fail();
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) throw fail();
  std::string bytes(static_cast<std::size_t>(size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const std::size_t got = std::fread(bytes.data() + done, 1, bytes.size() - done, file);
    if (got == 0) break;
    done += got;
  }
  // A file that grew or shrank while it was read is reported rather than half-used.
  if (done != bytes.size() || std::fgetc(file) != EOF) throw fail();
  std::fclose(file);
  return bytes;
}

std::string FileChecksum64Hex(const std::string& path, std::string_view hint) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw IoError(fmt::format("cannot read {}; {}", path, hint));
  Checksum64Stream stream;
  std::string buffer(std::size_t{1} << 20, '\0');
  for (;;) {
    const std::size_t got = std::fread(buffer.data(), 1, buffer.size(), file);
    stream.Update(std::string_view(buffer.data(), got));
    if (got < buffer.size()) break;
  }
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) throw IoError(fmt::format("cannot read {}; {}", path, hint));
  return fmt::format("{:016x}", stream.Finish());
}

void WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::string temporary = path + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) {
    throw IoError(
        fmt::format("cannot write '{}': check that the folder exists and is writable", temporary));
  }
  bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  written = std::fclose(file) == 0 && written;
  std::error_code error;
  if (written) std::filesystem::rename(temporary, path, error);
  if (!written || error) {
    std::filesystem::remove(temporary, error);
    throw IoError(
        fmt::format("cannot write '{}' (is the disk full or the folder read-only?)", path));
  }
}

}  // namespace tabforge
