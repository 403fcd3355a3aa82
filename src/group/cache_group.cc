#include "group/cache_group.h"

#include <algorithm>

#include "base/log.h"
#include "base/metrics.h"
#include "group/peer_protocol.h"

namespace strata::group {
namespace {

Counter& GlobalCounter(const char* name, const char* help) { return MetricsRegistry::Global().GetCounter(name, help); }
Counter& PeerHits() {
  static Counter& c = GlobalCounter("strata_group_peer_hits_total", "Blocks fetched from their owner in the group");
  return c;
}
Counter& PeerMisses() {
  static Counter& c = GlobalCounter("strata_group_peer_misses_total",
                                    "Peer fetches that failed or were skipped (the bucket was read instead)");
  return c;
}

Counter& BadAnswers() {
  static Counter& c = GlobalCounter("strata_group_peer_bad_answers_total",
                                    "Peer answers refused because their group MAC (or length) did not verify");
  return c;
}

Gauge& MembersGauge() {
  static Gauge& g = MetricsRegistry::Global().GetGauge("strata_group_members", "Members of the cache group seen now");
  return g;
}

// A peer's error text, for our log: bounded, one line.
std::string Excerpt(const Buffer& body) {
  std::string s = body.ToString().substr(0, 200);
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return s;
}

}  // namespace

CacheGroup::CacheGroup(GroupOptions options)
    : options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : RealClock()),
      members_(std::make_shared<const std::vector<Member>>()) {
  net::HttpClientOptions h;
  h.connect_timeout = options_.deadline;
  h.total_timeout = options_.deadline;
  h.low_speed_time = std::chrono::seconds(std::max<int64_t>(1, options_.deadline.count() / 1000));
  http_ = std::make_unique<net::HttpClient>(h);
}

CacheGroup::~CacheGroup() = default;

void CacheGroup::SetMembers(std::vector<Member> members) {
  members = Canonical(std::move(members));
  if (members.size() > kMaxMembers) {
    STRATA_LOG_WARN("group: {} members; considering the first {} by id", members.size(), kMaxMembers);
    members.resize(kMaxMembers);
  }
  auto list = std::make_shared<const std::vector<Member>>(std::move(members));
  MembersGauge().Set(static_cast<int64_t>(list->size()));
  MutexLock lock(mu_);
  members_ = std::move(list);
}

std::vector<Member> CacheGroup::members() const {
  MutexLock lock(mu_);
  return *members_;
}

std::optional<Member> CacheGroup::OwnerOf(const cache::BlockId& id) const {
  std::shared_ptr<const std::vector<Member>> list;
  {
    MutexLock lock(mu_);
    list = members_;
  }
  if (list->empty()) return std::nullopt;
  const Member* m = group::OwnerOf(*list, BlockSeed(options_.secret, cache::HashBlockId(id)));
  if (!m) return std::nullopt;
  return *m;
}

bool CacheGroup::IsSuspect(const std::string& member_id) const {
  MutexLock lock(mu_);
  auto it = suspect_until_.find(member_id);
  return it != suspect_until_.end() && clock_.Now() < it->second;
}

void CacheGroup::MarkSuspect(const std::string& member_id, const Status& why) {
  Duration period = options_.suspect_for;
  {
    MutexLock lock(mu_);
    if (why.code() == Code::kDeadlineExceeded) {
      // Busy or hung cannot be told apart from one timeout: back off exponentially.
      const int strikes = std::min(++timeouts_in_a_row_[member_id], 16);
      period = std::min(options_.suspect_for, options_.slow_suspect_for * (1 << (strikes - 1)));
    }
    suspect_until_[member_id] = clock_.Now() + period;
  }
  STRATA_LOG_WARN("group: peer {} is suspect for {} ms (reading the bucket directly): {}", member_id,
                  std::chrono::duration_cast<std::chrono::milliseconds>(period).count(), why.ToString());
}

void CacheGroup::Forgive(const std::string& member_id) {
  MutexLock lock(mu_);
  timeouts_in_a_row_.erase(member_id);
}

bool CacheGroup::Remote(const cache::BlockId& id) {
  auto owner = OwnerOf(id);
  return owner && owner->id != options_.self;
}

Result<Buffer> CacheGroup::FetchRemote(const cache::BlockId& id, uint64_t length, uint64_t object_size) {
  auto owner = OwnerOf(id);
  if (!owner || owner->id == options_.self) return UnavailableError("this member owns the block");
  if (IsSuspect(owner->id)) {
    ++suspect_skips_;
    ++misses_;
    PeerMisses().Inc();
    return UnavailableError("owner " + owner->id + " is suspect");
  }
  auto r = Ask(*owner, id, length, object_size);
  if (r.ok()) {
    ++hits_;
    PeerHits().Inc();
  } else {
    ++misses_;
    PeerMisses().Inc();
  }
  return r;
}

Result<Buffer> CacheGroup::Ask(const Member& owner, const cache::BlockId& id, uint64_t length, uint64_t object_size) {
  BlockRequest br{id.store, id.key, id.etag, id.block_size, id.index, object_size};
  const std::string target = FormatBlockTarget(br);
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(clock_.WallNow().time_since_epoch()).count();
  const std::string auth = SignPeerRequest(options_.secret, "GET", target, now);
  net::HttpRequest req;
  req.method = "GET";
  req.url = "http://" + owner.address + target;
  req.headers.emplace_back(std::string(kPeerTimeHeader), std::to_string(now));
  req.headers.emplace_back(std::string(kPeerAuthHeader), auth);
  req.timeout = options_.deadline;
  const std::string what = "block " + std::to_string(id.index) + " of " + id.key + " from peer " + owner.id;
  auto resp = http_->Send(std::move(req));
  if (!resp.ok()) {
    MarkSuspect(owner.id, resp.status());
    return resp.status().WithContext(what);
  }
  if (resp->status == 412 || resp->status == 404) {
    // The object changed (or the peer does not serve this bucket): not the peer's fault.
    return UnavailableError(what + ": HTTP " + std::to_string(resp->status));
  }
  if (resp->status != 200) {
    Status st = UnavailableError(what + ": HTTP " + std::to_string(resp->status), Excerpt(resp->body));
    MarkSuspect(owner.id, st);
    return st;
  }
  // Nothing of the body is used before its MAC verifies: a stranger at the
  // owner's address, or anyone on the path, cannot make us cache their bytes.
  Status verified = resp->body.size() != length
                        ? CorruptionError("answer has " + std::to_string(resp->body.size()) + " of " +
                                          std::to_string(length) + " bytes")
                        : VerifyPeerAnswer(options_.secret, auth, target, resp->Header(kPeerNonceHeader).value_or(""),
                                           resp->Header(kPeerAnswerHeader).value_or(""), resp->body.view());
  if (!verified.ok()) {
    ++bad_checksums_;
    BadAnswers().Inc();
    Status st = verified.WithContext(what + " refused (reading the bucket instead)");
    MarkSuspect(owner.id, st);
    return st;
  }
  Forgive(owner.id);
  return std::move(resp->body);
}

CacheGroup::Stats CacheGroup::stats() const {
  return {hits_.load(), misses_.load(), bad_checksums_.load(), suspect_skips_.load()};
}

}  // namespace strata::group
