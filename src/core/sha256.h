// SHA-256 (FIPS 180-4), for fingerprints of model files that users can compare with
// `sha256sum`.
#pragma once

#include <string>
#include <string_view>

namespace tabforge {

// The SHA-256 digest of `bytes` as 64 lower-case hex digits.
std::string Sha256Hex(std::string_view bytes);

}  // namespace tabforge
