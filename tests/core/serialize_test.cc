#include "core/serialize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"
#include "test_support.h"

namespace tabforge {
namespace {

std::string Pattern(std::size_t size) {
  std::string bytes(size, '\0');
  std::uint64_t state = 0x1234567;
  for (char& byte : bytes) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    byte = static_cast<char>(state >> 56);
  }
  return bytes;
}

TEST(Serialize, Checksum64IsPinnedAndSeesEveryBitAndLength) {
  // The value is part of the file format: a change here makes saved models unreadable.
  EXPECT_EQ(Checksum64Hex(""), "c8167590e3a5cbeb");
  EXPECT_EQ(Checksum64Hex("tabforge checksum, 41 bytes of text here."), "b1d29489a0d5d09a");
  const std::string base = Pattern(1000);
  const std::uint64_t reference = Checksum64(base);
  for (std::size_t bit = 0; bit < 8 * base.size(); ++bit) {
    std::string flipped = base;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    ASSERT_NE(Checksum64(flipped), reference) << "bit " << bit;
  }
  // Every prefix length (through the 32-, 8- and 1-byte tails) hashes differently, also for
  // zero bytes, which only the length tells apart.
  std::set<std::uint64_t> seen;
  const std::string zeros(200, '\0');
  for (std::size_t size = 0; size <= 200; ++size) {
    seen.insert(Checksum64(std::string_view(base).substr(0, size)));
    seen.insert(Checksum64(std::string_view(zeros).substr(0, size)));
  }
  EXPECT_EQ(seen.size(), 2u * 201u - 1u);  // the two empty prefixes are the same
}

// Pieces of every size from 0 to 70 bytes (across the 32-byte blocks), and a file of over a
// megabyte read a megabyte at a time, hash as the whole does.
TEST(Serialize, Checksum64OfPiecesIsTheWholesChecksum) {
  const std::string base = Pattern(5000);
  const std::uint64_t whole = Checksum64(base);
  for (std::size_t piece = 0; piece <= 70; ++piece) {
    Checksum64Stream stream;
    std::size_t at = 0;
    for (std::size_t step = 0; at < base.size(); ++step) {
      // A zero-sized piece now and then, else `piece` bytes (1 when piece is 0).
      const std::size_t size = step % 5 == 0 ? 0 : std::max<std::size_t>(piece, 1);
      const std::size_t take = std::min(size, base.size() - at);
      stream.Update(std::string_view(base).substr(at, take));
      at += take;
    }
    ASSERT_EQ(stream.Finish(), whole) << "pieces of " << piece;
  }
  const std::string big = Pattern((std::size_t{1} << 20) * 2 + 77);
  const std::string path = testing::TempDir("checksum_file") + "/big.bin";
  testing::WriteFile(path, big);
  EXPECT_EQ(FileChecksum64Hex(path, "test"), Checksum64Hex(big));
  EXPECT_THROW(FileChecksum64Hex(path + ".missing", "test"), IoError);
}

TEST(Serialize, FramesRoundTripAndRefuseDamage) {
  const std::string payload = Pattern(777);
  ByteWriter writer = ByteWriter::Framed("TFTEST", 3);
  writer.PutBytes(payload);
  const std::string framed = std::move(writer).Frame();
  EXPECT_EQ(framed, FrameBytes("TFTEST", 3, payload));
  EXPECT_EQ(UnframeBytes(framed, "TFTEST", 3, "t.bin"), payload);

  std::string damaged = framed;
  damaged[100] = static_cast<char>(damaged[100] ^ 1);
  try {
    UnframeBytes(damaged, "TFTEST", 3, "t.bin");
    FAIL() << "a damaged frame was read";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("checksum"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("t.bin"), std::string::npos) << error.what();
  }
  EXPECT_THROW(UnframeBytes(framed.substr(0, framed.size() - 1), "TFTEST", 3, "t.bin"),
               InvalidInput);
  EXPECT_THROW(UnframeBytes(framed, "TFOTHER", 3, "t.bin"), InvalidInput);
  EXPECT_THROW(UnframeBytes(framed, "TFTEST", 4, "t.bin"), InvalidInput);
}

TEST(Serialize, FramesWrittenWithTheEarlierChecksumStillRead) {
  // Before Checksum64, frames ended with FNV-1a 64 of the bytes before it.
  const std::string payload = Pattern(300);
  std::string framed = FrameBytes("TFTEST", 1, payload);
  framed.resize(framed.size() - 8);
  std::uint64_t fnv = 1469598103934665603ull;
  for (unsigned char byte : framed) fnv = (fnv ^ byte) * 1099511628211ull;
  framed.append(reinterpret_cast<const char*>(&fnv), sizeof(fnv));
  EXPECT_EQ(UnframeBytes(framed, "TFTEST", 1, "old.bin"), payload);
  framed[40] = static_cast<char>(framed[40] ^ 4);
  EXPECT_THROW(UnframeBytes(framed, "TFTEST", 1, "old.bin"), InvalidInput);
}

}  // namespace
}  // namespace tabforge
