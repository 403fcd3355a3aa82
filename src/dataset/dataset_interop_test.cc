// Integration: strata's tars read by GNU tar and Python's tarfile byte-exact,
// tars made by them (gnu, pax, ustar formats) read by strata, pack/verify
// over a file:// store, and `strata pack/verify/inspect` via the binary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/hash.h"
#include "dataset/byte_source.h"
#include "dataset/pack.h"
#include "dataset/tar.h"
#include "dataset/verify.h"
#include "object/file_store.h"

namespace strata::dataset {
namespace {

VerifyOptions SignedBy(std::string key) {
  VerifyOptions options;
  options.sign_key = std::move(key);
  return options;
}

namespace fs = std::filesystem;

struct Cmd {
  int code;
  std::string out;
};

Cmd Shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const fs::path& p, const std::string& data) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

class Interop : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/strata-dataset-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Members with tricky names: long (> 100 and > 155 bytes), UTF-8, nested, empty, multi-dot.
  std::map<std::string, std::string> Members() {
    std::map<std::string, std::string> m;
    m["000001.jpg"] = std::string(70000, '\xab');
    m["000001.cls"] = "7";
    m["000001.json"] = "{\"a\": 1}";
    m[std::string(130, 'L') + "/" + std::string(90, 'n') + ".seg.png"] = "png-bytes";
    m["caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.txt"] = "unicode";
    m["empty.bin"] = "";
    return m;
  }
  fs::path dir_;
};

TEST_F(Interop, GnuTarAndPythonReadStrataTarsByteExact) {
  auto members = Members();
  BufferSink sink;
  TarWriter w(sink);
  for (auto& [name, data] : members) ASSERT_TRUE(w.AddFile(name, Buffer::Copy(data)).ok());
  ASSERT_TRUE(w.Finish().ok());
  WriteFile(dir_ / "s.tar", sink.Take().ToString());
  fs::create_directories(dir_ / "gnu");
  Cmd gnu = Shell("tar -xf " + (dir_ / "s.tar").string() + " -C " + (dir_ / "gnu").string());
  ASSERT_EQ(gnu.code, 0) << gnu.out;
  EXPECT_EQ(gnu.out, "");  // no warnings
  fs::create_directories(dir_ / "py");
  Cmd py = Shell(
      "/usr/bin/python3 -c 'import sys, tarfile\n"
      "t = tarfile.open(sys.argv[1])\n"
      "t.extractall(sys.argv[2])\n"
      "print(len(t.getmembers()))' " +
      (dir_ / "s.tar").string() + " " + (dir_ / "py").string());
  ASSERT_EQ(py.code, 0) << py.out;
  EXPECT_EQ(py.out, std::to_string(members.size()) + "\n");
  for (auto& [name, data] : members) {
    EXPECT_EQ(ReadFile(dir_ / "gnu" / name), data) << "GNU tar: " << name.substr(0, 40);
    EXPECT_EQ(ReadFile(dir_ / "py" / name), data) << "tarfile: " << name.substr(0, 40);
  }
}

std::map<std::string, std::string> ReadAllMembers(const fs::path& tar) {
  std::string bytes = ReadFile(tar);
  BufferSource src(Buffer::FromString(bytes), tar.string());
  TarReader r(src);
  std::map<std::string, std::string> out;
  while (true) {
    auto m = r.Next();
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok() || !*m) break;
    out[(*m)->name] = (*m)->data.ToString();
  }
  return out;
}

TEST_F(Interop, StrataReadsTarsFromGnuTarAndPython) {
  auto members = Members();
  for (auto& [name, data] : members) WriteFile(dir_ / "src" / name, data);
  for (std::string format : {"gnu", "pax", "posix", "oldgnu"}) {
    fs::path out = dir_ / ("gnu-" + format + ".tar");
    Cmd c = Shell("cd " + (dir_ / "src").string() + " && tar --format=" + format + " -cf " + out.string() + " *");
    ASSERT_EQ(c.code, 0) << c.out;
    auto got = ReadAllMembers(out);
    ASSERT_EQ(got.size(), members.size()) << format;
    for (auto& [name, data] : members) EXPECT_EQ(got[name], data) << format << ": " << name.substr(0, 40);
  }
  for (std::string format : {"PAX_FORMAT", "GNU_FORMAT"}) {
    fs::path out = dir_ / ("py-" + format + ".tar");
    Cmd c = Shell("cd " + (dir_ / "src").string() +
                  " && /usr/bin/python3 -c 'import os, sys, tarfile\n"
                  "t = tarfile.open(sys.argv[1], \"w\", format=tarfile." +
                  format +
                  ")\n"
                  "[t.add(os.path.join(r, f)[2:]) for r, _, fs in sorted(os.walk(\".\")) for f in sorted(fs)]\n"
                  "t.close()' " +
                  out.string());
    ASSERT_EQ(c.code, 0) << c.out;
    auto got = ReadAllMembers(out);
    ASSERT_EQ(got.size(), members.size()) << format;
    for (auto& [name, data] : members) EXPECT_EQ(got[name], data) << format << ": " << name.substr(0, 40);
  }
  // A GNU ustar tar with a name that fits only via the 155-byte prefix field.
  std::string split = std::string(120, 'p') + "/file.txt";
  WriteFile(dir_ / "src2" / split, "prefixed");
  fs::path out = dir_ / "ustar.tar";
  ASSERT_EQ(Shell("cd " + (dir_ / "src2").string() + " && tar --format=ustar -cf " + out.string() + " " + split).code,
            0);
  EXPECT_EQ(ReadAllMembers(out)[split], "prefixed");
}

