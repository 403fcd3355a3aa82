// libFuzzer: TFRecord framing + tf.train.Example decoding of each record, and
// the Example decoder on the raw input.
#include <cstddef>
#include <cstdint>

#include "dataset/tfrecord.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::dataset;
  strata::Buffer buf = strata::Buffer::Copy(data, size);
  ReadLimits limits;
  limits.max_field_bytes = 1 << 20;
  BufferSource src(buf, "fuzz.tfrecord");
  TfRecordSampleReader reader(src, limits);
  for (int i = 0; i < 10000; ++i) {
    auto s = reader.Next();
    if (!s.ok() || !*s) break;
  }
  auto ex = DecodeExample(buf);
  if (ex.ok()) {
    // Re-encoding what was decoded must decode to the same map.
    auto again = DecodeExample(strata::Buffer::FromString(EncodeExample(*ex)));
    if (!again.ok() || again->size() != ex->size()) __builtin_trap();
  }
  return 0;
}
