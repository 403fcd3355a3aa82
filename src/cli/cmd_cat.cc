// strata cat URL [--range A-B]: an object's bytes on stdout (binary-safe).
#include <unistd.h>

#include <cerrno>
#include <iostream>

#include "cli/command.h"
#include "cli/url.h"
#include "cli/util.h"

namespace strata::cli {
namespace {

constexpr uint64_t kChunk = 8ull << 20;  // bounded memory for large objects

struct CatArgs {
  std::string url;
  std::string range;
};

// HTTP-style, inclusive: "A-B", "A-" (to the end), "-N" (the last N bytes).
Result<object::ByteRange> ParseRange(std::string_view text) {
  size_t dash = text.find('-');
  auto bad = [&] {
    return InvalidArgumentError("bad --range \"" + std::string(text) + "\" (use A-B, A- or -N; bytes, inclusive)");
  };
  if (dash == std::string_view::npos) return bad();
  auto number = [](std::string_view s, uint64_t* out) {
    if (s.empty() || s.size() > 19) return false;
    uint64_t v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
  };
  std::string_view first = text.substr(0, dash), last = text.substr(dash + 1);
  uint64_t a = 0, b = 0;
  if (first.empty()) {
    if (!number(last, &b) || b == 0) return bad();
    return object::ByteRange::Last(b);
  }
  if (!number(first, &a)) return bad();
  if (last.empty()) return object::ByteRange::From(a);
  if (!number(last, &b) || b < a) return bad();
  return object::ByteRange::Of(a, b - a + 1);
}

void WriteOut(std::string_view data) {
  Status st = WriteAll(STDOUT_FILENO, data);
  if (st.ok()) return;
  if (errno == EPIPE) throw QuietExit{kExitFailure};  // reader went away (e.g. `| head`)
  Fail("cat", "stdout", st);
}

void RunCat(const CatArgs& args) {
  const char* cmd = "cat";
  ObjectUrl url = Check(ParseObjectUrl(args.url), cmd, args.url);
  Endpoint ep = Check(OpenObject(url), cmd, args.url);
  std::string name = ep.UrlOf(ep.key);
  std::optional<object::ByteRange> range;
  if (!args.range.empty()) range = Check(ParseRange(args.range), cmd, args.range);

  // The first GET also tells the object size; stream the rest in chunks.
  object::GetOptions options;
  uint64_t begin = 0, end = 0;
  {
    object::ObjectInfo info = Check(ep.store->Head(ep.key), cmd, name);
    Check(object::ResolveRange(range, info.size, &begin, &end), cmd, name);
    options.if_match = info.etag;  // a concurrent overwrite fails instead of mixing versions
  }
  if (begin == end) return;
  for (uint64_t offset = begin; offset < end; offset += kChunk) {
    options.range = object::ByteRange::Of(offset, std::min(kChunk, end - offset));
    object::GetResult got = Check(ep.store->Get(ep.key, options), cmd, name);
    if (got.data.size() != *options.range->length) {
      Fail(cmd, name,
           UnavailableError("short read: got " + std::to_string(got.data.size()) + " of " +
                            std::to_string(*options.range->length) + " bytes"));
    }
    WriteOut(got.data.view());
  }
}

CommandRegistrar registrar("cat", [](CLI::App& root) {
  auto args = std::make_shared<CatArgs>();
  auto* sub = root.add_subcommand("cat", "Write an object's bytes (or a byte range) to stdout");
  sub->add_option("url", args->url, "s3://bucket/key, file:///path, mem://name/key or a local path")->required();
  sub->add_option("--range", args->range, "Bytes A-B (inclusive), A- (to the end) or -N (the last N)");
  sub->footer([] { return std::string("Example: strata cat --range 0-1023 s3://bucket/shard-000.tar | xxd | head"); });
  sub->callback([args] { RunCat(*args); });
});

}  // namespace
}  // namespace strata::cli
