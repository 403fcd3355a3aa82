// Unit tests for the pure codecs: tar, TFRecord + tf.train.Example, the
// indexed format and the offset-index sidecar, over in-memory buffers.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "base/hash.h"
#include "dataset/indexed.h"
#include "dataset/offset_index.h"
#include "dataset/shard.h"
#include "dataset/tar.h"
#include "dataset/tfrecord.h"

namespace strata::dataset {
namespace {

Sample MakeSample(std::string key, std::vector<std::pair<std::string, std::string>> fields) {
  Sample s;
  s.key = std::move(key);
  for (auto& [n, v] : fields) s.fields.push_back({n, Buffer::Copy(v)});
  return s;
}

void ExpectSameSample(const Sample& a, const Sample& b) {
  EXPECT_EQ(a.key, b.key);
  ASSERT_EQ(a.fields.size(), b.fields.size()) << a.key;
  for (size_t i = 0; i < a.fields.size(); ++i) {
    EXPECT_EQ(a.fields[i].name, b.fields[i].name);
    EXPECT_EQ(a.fields[i].data.view(), b.fields[i].data.view()) << a.key << "." << a.fields[i].name;
  }
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

// ---------- sample names ----------

TEST(SampleName, WebDatasetKeyRule) {
  std::string_view k, f;
  ASSERT_TRUE(SplitSampleName("a/b.seg.png", &k, &f));
  EXPECT_EQ(k, "a/b");
  EXPECT_EQ(f, "seg.png");
  ASSERT_TRUE(SplitSampleName("dir.v2/000123.jpg", &k, &f));  // dots in directories do not count
  EXPECT_EQ(k, "dir.v2/000123");
  EXPECT_EQ(f, "jpg");
  EXPECT_FALSE(SplitSampleName("README", &k, &f));
  EXPECT_FALSE(SplitSampleName("a/.hidden", &k, &f));
  EXPECT_FALSE(SplitSampleName("a/b.", &k, &f));
}

// ---------- tar ----------

Buffer WriteTar(const std::vector<Sample>& samples) {
  BufferSink sink;
  TarWriter w(sink);
  for (const auto& s : samples) EXPECT_TRUE(w.AddSample(s).ok());
  EXPECT_TRUE(w.Finish().ok());
  return sink.Take();
}

std::vector<Sample> ReadTarSamples(const Buffer& tar) {
  BufferSource src(tar, "t.tar");
  TarSampleReader r(src);
  std::vector<Sample> out;
  while (true) {
    auto s = r.Next();
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok() || !*s) break;
    out.push_back(std::move(**s));
  }
  return out;
}

TEST(Tar, HeaderBytesAreUstar) {
  BufferSink sink;
  TarWriter w(sink);
  ASSERT_TRUE(w.AddFile("000001.cls", Buffer::Copy("7")).ok());
  ASSERT_TRUE(w.Finish().ok());
  Buffer b = sink.Take();
  ASSERT_EQ(b.size(), 512u + 512 + 1024);
  std::string h(b.view().substr(0, 512));
  EXPECT_EQ(h.substr(0, 10), "000001.cls");
  EXPECT_EQ(h.substr(100, 8), std::string("0000644\0", 8));
  EXPECT_EQ(h.substr(124, 12), std::string("00000000001\0", 12));
  EXPECT_EQ(h.substr(136, 12), std::string("00000000000\0", 12));
  EXPECT_EQ(h[156], '0');
  EXPECT_EQ(h.substr(257, 8), std::string("ustar\0"
                                          "00",
                                          8));
  unsigned sum = 0;
  for (int i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
  EXPECT_EQ(std::stoul(h.substr(148, 6), nullptr, 8), sum);
  EXPECT_EQ(b.view()[512], '7');
  EXPECT_EQ(TarMemberSize("000001.cls", 1), 1024u);
}

TEST(Tar, RoundTripWithLongAndUnicodeNames) {
  std::string long_dir(150, 'd');
  std::vector<Sample> in = {
      MakeSample("000000", {{"cls", "3"}, {"jpg", std::string(1000, 'x')}}),
      MakeSample(long_dir + "/000001", {{"json", "{}"}, {"txt", ""}}),
      MakeSample("caf\xc3\xa9/\xe6\x97\xa5", {{"txt", "utf8"}}),
  };
  Buffer tar = WriteTar(in);
  EXPECT_EQ(tar.size() % 512, 0u);
  uint64_t expected = kTarEndSize;
  for (auto& s : in) {
    for (auto& f : s.fields) expected += TarMemberSize(s.key + "." + f.name, f.data.size());
  }
  EXPECT_EQ(tar.size(), expected);
  auto out = ReadTarSamples(tar);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) ExpectSameSample(in[i], out[i]);
}

TEST(Tar, SampleRangesAllowRandomAccess) {
  std::vector<Sample> in;
  for (int i = 0; i < 5; ++i)
    in.push_back(MakeSample("k" + std::to_string(i), {{"a", std::string(i * 300, 'a')}, {"b", "b"}}));
  Buffer tar = WriteTar(in);
  BufferSource src(tar, "t.tar");
  TarSampleReader r(src);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  while (true) {
    auto s = r.Next();
    ASSERT_TRUE(s.ok());
    if (!*s) break;
    ranges.push_back({r.sample_begin(), r.sample_end()});
  }
  ASSERT_EQ(ranges.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    BufferSource one(tar.Slice(ranges[i].first, ranges[i].second - ranges[i].first), "t.tar", ranges[i].first);
    TarSampleReader r1(one);
    auto s = r1.Next();
    ASSERT_TRUE(s.ok() && *s);
    ExpectSameSample(in[i], **s);
  }
}

TEST(Tar, DuplicateFieldIsCorruption) {
  BufferSink sink;
  TarWriter w(sink);
  ASSERT_TRUE(w.AddFile("a.jpg", Buffer::Copy("1")).ok());
  ASSERT_TRUE(w.AddFile("a.jpg", Buffer::Copy("2")).ok());
  ASSERT_TRUE(w.Finish().ok());
  Buffer tar = sink.Take();
  BufferSource src(tar, "dup.tar");
  TarSampleReader r(src);
  auto s = r.Next();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kCorruption);
  EXPECT_NE(s.status().message().find("dup.tar"), std::string::npos);
  EXPECT_NE(s.status().message().find("offset 1024"), std::string::npos);
}

TEST(Tar, TruncatedAndLyingShardsAreCorruption) {
  Buffer tar = WriteTar({MakeSample("a", {{"bin", std::string(5000, 'z')}})});
  // Truncated inside the data.
  BufferSource cut(tar.Slice(0, 2000), "cut.tar");
  TarReader r(cut);
  auto m = r.Next();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kCorruption);
  EXPECT_NE(m.status().message().find("cut.tar: tar offset 0"), std::string::npos) << m.status();
  // Truncated inside the header.
  BufferSource cut2(tar.Slice(0, 300), "cut2.tar");
  TarReader r2(cut2);
  EXPECT_EQ(r2.Next().status().code(), Code::kCorruption);
  // A lying size (huge, with a valid checksum) must not be allocated.
  std::string h(tar.view().substr(0, 512));
  std::memcpy(h.data() + 124, "77777777777", 11);
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  snprintf(h.data() + 148, 8, "%06o", sum);
  BufferSource lying(Buffer::Copy(h + std::string(1024, '\0')), "lying.tar");
  TarReader r3(lying);
  auto m3 = r3.Next();
  ASSERT_FALSE(m3.ok());
  EXPECT_NE(m3.status().message().find("claims 8589934591 bytes"), std::string::npos) << m3.status();
  // A flipped byte in a header fails its checksum.
  std::string flipped(tar.view());
  flipped[3] ^= 1;
  BufferSource bad(Buffer::Copy(flipped), "bad.tar");
  TarReader r4(bad);
  EXPECT_NE(r4.Next().status().message().find("checksum"), std::string::npos);
}

