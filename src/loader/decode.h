// Field decoding and batch collation for the loader. Every parser here is
// bounds-checked (fuzz_npy.cc drives ParseNpy) and reports Corruption naming
// the sample and the field; decoded values share the field's Buffer (no
// copy) where the format allows. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/buffer.h"
#include "base/status.h"
#include "dataset/sample.h"
#include "dataset/tfrecord.h"
#include "loader/streaming_dataset.h"

namespace strata::loader {

struct NpyArray {
  std::string dtype;  // numpy descr, e.g. "<f4"
  std::vector<int64_t> shape;
  bool fortran_order = false;
  uint64_t item_size = 0;
  Buffer data;  // zero-copy slice of the input
};

// Parses a .npy file (format versions 1.0, 2.0 and 3.0): magic, version,
// header length, the header dict {'descr', 'fortran_order', 'shape'}, and
// checks that the data is exactly prod(shape) * itemsize bytes. `what` names
// the input in errors. Corruption on malformed input, NotSupported for
// object or structured dtypes (they need pickle or a record layout).
Result<NpyArray> ParseNpy(const Buffer& file, const std::string& what);

// The kind a field decodes to: the explicit option, else by name suffix
// (".npy" -> kNpy, ".json" -> kJson), else kExample for TFRecord int64/float
// features (`numeric_feature`), else kRaw.
Decode ResolveDecode(const StreamingOptions& options, const std::string& field, bool tfrecord_shard,
                     bool numeric_feature);

// tf.train.Example / Feature in protobuf's JSON mapping (as TensorFlow's
// json_format prints it): bytes base64, int64 as strings, floats as numbers.
std::string ExampleToJson(const dataset::Example& example);
std::string FeatureToJson(const dataset::Feature& feature);

// Decodes one field. `feature` is the TFRecord feature the field came from
// (nullptr for tar/indexed shards): kExample then renders that feature;
// without one, kExample parses the field's bytes as a serialized Example.
Result<Value> DecodeField(const std::string& sample_key, const std::string& field, const Buffer& data, Decode kind,
                          const dataset::Feature* feature);

// Collates samples into one Batch (see Column in streaming_dataset.h);
// `views`: columns view the samples' buffers rather than copying them.
Batch Collate(std::vector<DecodedSample>& samples, uint64_t epoch, uint64_t first_position, bool views = false);

}  // namespace strata::loader
