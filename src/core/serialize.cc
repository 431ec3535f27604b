#include "core/serialize.h"

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

}  // namespace

std::string FrameBytes(std::string_view magic, std::uint32_t version, std::string_view payload) {
  ByteWriter writer;
  std::string out(magic);
  writer.Put<std::uint32_t>(version);
  writer.Put<std::uint64_t>(payload.size());
  out += writer.bytes();
  out.append(payload);
  const std::uint64_t checksum = Fnv1a64(out);
  out.append(reinterpret_cast<const char*>(&checksum), sizeof(checksum));
  return out;
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
  if (Fnv1a64(bytes.substr(0, payload_at + size)) != checksum)
    header.Corrupted("checksum mismatch");
  return bytes.substr(payload_at, size);
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