// A hand-made GNU tar: 'L' long-name member followed by the file, and a directory.
TEST(Tar, ReadsGnuLongNamesAndSkipsDirectories) {
  auto header = [](std::string name, uint64_t size, char type, bool gnu) {
    std::string h(512, '\0');
    std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
    snprintf(h.data() + 100, 8, "%07o", 0644);
    snprintf(h.data() + 124, 12, "%011llo", static_cast<unsigned long long>(size));
    h[156] = type;
    std::memcpy(h.data() + 257,
                gnu ? "ustar  \0"
                    : "ustar\0"
                      "00",
                8);
    std::memset(h.data() + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    snprintf(h.data() + 148, 8, "%06o", sum);
    return h;
  };
  auto pad = [](std::string s) { return s + std::string((512 - s.size() % 512) % 512, '\0'); };
  std::string name = std::string(120, 'n') + "/k.txt";
  std::string tar = header("dir/", 0, '5', true) + header("././@LongLink", name.size() + 1, 'L', true) +
                    pad(name + '\0') + header(name.substr(0, 100), 5, '0', true) + pad("hello") +
                    header("short.bin", 3, '0', false) + pad("abc") + std::string(1024, '\0');
  auto out = ReadTarSamples(Buffer::Copy(tar));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].key, std::string(120, 'n') + "/k");
  EXPECT_EQ(out[0].fields[0].data.view(), "hello");
  EXPECT_EQ(out[1].key, "short");
}

