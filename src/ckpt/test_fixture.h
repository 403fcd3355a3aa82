// GoogleTest helpers shared by the checkpoint tests (ckpt/ and cli/).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "io/durable.h"
#include "io/file_system.h"

namespace strata::ckpt::testing {

// A fixture base giving each test a fresh temporary directory, dir_, removed afterwards.
template <typename Base = ::testing::Test>
class TempDirTest : public Base {
 protected:
  void SetUp() override {
    auto dir = io::MakeTempDir("strata-ckpt-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *dir;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
};

// Flips one byte of a file in place (sizes and markers stay as they were).
inline void FlipByte(const std::string& path, uint64_t offset) {
  auto in = std::move(io::DefaultFileSystem().OpenForRead(path)).value();
  uint8_t byte = 0;
  ASSERT_TRUE(in->ReadAt(offset, 1, &byte).ok());
  byte ^= 0x20;
  auto out = std::move(io::DefaultFileSystem().OpenForWrite(path, /*truncate=*/false)).value();
  ASSERT_TRUE(out->WriteAt(offset, &byte, 1).ok());
  ASSERT_TRUE(out->Close().ok());
}

}  // namespace strata::ckpt::testing
