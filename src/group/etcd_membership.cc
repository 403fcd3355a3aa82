#include "group/etcd_membership.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/random.h"
#include "group/address.h"

namespace strata::group {
namespace {

using json = nlohmann::json;

std::string B64(std::string_view s) { return Base64Encode(s.data(), s.size()); }

bool ValidGroupName(const std::string& g) {
  if (g.empty() || g.size() > 128) return false;
  for (char c : g) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

Counter& RejectedRecords() {
  static Counter& c = MetricsRegistry::Global().GetCounter(
      "strata_group_records_rejected_total",
      "Member records in etcd ignored: not signed with the group secret, expired or malformed");
  return c;
}

int64_t UnixSeconds(WallTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

EtcdMembership::EtcdMembership(EtcdOptions options, std::unique_ptr<EtcdClient> client, OnChange on_change)
    : options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : RealClock()),
      etcd_(std::move(client)),
      on_change_(std::move(on_change)) {}

Result<std::unique_ptr<EtcdMembership>> EtcdMembership::Make(EtcdOptions options, OnChange on_change) {
  if (!ValidGroupName(options.group)) {
    return InvalidArgumentError("cache group name \"" + options.group + "\" must be 1-128 of [A-Za-z0-9._-]");
  }
  if (options.secret.size() < kMinSecretBytes) {
    return InvalidArgumentError("a cache group secret must be at least " + std::to_string(kMinSecretBytes) + " bytes");
  }
  STRATA_ASSIGN_OR_RETURN(auto client, EtcdClient::Open(options.endpoint, options.request_timeout));
  return std::unique_ptr<EtcdMembership>(
      new EtcdMembership(std::move(options), std::move(client), std::move(on_change)));
}

Result<std::unique_ptr<EtcdMembership>> EtcdMembership::Join(EtcdOptions options, OnChange on_change) {
  if (options.self.id.empty() || options.self.id.find('/') != std::string::npos ||
      options.self.id.size() > kMaxMemberIdLength) {
    return InvalidArgumentError("a cache group member needs an id without '/' of at most 261 bytes");
  }
  STRATA_RETURN_IF_ERROR(ParseHostPort(options.self.address).status());
  if (options.ttl_seconds < 1) return InvalidArgumentError("the membership lease TTL must be at least 1 s");
  if (options.record_validity < std::chrono::seconds(3) || options.record_validity > kMaxRecordValidity) {
    return InvalidArgumentError("a member record's validity must be 3 s to 10 min");
  }
  STRATA_ASSIGN_OR_RETURN(auto m, Make(std::move(options), std::move(on_change)));
  Status st = m->Connect();  // on_change runs here on success, before Join returns
  if (!st.ok()) {
    if (!st.retryable()) return st;
    STRATA_LOG_WARN("group: etcd at {} does not answer ({}); serving alone and joining group {} when it does",
                    m->options_.endpoint.url, st.ToString(), m->options_.group);
  }
  m->thread_ = std::thread([p = m.get()] { p->Loop(); });
  return m;
}

Result<std::vector<Member>> EtcdMembership::List(EtcdOptions options) {
  STRATA_ASSIGN_OR_RETURN(auto m, Make(std::move(options), nullptr));
  STRATA_ASSIGN_OR_RETURN(auto snap, m->Read());  // no lease, no thread: the destructor revokes nothing
  m->Adopt(std::move(snap));
  return m->members();
}

EtcdMembership::~EtcdMembership() { Stop(true); }

void EtcdMembership::StopWithoutLeaving() { Stop(false); }

void EtcdMembership::Stop(bool revoke) {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  if (revoke && registered_.load()) {
    auto r = etcd_->Call("/v3/lease/revoke", json{{"ID", lease_}}.dump());
    if (!r.ok())
      STRATA_LOG_WARN("group: could not leave cleanly (the lease expires on its own): {}", r.status().ToString());
  }
}

std::vector<Member> EtcdMembership::members() const {
  MutexLock lock(mu_);
  return members_;
}

EtcdMembership::Stats EtcdMembership::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

Status EtcdMembership::Connect() {
  STRATA_RETURN_IF_ERROR(Grant());
  STRATA_RETURN_IF_ERROR(Register());
  STRATA_RETURN_IF_ERROR(PutRecord(true));
  STRATA_ASSIGN_OR_RETURN(auto snap, Read());
  Adopt(std::move(snap));
  return Status::Ok();
}

Status EtcdMembership::Grant() {
  STRATA_ASSIGN_OR_RETURN(std::string body, etcd_->Call("/v3/lease/grant", json{{"TTL", options_.ttl_seconds}}.dump()));
  STRATA_ASSIGN_OR_RETURN(lease_, ParseEtcdLeaseGrant(body));
  return Status::Ok();
}

Status EtcdMembership::Register() {
  MemberRecord r;
  r.id = options_.self.id;
  r.address = options_.self.address;
  r.issued = UnixSeconds(clock_.WallNow());
  r.expires = r.issued + options_.record_validity.count();
  json put = {{"key", B64(Prefix(options_.group) + r.id)},
              {"value", B64(FormatMemberRecord(options_.secret, options_.group, r))},
              {"lease", lease_}};
  STRATA_RETURN_IF_ERROR(etcd_->Call("/v3/kv/put", put.dump()).status());
  registered_ = true;
  return Status::Ok();
}

Status EtcdMembership::PutRecord(bool force) {
  if (!options_.record) return Status::Ok();
  std::string value = options_.record();
  if (!force && value == record_put_) return Status::Ok();
  // Signed like the membership record, and signed again with it (a reader takes it only while it is valid).
  const int64_t issued = UnixSeconds(clock_.WallNow());
  const std::string signed_value = FormatPublishedRecord(options_.secret, options_.group, options_.self.id, value,
                                                         issued, issued + options_.record_validity.count());
  json put = {
      {"key", B64(RecordPrefix(options_.group) + options_.self.id)}, {"value", B64(signed_value)}, {"lease", lease_}};
  STRATA_RETURN_IF_ERROR(etcd_->Call("/v3/kv/put", put.dump()).status());
  record_put_ = std::move(value);
  return Status::Ok();
}

Result<EtcdMembership::PublishedRecords> EtcdMembership::ReadRecords(EtcdOptions options) {
  if (!ValidGroupName(options.group)) {
    return InvalidArgumentError("cache group name \"" + options.group + "\" must be 1-128 of [A-Za-z0-9._-]");
  }
  STRATA_ASSIGN_OR_RETURN(auto etcd, EtcdClient::Open(options.endpoint, options.request_timeout));
  const std::string prefix = RecordPrefix(options.group);
  json range = {{"key", B64(prefix)}, {"range_end", B64(EtcdPrefixEnd(prefix))}, {"limit", kMaxRecords}};
  STRATA_ASSIGN_OR_RETURN(std::string body, etcd->Call("/v3/kv/range", range.dump()));
  STRATA_ASSIGN_OR_RETURN(EtcdRange answer, ParseEtcdRange(body));
  PublishedRecords out;
  const WallTime now = (options.clock ? options.clock : &RealClock())->WallNow();
  for (EtcdKv& kv : answer.kvs) {
    if (!kv.key.starts_with(prefix) || kv.key.size() == prefix.size()) continue;
    const std::string id = kv.key.substr(prefix.size());
    auto payload = ParsePublishedRecord(options.secret, options.group, id, kv.value, now, options.max_skew);
    if (!payload.ok()) {
      out.refused[id] = payload.status();
      continue;
    }
    out.payloads[id] = std::move(*payload);
  }
  return out;
}

Status EtcdMembership::KeepAlive() {
  STRATA_ASSIGN_OR_RETURN(std::string body, etcd_->Call("/v3/lease/keepalive", json{{"ID", lease_}}.dump()));
  if (ParseEtcdKeepAliveTtl(body) == 0) {
    // The lease is gone (expired during a pause, or etcd lost it): join again.
    STRATA_LOG_WARN("group: membership lease {} expired; registering again", lease_);
    registered_ = false;
    STRATA_RETURN_IF_ERROR(Grant());
    STRATA_RETURN_IF_ERROR(Register());
    return PutRecord(true);
  }
  return PutRecord(false);
}

bool EtcdMembership::Ingest(const EtcdKv& kv, std::map<std::string, MemberRecord>* table) {
  const std::string prefix = Prefix(options_.group);
  if (!kv.key.starts_with(prefix) || kv.key.size() == prefix.size()) return false;
  const std::string id = kv.key.substr(prefix.size());
  auto r = ParseMemberRecord(options_.secret, options_.group, id, kv.value, clock_.WallNow(), options_.max_skew);
  if (!r.ok()) {
    table->erase(id);  // whatever the key held before, it is no member now
    return false;
  }
  if (table->size() >= kMaxRecords && !table->count(id)) return false;
  (*table)[id] = std::move(*r);
  return true;
}

Result<EtcdMembership::Snapshot> EtcdMembership::Read() {
  const std::string prefix = Prefix(options_.group);
  json range = {{"key", B64(prefix)}, {"range_end", B64(EtcdPrefixEnd(prefix))}, {"limit", kMaxRecords}};
  STRATA_ASSIGN_OR_RETURN(std::string body, etcd_->Call("/v3/kv/range", range.dump()));
  STRATA_ASSIGN_OR_RETURN(EtcdRange answer, ParseEtcdRange(body));
  {
    MutexLock lock(mu_);
    ++stats_.reads;
  }
  if (answer.more) {
    STRATA_LOG_WARN("group: more than {} records under {} in etcd; reading the first {} only", kMaxRecords, prefix,
                    kMaxRecords);
  }
  Snapshot snap;
  snap.revision = answer.revision;
  uint64_t rejected = 0;
  for (const EtcdKv& kv : answer.kvs) rejected += !Ingest(kv, &snap.table);
  CountRejected(rejected);
  return snap;
}

void EtcdMembership::CountRejected(uint64_t n) {
  uint64_t total = 0;
  {
    MutexLock lock(mu_);
    stats_.rejected += n;
    total = stats_.rejected;
  }
  if (n > 0) RejectedRecords().Inc(n);
  // Once per hundredfold growth: a flooded prefix must not flood the log too.
  if (total == 0 || total < std::max<uint64_t>(1, rejected_logged_ * 100)) return;
  rejected_logged_ = total;
  STRATA_LOG_WARN(
      "group: {} member records in etcd ignored so far (not signed with this group's secret, expired or "
      "malformed): a member with another secret, or someone writing to {} without it",
      total, Prefix(options_.group));
}

void EtcdMembership::Adopt(Snapshot snap) {
  state_ = std::move(snap);
  Publish();
}

void EtcdMembership::Apply(const std::vector<EtcdEvent>& events) {
  uint64_t rejected = 0;
  // Events at or below the table's revision are in it already (a read came
  // later); a transaction's events share one revision, so compare with where
  // the table was before this batch, not after its first event.
  const int64_t known = state_.revision;
  for (const EtcdEvent& e : events) {
    if (e.kv.mod_revision != 0 && e.kv.mod_revision <= known) continue;
    const std::string prefix = Prefix(options_.group);
    if (e.put) {
      rejected += !Ingest(e.kv, &state_.table);
    } else if (e.kv.key.starts_with(prefix)) {
      state_.table.erase(e.kv.key.substr(prefix.size()));
    }
    state_.revision = std::max(state_.revision, e.kv.mod_revision);
  }
  CountRejected(rejected);
  Publish();
}

void EtcdMembership::Publish() {
  const WallTime now = clock_.WallNow();
  std::vector<Member> members;
  members.reserve(state_.table.size());
  for (const auto& [id, r] : state_.table) {
    if (RecordLive(r, now, options_.max_skew)) members.push_back({id, r.address});
  }
  members = Canonical(std::move(members));
  {
    MutexLock lock(mu_);
    if (members == members_) return;
    members_ = members;
  }
  if (on_change_) on_change_(std::move(members));
}

Status EtcdMembership::OnWatchMessage(std::string_view text) {
  STRATA_ASSIGN_OR_RETURN(EtcdWatchMessage m, ParseEtcdWatchMessage(text));
  {
    MutexLock lock(mu_);
    if (m.created) watch_created_ = true;
    stats_.events += m.events.size();
    for (auto& e : m.events) pending_.push_back(std::move(e));
  }
  cv_.NotifyAll();
  return Status::Ok();
}

void EtcdMembership::StartWatch() {
  if (!watch_http_) {
    net::HttpClientOptions h = etcd_->ClientOptions();
    h.low_speed_bytes = 0;  // an idle stream is normal; the re-arm timeout and the poll cover a dead one
    h.max_connections = 1;
    watch_http_ = std::make_unique<net::HttpClient>(h);
  }
  const std::string prefix = Prefix(options_.group);
  json create = {{"key", B64(prefix)},
                 {"range_end", B64(EtcdPrefixEnd(prefix))},
                 {"start_revision", std::to_string(state_.revision + 1)}};
  auto req = etcd_->StreamRequest("/v3/watch", json{{"create_request", create}}.dump());
  {
    MutexLock lock(mu_);
    ++stats_.watches;
    if (!req.ok()) {
      watch_ended_ = true;  // handled as a broken stream: backoff, re-read, watch again
      watch_status_ = req.status();
    }
  }
  if (!req.ok()) {
    cv_.NotifyAll();
    return;
  }
  req->timeout = options_.watch_rearm;
  auto splitter = std::make_shared<JsonObjectSplitter>();
  net::BodySink sink;
  sink.capacity = std::numeric_limits<size_t>::max();  // a stream, bounded per message by the splitter
  sink.write = [this, splitter](uint64_t, const uint8_t* data, size_t size) {
    return splitter->Feed(std::string_view(reinterpret_cast<const char*>(data), size),
                          [this](std::string_view m) { return OnWatchMessage(m); });
  };
  req->sink = std::move(sink);
  // Runs on the watch client's I/O thread, at the latest when the loop
  // thread destroys that client (joining its thread), so `this` is alive.
  watch_http_->SendAsync(std::move(*req), [this](Result<net::HttpResponse> r) {
    Status st;
    if (!r.ok()) {
      st = r.status();
    } else if (r->status != 200) {
      st = UnavailableError("etcd /v3/watch answered HTTP " + std::to_string(r->status),
                            r->body.ToString().substr(0, 300));
    } else {
      st = UnavailableError("etcd closed the watch stream");
    }
    {
      MutexLock lock(mu_);
      watch_ended_ = true;
      watch_status_ = st;
    }
    cv_.NotifyAll();
  });
}

void EtcdMembership::Loop() {
  using Clock = std::chrono::steady_clock;
  const auto renew_every = std::chrono::milliseconds(options_.ttl_seconds * 1000 / 3);
  const auto resign_every = std::chrono::duration_cast<std::chrono::milliseconds>(options_.record_validity) / 3;
  const std::chrono::milliseconds backoff_min(250);
  // The safety poll is spread over 0.75-1.25 x `poll`, so members started
  // together do not read the whole prefix in lock-step.
  Random rng;
  auto poll_interval = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(options_.poll * (0.75 + 0.5 * rng.UniformDouble()));
  };
  bool joined = registered_.load();
  auto next_renew = Clock::now() + renew_every;
  auto next_resign = Clock::now() + resign_every;
  auto next_poll = Clock::now() + poll_interval();
  auto next_watch = Clock::now();  // Join's read is fresh: watch from its revision at once
  auto next_connect = Clock::now() + backoff_min;
  auto backoff = backoff_min;
  bool watching = false, reread = false;
  for (;;) {
    std::vector<EtcdEvent> events;
    bool created = false, ended = false;
    Status why;
    {
      MutexLock lock(mu_);
      auto wake = joined ? std::min(next_renew, next_poll) : next_connect;
      if (joined && !watching) wake = std::min(wake, next_watch);
      // The predicate runs with mu_ held (the analysis cannot see that through the lambda).
      cv_.WaitUntil(lock, wake, [&]() NO_THREAD_SAFETY_ANALYSIS {
        return stopping_ || !pending_.empty() || watch_created_ || watch_ended_;
      });
      if (stopping_) break;
      events.swap(pending_);
      std::swap(created, watch_created_);
      std::swap(ended, watch_ended_);
      why = watch_status_;
    }
    try {
      if (!joined) {
        if (Clock::now() < next_connect) continue;
        Status st = Connect();
        if (!st.ok()) {
          STRATA_LOG_WARN("group: still alone, etcd does not answer ({}); trying again in {} ms", st.ToString(),
                          backoff.count());
          next_connect = Clock::now() + backoff;
          backoff = std::min(backoff * 2, options_.watch_backoff_max);
          continue;
        }
        STRATA_LOG_INFO("group: joined group {} through etcd at {}", options_.group, options_.endpoint.url);
        joined = true;
        backoff = backoff_min;
        next_renew = Clock::now() + renew_every;
        next_resign = Clock::now() + resign_every;
        next_watch = Clock::now();
        continue;
      }
      if (!events.empty()) Apply(events);
      if (created) backoff = backoff_min;  // etcd took the watch: the next failure starts over
      if (ended) {
        // Re-read before watching again: the safety net for anything the
        // stream may have dropped (a compaction, a reset mid-message).
        if (why.code() != Code::kDeadlineExceeded) {  // not the periodic re-arm
          STRATA_LOG_WARN("group: etcd watch ended ({}); reconnecting in {} ms", why.ToString(), backoff.count());
          next_watch = Clock::now() + backoff;
          backoff = std::min(backoff * 2, options_.watch_backoff_max);
        } else {
          next_watch = Clock::now();
        }
        watching = false;
        reread = true;
      }
      if (Clock::now() >= next_renew) {
        Status st = KeepAlive();
        if (!st.ok()) STRATA_LOG_WARN("group: could not renew membership: {}", st.ToString());
        next_renew = Clock::now() + renew_every;
        Publish();  // records expire on their own: drop those past their time
      }
      if (Clock::now() >= next_resign) {
        Status st = Register();
        if (st.ok()) st = PutRecord(true);
        if (!st.ok()) STRATA_LOG_WARN("group: could not sign this member's record again: {}", st.ToString());
        next_resign = Clock::now() + (st.ok() ? resign_every : renew_every);
      }
      const bool poll_due = Clock::now() >= next_poll;
      const bool watch_due = !watching && Clock::now() >= next_watch;
      if (poll_due || (watch_due && reread)) {
        next_poll = Clock::now() + poll_interval();
        auto snap = Read();
        if (snap.ok()) {
          Adopt(std::move(*snap));
          reread = false;
        } else {
          STRATA_LOG_WARN("group: could not read the members (keeping the last list): {}", snap.status().ToString());
          if (watch_due) {
            next_watch = Clock::now() + backoff;
            backoff = std::min(backoff * 2, options_.watch_backoff_max);
          }
        }
      }
      if (watch_due && !reread) {
        StartWatch();
        watching = true;
      }
    } catch (...) {
      STRATA_LOG_ERROR("group: membership thread caught an exception; continuing");
    }
  }
  watch_http_.reset();  // cancels the stream now: its done callback runs and the I/O thread is joined
}

}  // namespace strata::group