// ---------- TFRecord / Example ----------

TEST(TfRecord, FramingBytesAndRoundTrip) {
  BufferSink sink;
  TfRecordWriter w(sink);
  ASSERT_TRUE(w.Write(Buffer::Copy("abc")).ok());
  ASSERT_TRUE(w.Write(Buffer::Copy("")).ok());
  Buffer b = sink.Take();
  ASSERT_EQ(b.size(), 3 + 16 + 16u);
  EXPECT_EQ(b.view().substr(0, 8), Bytes({3, 0, 0, 0, 0, 0, 0, 0}));
  uint32_t len_crc = MaskCrc32c(Crc32c(b.data(), 8));
  EXPECT_EQ(b.view().substr(8, 4), std::string(reinterpret_cast<const char*>(&len_crc), 4));
  EXPECT_EQ(b.view().substr(12, 3), "abc");
  BufferSource src(b, "r.tfrecord");
  TfRecordReader r(src);
  auto a = r.Next();
  ASSERT_TRUE(a.ok() && *a);
  EXPECT_EQ((*a)->view(), "abc");
  auto e = r.Next();
  ASSERT_TRUE(e.ok() && *e);
  EXPECT_TRUE((*e)->empty());
  auto end = r.Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(TfRecord, BothCrcsAreChecked) {
  BufferSink sink;
  TfRecordWriter w(sink);
  ASSERT_TRUE(w.Write(Buffer::Copy("payload")).ok());
  std::string good(sink.Take().view());
  for (size_t pos : {size_t{0}, size_t{9}, size_t{13}, good.size() - 1}) {
    std::string bad = good;
    bad[pos] ^= 0x20;
    BufferSource src(Buffer::Copy(bad), "x.tfrecord");
    TfRecordReader r(src);
    auto got = r.Next();
    ASSERT_FALSE(got.ok()) << pos;
    EXPECT_EQ(got.status().code(), Code::kCorruption);
    EXPECT_NE(got.status().message().find("x.tfrecord: tfrecord offset 0"), std::string::npos);
  }
  // A valid length CRC over a huge length: refused before allocating.
  std::string huge = Bytes({0, 0, 0, 0, 0, 0, 0, 0x40});
  uint32_t c = MaskCrc32c(Crc32c(huge.data(), 8));
  huge.append(reinterpret_cast<const char*>(&c), 4);
  BufferSource src(Buffer::Copy(huge + "xxxx"), "h.tfrecord");
  TfRecordReader r(src);
  EXPECT_NE(r.Next().status().message().find("remain"), std::string::npos);
}

// Hand-checked protobuf bytes (field numbers from tensorflow/core/example/*.proto):
// Example{features(1){feature(1) map entry{key(1)="a", value(2)=Feature{int64_list(3){value(1) packed [1, 300]}}}}}
TEST(Example, EncodesHandCheckedBytes) {
  Example ex;
  ex["a"] = Feature::Int64s({1, 300});
  std::string want = Bytes({0x0a, 0x0e,                      // Example.features, 14 bytes
                            0x0a, 0x0c,                      // Features.feature entry, 12 bytes
                            0x0a, 0x01, 'a',                 // key "a"
                            0x12, 0x07,                      // value: Feature, 7 bytes
                            0x1a, 0x05,                      // Feature.int64_list, 5 bytes
                            0x0a, 0x03, 0x01, 0xac, 0x02});  // Int64List.value packed: 1, 300
  EXPECT_EQ(EncodeExample(ex), want);

  Example b;
  b["b"] = Feature::Bytes({Buffer::Copy("hi")});
  b["f"] = Feature::Floats({1.5f});
  EXPECT_EQ(EncodeExample(b), Bytes({0x0a, 0x1c,                                         // Example.features
                                     0x0a, 0x0b, 0x0a, 0x01, 'b',  0x12, 0x06,           // entry "b"
                                     0x0a, 0x04, 0x0a, 0x02, 'h',  'i',                  // bytes_list ["hi"]
                                     0x0a, 0x0d, 0x0a, 0x01, 'f',  0x12, 0x08,           // entry "f"
                                     0x12, 0x06, 0x0a, 0x04, 0x00, 0x00, 0xc0, 0x3f}));  // float_list [1.5]
}

TEST(Example, DecodesUnpackedNegativeAndUnknownFields) {
  // int64_list unpacked: value(1) varint -1 (10 bytes), value(1) varint 5; float_list unpacked fixed32 2.0;
  // plus an unknown varint field 7 at the Example level.
  std::string int_list = Bytes({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x08, 0x05});
  std::string feat_i = Bytes({0x1a, static_cast<int>(int_list.size())}) + int_list;
  std::string entry_i = Bytes({0x0a, 0x01, 'i', 0x12, static_cast<int>(feat_i.size())}) + feat_i;
  std::string float_list = Bytes({0x0d, 0x00, 0x00, 0x00, 0x40});
  std::string feat_f = Bytes({0x12, static_cast<int>(float_list.size())}) + float_list;
  std::string entry_f = Bytes({0x0a, 0x01, 'f', 0x12, static_cast<int>(feat_f.size())}) + feat_f;
  std::string features = Bytes({0x0a, static_cast<int>(entry_i.size())}) + entry_i +
                         Bytes({0x0a, static_cast<int>(entry_f.size())}) + entry_f;
  std::string example = Bytes({0x38, 0x01, 0x0a, static_cast<int>(features.size())}) + features;
  auto ex = DecodeExample(Buffer::Copy(example));
  ASSERT_TRUE(ex.ok()) << ex.status();
  ASSERT_EQ(ex->size(), 2u);
  EXPECT_EQ(ex->at("i").kind, Feature::Kind::kInt64);
  EXPECT_EQ(ex->at("i").int64s, (std::vector<int64_t>{-1, 5}));
  EXPECT_EQ(ex->at("f").floats, (std::vector<float>{2.0f}));
  // Round trip re-encodes packed.
  auto again = DecodeExample(Buffer::Copy(EncodeExample(*ex)));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->at("i").int64s, (std::vector<int64_t>{-1, 5}));
}

