// A decorator that injects the failures a real object store produces, for
// testing retries and recovery: seeded random faults (transient errors,
// throttling, connection resets, truncated bodies, stalls, lost replies)
// plus deterministic scripting (fail the next N requests, fail requests for
// some keys), and stale answers (an older version of an object, as an
// eventually consistent store's lagging replica gives). Thread-safe; time
// passes through the given Clock.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/random.h"
#include "object/store_wrapper.h"

namespace strata::object {

struct FaultConfig {
  uint64_t seed = 1;
  // Per-request probabilities, each drawn independently, checked in this order.
  double error_rate = 0;       // Unavailable ("injected server error"), request not applied
  double throttle_rate = 0;    // Throttled ("SlowDown"), request not applied
  double reset_rate = 0;       // Unavailable with cause "connection reset by peer", not applied
  double truncate_rate = 0;    // Get only: Unavailable with cause "truncated body"
  double lost_reply_rate = 0;  // mutations only: applied, then Unavailable (reply lost)
  double stall_rate = 0;       // the request first sleeps `stall`, then proceeds
  Duration stall = std::chrono::seconds(1);
  // Get, Head and streamed ranges of a key with an older version kept are
  // answered from that version, whole and consistent (its ETag, size, mtime,
  // metadata and bytes; If-Match and the other conditions judged against
  // it), as a lagging replica does. Versions are kept by KeepVersion and,
  // while stale_rate > 0, by every Put, Copy, CompleteMultipartUpload and
  // Delete through this store (the version it replaces). Drawn from a random
  // stream of its own: a seed's other faults are the same with or without it.
  double stale_rate = 0;
  Clock* clock = nullptr;  // stalls sleep on it (must outlive the store); nullptr: RealClock()
};

struct StoreFaultCounters {
  uint64_t requests = 0;
  uint64_t errors = 0;
  uint64_t throttles = 0;
  uint64_t resets = 0;
  uint64_t truncations = 0;
  uint64_t lost_replies = 0;
  uint64_t stalls = 0;
  uint64_t scripted = 0;  // from FailNext / FailKey
  uint64_t stale = 0;     // answers from an older version (stale_rate)
  uint64_t injected() const { return errors + throttles + resets + truncations + lost_replies + scripted + stale; }
};

// The operation a request performs, for per-key rules.
enum class FaultOp { kAny, kGet, kHead, kList, kPut, kDelete, kMultipart, kCopy };

class FaultStore : public StoreWrapper {
 public:
  // Owns `inner`.
  FaultStore(ObjectStorePtr inner, FaultConfig config);

  // The next `n` requests (of any kind) fail with `status` before reaching the inner store.
  void FailNext(int n, Status status);
  // Requests of kind `op` whose key starts with `key_prefix` fail with
  // `status`, `times` times (-1: until ClearRules). For List, the listing prefix is matched.
  void FailKey(std::string key_prefix, Status status, int times = -1, FaultOp op = FaultOp::kAny);
  void ClearRules();
  // Replaces the random rates (e.g. to heal the store mid-test).
  void SetConfig(FaultConfig config);
  // Keeps the inner store's current version of `key` as the one stale
  // answers give (replacing any kept before); NotFound if there is none.
  Status KeepVersion(std::string_view key);
  void ForgetVersions();

  StoreFaultCounters counters() const;
  ObjectStore& inner() { return base(); }

  using StoreWrapper::CompleteMultipartUpload;
  using StoreWrapper::Copy;
  using StoreWrapper::CreateMultipartUpload;
  using StoreWrapper::Get;
  using StoreWrapper::Put;

  Result<GetResult> Get(std::string_view key, const GetOptions& options) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Result<ListResult> List(const ListOptions& options) override;
  Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) override;
  Status Delete(std::string_view key) override;
  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) override;
  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data,
                                 const PartOptions& options) override;
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts,
                                             const CompleteOptions& options) override;
  Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) override;
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) override;
  // A streamed range is one Get request to the faults.
  Status ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                     const RangeConsumer& consume) override;

 private:
  struct Rule {
    std::string prefix;
    Status status;
    int remaining;
    FaultOp op;
  };
  // Decides this request's fate before it reaches the inner store. OK means
  // proceed; *truncate / *lose_reply ask for a failure after the inner call.
  Status Before(FaultOp op, std::string_view key, bool* truncate, bool* lose_reply);
  Status Truncated(std::string_view key);
  struct OldVersion {
    ObjectInfo info;
    Buffer data;
  };
  // The kept older version of `key`, if stale_rate says to answer from it now (counted).
  std::optional<OldVersion> DrawStale(std::string_view key);
  // Before a mutation of `key` (stale_rate > 0): keeps the version it replaces.
  void KeepReplaced(std::string_view key);
  Status LostReply(std::string_view key);

  Clock& clock_;
  mutable std::mutex mu_;
  FaultConfig config_;
  Random random_;
  int fail_next_ = 0;
  Status fail_next_status_;
  std::vector<Rule> rules_;
  StoreFaultCounters counters_;
  Random stale_random_;
  std::map<std::string, OldVersion, std::less<>> old_;
};

}  // namespace strata::object
