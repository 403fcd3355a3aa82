// Opening a store from a URL:
//   file:///abs/dir                    a local directory (created if missing)
//   mem://name[/prefix]                a process-global in-memory store
//   s3://bucket[/prefix][?endpoint=..]  S3 (parameters: see object/s3_config.h)
// Parameters understood for every scheme (and removed before the scheme's own):
//   prefix=P      confine the store to keys under P (PrefixStore)
//   emulate=SPEC  wrap in EmulateCloud with ParseCloudProfile(SPEC), e.g.
//                 emulate=ttfb=30ms,bw=25MB/s
// mem also takes min_part_size=BYTES. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "object/object_store.h"

namespace strata::object {

struct StoreUrl {
  std::string scheme;     // "file", "mem" or "s3"
  std::string authority;  // bucket or mem name; empty for file
  std::string path;       // decoded; file: the absolute directory; mem/s3: the prefix (no leading '/')
  std::vector<std::pair<std::string, std::string>> params;  // decoded, in order, names unique
};

// Pure parsing (no I/O). InvalidArgument naming the URL when malformed.
Result<StoreUrl> ParseStoreUrl(std::string_view url);

// A store URL split at its last '/' at or before `before`:
// "s3://b/dir/name?q" -> dir "s3://b/dir", name "name", query "?q" (an s3://
// URL's query belongs to its store, not to the name). Without a '/' there, dir
// is nullopt and name is the whole URL. Views into `url`; no I/O.
struct UrlDirName {
  std::optional<std::string_view> dir;
  std::string_view name, query;
};
UrlDirName SplitUrlDirName(std::string_view url, size_t before = std::string_view::npos);

// Opens the store `url` names. Emulated latency sleeps on `clock` (without it: RealClock()).
Result<ObjectStorePtr> OpenStore(std::string_view url, Clock& clock);
Result<ObjectStorePtr> OpenStore(std::string_view url);

}  // namespace strata::object