TEST(Example, RejectsMalformed) {
  for (std::string bad :
       {Bytes({0x0a, 0x05, 0x0a}), Bytes({0x0a}), Bytes({0x0b}), Bytes({0x0a, 0x04, 0x0a, 0x02, 0x12, 0x7f}),
        Bytes({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})}) {
    auto ex = DecodeExample(Buffer::Copy(bad));
    EXPECT_FALSE(ex.ok());
    EXPECT_EQ(ex.status().code(), Code::kCorruption);
  }
}

TEST(Example, FeatureNameMustBeUtf8) {
  Example ex;
  ex["ok\xc3\xa9"] = Feature::Int64s({1});
  ASSERT_TRUE(DecodeExample(Buffer::Copy(EncodeExample(ex))).ok());
  ex["\xc0\x80"] = Feature::Int64s({2});  // an overlong NUL
  auto bad = DecodeExample(Buffer::Copy(EncodeExample(ex)));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kCorruption);
  EXPECT_NE(bad.status().message().find("feature name is not valid UTF-8"), std::string::npos) << bad.status();
}

TEST(Example, ShardWriterRefusesFieldNamesItCouldNotReadBack) {
  BufferSink sink;
  ShardWriteOptions options;
  options.format = ShardFormat::kTfRecord;
  auto w = ShardWriter::Make(sink, options);
  Status st = w->Add(MakeSample("k", {{"\xffjpg", "x"}}));
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("not valid UTF-8"), std::string::npos) << st;
  EXPECT_EQ(sink.bytes_written(), 0u);  // nothing half-written
}

