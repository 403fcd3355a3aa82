// Readers of what etcd's v3 HTTP/JSON gateway answers (keys and values are
// base64, int64 fields are strings): range answers, watch stream messages,
// lease and auth answers. Everything here comes off the network, from a
// server that anyone with write access to the group's prefix can fill, so
// each reader is bounded, never throws, and is fuzzed (fuzz_etcd_json).
// Pure; thread-safe (the splitter: one stream per instance).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace strata::group {

// The first key after every key starting with `prefix` (etcd's range_end for a prefix).
std::string EtcdPrefixEnd(std::string prefix);

struct EtcdKv {
  std::string key, value;  // decoded
  int64_t mod_revision = 0;
};

struct EtcdRange {
  int64_t revision = 0;  // etcd's revision the answer is at
  std::vector<EtcdKv> kvs;
  bool more = false;  // a limit cut the answer short
};
// Unavailable for anything but a JSON object with a well-formed kvs list;
// entries whose key or value is not base64 are skipped.
Result<EtcdRange> ParseEtcdRange(std::string_view body);

struct EtcdEvent {
  bool put = false;  // else a delete
  EtcdKv kv;         // a delete's value is empty
};
struct EtcdWatchMessage {
  bool created = false;
  int64_t revision = 0;  // the message header's
  std::vector<EtcdEvent> events;
};
// One message of a watch stream. Unavailable for an error or a cancelled
// watch (compaction, permission, an expired token): re-read and watch again.
Result<EtcdWatchMessage> ParseEtcdWatchMessage(std::string_view text);

// The ID of a granted lease (decimal); Unavailable when there is none.
Result<std::string> ParseEtcdLeaseGrant(std::string_view body);
// The TTL a keep-alive answered; 0 when the lease is gone.
int64_t ParseEtcdKeepAliveTtl(std::string_view body);
// The token of /v3/auth/authenticate; Unavailable when there is none.
Result<std::string> ParseEtcdAuthToken(std::string_view body);

// Splits a stream of concatenated JSON objects (etcd's gateway sends one per
// watch message, each on its own line, but nothing relies on the newlines)
// into whole objects, by tracking brace depth outside strings. Bounded: a
// message larger than kMaxMessage fails the stream.
class JsonObjectSplitter {
 public:
  static constexpr size_t kMaxMessage = 4 << 20;
  // Appends bytes; calls `each(std::string_view)` (returning Status) with
  // every object completed by them, stopping at the first error.
  template <typename F>
  Status Feed(std::string_view bytes, F&& each) {
    buf_.append(bytes);
    for (; pos_ < buf_.size(); ++pos_) {
      const char c = buf_[pos_];
      if (in_string_) {
        if (escaped_)
          escaped_ = false;
        else if (c == '\\')
          escaped_ = true;
        else if (c == '"')
          in_string_ = false;
        continue;
      }
      if (c == '"' && depth_ > 0) {
        in_string_ = true;
      } else if (c == '{') {
        if (depth_++ == 0) start_ = pos_;
      } else if (c == '}' && depth_ > 0 && --depth_ == 0) {
        STRATA_RETURN_IF_ERROR(each(std::string_view(buf_).substr(start_, pos_ + 1 - start_)));
        buf_.erase(0, pos_ + 1);
        pos_ = static_cast<size_t>(-1);  // the loop's ++ makes it 0
      }
    }
    if (depth_ == 0) {
      buf_.clear();  // whitespace between messages
      pos_ = 0;
    }
    if (buf_.size() > kMaxMessage) return UnavailableError("etcd sent a watch message over 4 MiB");
    return Status::Ok();
  }

 private:
  std::string buf_;
  size_t pos_ = 0, start_ = 0;
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
};

}  // namespace strata::group