TEST_F(Interop, PackVerifyOverFileStoreAndCorruption) {
  for (std::string cls : {"dog", "cat"}) {
    for (int i = 0; i < 30; ++i)
      WriteFile(dir_ / "in" / cls / ("im" + std::to_string(i) + ".jpg"), std::string(3000 + i, 'a' + i % 26));
  }
  auto src = object::OpenFileStore((dir_ / "in").string());
  auto dst = object::OpenFileStore((dir_ / "out").string());
  ASSERT_TRUE(src.ok() && dst.ok());
  PackOptions o;
  o.shard_size = 32 << 10;
  o.sign_key = "k";
  auto r = Pack(**src, "", **dst, "", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->manifest.total_samples(), 60u);
  // GNU tar lists the shard; python's tarfile reads labels that match the class order.
  std::string shard = (dir_ / "out" / r->manifest.shards[0].name).string();
  Cmd list = Shell("tar -tf " + shard + " | head -2");
  EXPECT_EQ(list.out, "cat/im0.cls\ncat/im0.jpg\n");
  Cmd py = Shell(
      "/usr/bin/python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1]); "
      "print(t.extractfile(\"cat/im0.cls\").read().decode())' " +
      shard);
  EXPECT_EQ(py.out, "0\n");
  auto ok = Verify(**dst, "", SignedBy("k"));
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->ok()) << ok->Describe();
  // Poison one image in place with the same size.
  std::string bytes = ReadFile(shard);
  bytes[2000] ^= 1;
  WriteFile(shard, bytes);
  auto bad = Verify(**dst, "", SignedBy("k"));
  ASSERT_TRUE(bad.ok());
  ASSERT_EQ(bad->problems.size(), 1u) << bad->Describe();
  EXPECT_EQ(bad->problems[0].name, r->manifest.shards[0].name);
}

// The strata binary, when the cli is built in this tree.
TEST_F(Interop, StrataPackVerifyInspectCommands) {
  const char* bin_dir = getenv("STRATA_BINARY_DIR");
  std::string bin = std::string(bin_dir ? bin_dir : ".") + "/src/cli/strata";
  if (!fs::exists(bin)) GTEST_SKIP() << "no strata binary at " << bin;
  for (int i = 0; i < 40; ++i)
    WriteFile(dir_ / "in" / (std::to_string(1000 + i) + ".txt"), "sample " + std::to_string(i));
  std::string out = (dir_ / "out").string();
  Cmd pack = Shell("KEY=sekrit " + bin + " pack " + (dir_ / "in").string() + " " + out +
                   " --format indexed --compress zstd --shard-size 1KiB -j 3 --sign-key-env KEY");
  ASSERT_EQ(pack.code, 0) << pack.out;
  EXPECT_NE(pack.out.find("40 samples"), std::string::npos) << pack.out;
  Cmd verify = Shell("KEY=sekrit " + bin + " verify " + out + " --sign-key-env KEY");
  EXPECT_EQ(verify.code, 0) << verify.out;
  EXPECT_NE(verify.out.find("signature valid"), std::string::npos) << verify.out;
  Cmd inspect = Shell(bin + " inspect " + out + " --sample 7");
  EXPECT_EQ(inspect.code, 0) << inspect.out;
  EXPECT_NE(inspect.out.find("key: 1007"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("\"sample 7\""), std::string::npos) << inspect.out;
  // Truncate one shard: exit code 5, the shard named.
  fs::path victim = fs::path(out) / "shard-000002.sds";
  fs::resize_file(victim, fs::file_size(victim) - 5);
  Cmd bad = Shell(bin + " verify " + out);
  EXPECT_EQ(bad.code, 5) << bad.out;
  EXPECT_NE(bad.out.find("truncated: shard-000002.sds"), std::string::npos) << bad.out;
  Cmd wrong_key = Shell("KEY=nope " + bin + " verify " + out + " --sign-key-env KEY");
  EXPECT_EQ(wrong_key.code, 5) << wrong_key.out;
}

}  // namespace
}  // namespace strata::dataset