TEST(Example, SampleMapping) {
  Sample s = MakeSample("cat/0001", {{"cls", "2"}, {"jpg", "\xff\xd8"}});
  Example ex = SampleToExample(s);
  EXPECT_EQ(ex.at("cls").kind, Feature::Kind::kInt64);
  EXPECT_EQ(ex.at("cls").int64s, std::vector<int64_t>{2});
  Sample back = ExampleToSample(*DecodeExample(Buffer::Copy(EncodeExample(ex))), "fallback");
  ExpectSameSample(s, back);
}

// ---------- indexed ----------

Buffer WriteIndexed(const std::vector<Sample>& samples, bool zstd) {
  BufferSink sink;
  IndexedWriter w(sink, {zstd, 3});
  for (const auto& s : samples) EXPECT_TRUE(w.Add(s).ok());
  EXPECT_TRUE(w.Finish().ok());
  return sink.Take();
}

class IndexedTest : public ::testing::TestWithParam<bool> {};

TEST_P(IndexedTest, RoundTripAndRandomAccess) {
  std::vector<Sample> in;
  for (int i = 0; i < 50; ++i) {
    in.push_back(MakeSample("s" + std::to_string(i),
                            {{"cls", std::to_string(i % 7)}, {"img", std::string(i * 37, 'a' + i % 26)}}));
  }
  in.push_back(MakeSample("empty", {}));
  Buffer shard = WriteIndexed(in, GetParam());
  BufferSource src(shard, "x.sds");
  IndexedSampleReader r(src);
  for (const auto& want : in) {
    auto got = r.Next();
    ASSERT_TRUE(got.ok() && *got) << got.status();
    ExpectSameSample(want, **got);
  }
  auto end = r.Next();
  ASSERT_TRUE(end.ok() && !*end);
  // Random access: header, then one slice per sample.
  auto size = IndexedHeaderSize(shard.Slice(0, kIndexedFixedHeader), shard.size(), "x.sds");
  ASSERT_TRUE(size.ok());
  auto h = ParseIndexedHeader(shard.Slice(0, *size), shard.size(), "x.sds");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->sample_count, in.size());
  EXPECT_EQ(h->fields, (std::vector<std::string>{"cls", "img"}));
  EXPECT_EQ((h->flags & kIndexedFlagZstd) != 0, GetParam());
  for (uint64_t i : {uint64_t{49}, uint64_t{0}, uint64_t{23}}) {
    auto s = DecodeIndexedRecord(shard.Slice(h->offsets[i], h->offsets[i + 1] - h->offsets[i]), *h, i, "x.sds");
    ASSERT_TRUE(s.ok()) << s.status();
    ExpectSameSample(in[i], *s);
  }
  if (GetParam()) {
    EXPECT_LT(shard.size(), 50u * 37 * 25 / 2);  // repetitive bytes compress
  }
}

TEST_P(IndexedTest, DetectsCorruptionAndTruncation) {
  std::vector<Sample> in = {MakeSample("a", {{"x", std::string(300, 'x')}}), MakeSample("b", {{"x", "yy"}})};
  Buffer shard = WriteIndexed(in, GetParam());
  std::string bytes(shard.view());
  // Flip a byte in the last record.
  std::string flipped = bytes;
  flipped[flipped.size() - 1] ^= 1;
  BufferSource s1(Buffer::Copy(flipped), "f.sds");
  IndexedSampleReader r1(s1);
  ASSERT_TRUE(r1.Next().ok());
  auto bad = r1.Next();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("checksum mismatch in sample 1"), std::string::npos) << bad.status();
  // Truncation: the offset table no longer spans the shard.
  BufferSource s2(Buffer::Copy(bytes.substr(0, bytes.size() - 1)), "t.sds");
  IndexedSampleReader r2(s2);
  auto t = r2.Next();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kCorruption);
  EXPECT_NE(t.status().message().find("t.sds"), std::string::npos);
  // Header byte flipped (sample count): header CRC or bounds catch it.
  std::string hdr = bytes;
  hdr[16] ^= 0x40;
  BufferSource s3(Buffer::Copy(hdr), "h.sds");
  IndexedSampleReader r3(s3);
  EXPECT_EQ(r3.Next().status().code(), Code::kCorruption);
}

