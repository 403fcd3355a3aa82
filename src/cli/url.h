// How a command-line URL names a store and a key inside it: the one place
// that defines it.
//
//   s3://bucket/dir/key?endpoint=...  store = s3://bucket?endpoint=... (the
//                                     bucket root), key = "dir/key"
//   mem://name/dir/key                store = mem://name, key = "dir/key"
//   file:///a/b/c  or  /a/b/c, a/b/c  a local path. A single object is the
//                                     file c in the store rooted at /a/b; a
//                                     tree (--recursive, ls of a directory) is
//                                     the store rooted at /a/b/c itself.
// URLs are used literally (no percent-decoding); for s3 the query starts at
// the first '?'. Relative local paths are resolved against the working dir.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "object/object_store.h"

namespace strata::cli {

struct ObjectUrl {
  enum class Kind { kFile, kS3, kMem };
  Kind kind = Kind::kFile;
  std::string text;             // as given, for messages
  std::string store_url;        // s3/mem: the store at the bucket root (with query)
  std::string display;          // s3/mem: store URL without query, ending in '/'
  std::string key;              // s3/mem: key or prefix (may be empty)
  std::string path;             // file: absolute, normalised, no trailing '/' (except "/")
  bool trailing_slash = false;  // the URL ended in '/': names a directory or prefix
};

// Pure: no I/O. InvalidArgument with a message naming the URL when malformed.
Result<ObjectUrl> ParseObjectUrl(std::string_view text);

// A store plus a key (one object) or a prefix (a tree) inside it.
struct Endpoint {
  object::ObjectStorePtr store;
  std::string key;        // object key, or the prefix for trees ("" or ending in '/')
  std::string base;       // display URL of the store root, ending in '/'
  std::string local_dir;  // a local directory (whose files are the keys), or "" for a store
  std::string UrlOf(std::string_view key_in_store) const { return base + std::string(key_in_store); }
};

// One existing-or-not object to read, stat or delete. Local directories are
// rejected with InvalidArgument ("use --recursive").
Result<Endpoint> OpenObject(const ObjectUrl& url);
// A tree to read: s3/mem prefix = key + '/' unless empty; local: the
// directory itself (NotFound if missing, InvalidArgument if a file).
Result<Endpoint> OpenTreeSource(const ObjectUrl& url);
// A tree to write into; local directories are created.
Result<Endpoint> OpenTreeDestination(const ObjectUrl& url);
// Where a single object named `basename` goes: into the directory/prefix if
// the URL ends in '/' (or is an existing local directory, or an empty key),
// else exactly at the URL. Local parent directories are created.
Result<Endpoint> OpenObjectDestination(const ObjectUrl& url, std::string_view basename);
// What `ls` lists: s3/mem: the key as a raw prefix (as `aws s3 ls`); local:
// a directory's contents, or the entries of the parent starting with the name.
Result<Endpoint> OpenListing(const ObjectUrl& url);

// A dataset to read: a directory/prefix (shards empty), or shards of one
// directory named by a brace pattern in the last component
// ("/data/wds/train-{000000..000009}.tar") or by a list of URLs.
struct ShardSetEndpoint {
  Endpoint dir;
  std::vector<std::string> shards;  // relative to dir.key
};
Result<ShardSetEndpoint> OpenShardSet(const std::vector<std::string>& urls);

// The last '/'-separated component of a key ("a/b/c" -> "c").
std::string_view BaseName(std::string_view key);

}  // namespace strata::cli