// A well-formed header (valid checksum) whose schema declares `fields` empty
// names and no samples: 4 header bytes per name, ~32 bytes each as strings.
std::string HeaderWithEmptyFields(uint32_t fields) {
  const uint64_t size = kIndexedFixedHeader + 4ull * fields + 8;
  std::string h(size, '\0');
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) h[at + i] = static_cast<char>(v >> (8 * i));
  };
  std::memcpy(h.data(), "STRSDS01", 8);
  put(8, 1, 4);      // version
  put(24, size, 8);  // data offset: the shard is its header
  put(40, fields, 4);
  put(size - 8, size, 8);  // offsets[0] == offsets[n] == shard size
  put(44, MaskCrc32c(Crc32c(h.data(), h.size())), 4);
  return h;
}

// Suspected in issue 15: the schema's field count was bounded by the header
// size only (up to 2^28 empty names in a 1 GiB header: ~8 GiB of strings).
// It is now checked against max_fields before anything is allocated.
TEST(IndexedHeaderTest, FieldCountIsBoundedByMaxFieldsBeforeAllocating) {
  ReadLimits limits;
  limits.max_fields = 1000;
  const std::string ok = HeaderWithEmptyFields(1000);
  auto h = ParseIndexedHeader(Buffer::Copy(ok), ok.size(), "ok.sds", limits);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->fields.size(), 1000u);
  EXPECT_EQ(h->sample_count, 0u);

  const std::string hostile = HeaderWithEmptyFields(1001);
  auto size = IndexedHeaderSize(Buffer::Copy(hostile.substr(0, kIndexedFixedHeader)), hostile.size(), "h.sds", limits);
  ASSERT_FALSE(size.ok());  // refused from the fixed header alone, before the schema is even read
  EXPECT_EQ(size.status().code(), Code::kCorruption);
  EXPECT_NE(size.status().message().find("1001 fields"), std::string::npos) << size.status();
  EXPECT_EQ(ParseIndexedHeader(Buffer::Copy(hostile), hostile.size(), "h.sds", limits).status().code(),
            Code::kCorruption);
  // The default limit holds too (the reader's path).
  const std::string many = HeaderWithEmptyFields((1u << 16) + 1);
  BufferSource src(Buffer::Copy(many), "many.sds");
  IndexedSampleReader r(src);
  EXPECT_EQ(r.Next().status().code(), Code::kCorruption);
}

INSTANTIATE_TEST_SUITE_P(Compression, IndexedTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "zstd" : "plain"; });

// ---------- offset index ----------

TEST(OffsetIndex, RoundTripAndValidation) {
  OffsetIndex idx{ShardFormat::kTfRecord, 1000, {0, 100, 100, 900}};
  Buffer b = EncodeOffsetIndex(idx);
  EXPECT_EQ(b.size(), 32u + 8 * 4 + 4);
  auto back = DecodeOffsetIndex(b, "s.idx");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->offsets, idx.offsets);
  EXPECT_EQ(back->format, ShardFormat::kTfRecord);
  EXPECT_EQ(back->count(), 3u);
  std::string bad(b.view());
  bad[40] ^= 1;
  EXPECT_EQ(DecodeOffsetIndex(Buffer::Copy(bad), "s.idx").status().code(), Code::kCorruption);
  std::string lying(b.view());
  lying[16] = 0x7f;  // count far beyond the bytes present
  EXPECT_NE(DecodeOffsetIndex(Buffer::Copy(lying), "s.idx").status().message().find("does not match"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::dataset
