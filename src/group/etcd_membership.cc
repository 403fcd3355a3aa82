#include "group/etcd_membership.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "base/log.h"
#include "base/random.h"

namespace strata::group {
namespace {

using json = nlohmann::json;

std::string B64(std::string_view s) { return Base64Encode(s.data(), s.size()); }

// The first key after every key starting with `prefix` (etcd's range_end for a prefix).
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(prefix.back() + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

// A string field of a JSON object (etcd's gateway sends int64 as strings), or "".
std::string Field(const json& j, const char* name) {
  if (!j.is_object()) return {};
  auto it = j.find(name);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return {};
}

int64_t ToInt64(const std::string& s) {
  if (s.empty() || s.size() > 18) return 0;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::vector<Member> ToMembers(const std::map<std::string, std::string>& table) {
  std::vector<Member> members;
  members.reserve(table.size());
  for (auto& [id, address] : table) members.push_back({id, address});
  return Canonical(std::move(members));
}

// Splits a stream of concatenated JSON objects (etcd's gateway sends one per
// watch message, each on its own line, but nothing relies on the newlines)
// into whole objects, by tracking brace depth outside strings. Bounded: a
// message larger than kMaxMessage fails the stream.
class JsonObjectSplitter {
 public:
  static constexpr size_t kMaxMessage = 4 << 20;
  // Appends bytes; calls `each` with every object completed by them.
  template <typename F>
  Status Feed(std::string_view bytes, F&& each) {
    buf_.append(bytes);
    for (; pos_ < buf_.size(); ++pos_) {
      char c = buf_[pos_];
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

bool ValidGroupName(const std::string& g) {
  if (g.empty() || g.size() > 128) return false;
  for (char c : g) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

EtcdMembership::EtcdMembership(EtcdOptions options, OnChange on_change)
    : options_(std::move(options)), on_change_(std::move(on_change)), http_([&] {
        net::HttpClientOptions h;
        h.connect_timeout = options_.request_timeout;
        h.total_timeout = options_.request_timeout;
        h.max_connections = 4;
        return h;
      }()) {}

Result<std::unique_ptr<EtcdMembership>> EtcdMembership::Join(EtcdOptions options, OnChange on_change) {
  if (!ValidGroupName(options.group)) {
    return InvalidArgumentError("cache group name \"" + options.group + "\" must be 1-128 of [A-Za-z0-9._-]");
  }
  if (options.self.id.empty() || options.self.id.find('/') != std::string::npos || options.self.address.empty()) {
    return InvalidArgumentError("a cache group member needs an id without '/' and a peer address");
  }
  if (options.ttl_seconds < 1) return InvalidArgumentError("the membership lease TTL must be at least 1 s");
  std::unique_ptr<EtcdMembership> m(new EtcdMembership(std::move(options), std::move(on_change)));
  STRATA_RETURN_IF_ERROR(m->Grant());
  STRATA_RETURN_IF_ERROR(m->Register());
  STRATA_RETURN_IF_ERROR(m->PutRecord(true));
  STRATA_ASSIGN_OR_RETURN(auto snap, m->Read());
  m->Adopt(std::move(snap));  // on_change runs here, before Join returns
  m->thread_ = std::thread([p = m.get()] { p->Loop(); });
  return m;
}

Result<std::vector<Member>> EtcdMembership::List(EtcdOptions options) {
  if (!ValidGroupName(options.group)) {
    return InvalidArgumentError("cache group name \"" + options.group + "\" must be 1-128 of [A-Za-z0-9._-]");
  }
  std::unique_ptr<EtcdMembership> m(new EtcdMembership(std::move(options), nullptr));
  STRATA_ASSIGN_OR_RETURN(auto snap, m->Read());  // no lease, no thread: the destructor revokes nothing
  return ToMembers(snap.table);
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
  if (revoke && !lease_.empty()) {
    auto r = Call("/v3/lease/revoke", json{{"ID", lease_}}.dump());
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

Result<std::string> EtcdMembership::Call(const std::string& path, const std::string& body) {
  net::HttpRequest req;
  req.method = "POST";
  req.url = options_.endpoint + path;
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = Buffer::Copy(body);
  req.timeout = options_.request_timeout;
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, http_.Send(std::move(req)));
  if (resp.status != 200) {
    return UnavailableError("etcd " + path + " answered HTTP " + std::to_string(resp.status),
                            resp.body.ToString().substr(0, 300));
  }
  return resp.body.ToString();
}

Status EtcdMembership::Grant() {
  STRATA_ASSIGN_OR_RETURN(std::string body, Call("/v3/lease/grant", json{{"TTL", options_.ttl_seconds}}.dump()));
  json j = json::parse(body, nullptr, false);
  std::string id = Field(j, "ID");
  if (id.empty()) return UnavailableError("etcd granted no lease", body.substr(0, 300));
  lease_ = id;
  return Status::Ok();
}

Status EtcdMembership::Register() {
  json put = {{"key", B64(Prefix(options_.group) + options_.self.id)},
              {"value", B64(options_.self.address)},
              {"lease", lease_}};
  return Call("/v3/kv/put", put.dump()).status();
}

Status EtcdMembership::PutRecord(bool force) {
  if (!options_.record) return Status::Ok();
  std::string value = options_.record();
  if (!force && value == record_put_) return Status::Ok();
  json put = {{"key", B64(RecordPrefix(options_.group) + options_.self.id)}, {"value", B64(value)}, {"lease", lease_}};
  STRATA_RETURN_IF_ERROR(Call("/v3/kv/put", put.dump()).status());
  record_put_ = std::move(value);
  return Status::Ok();
}

Result<std::map<std::string, std::string>> EtcdMembership::ReadRecords(EtcdOptions options) {
  if (!ValidGroupName(options.group)) {
    return InvalidArgumentError("cache group name \"" + options.group + "\" must be 1-128 of [A-Za-z0-9._-]");
  }
  std::unique_ptr<EtcdMembership> m(new EtcdMembership(std::move(options), nullptr));
  const std::string prefix = RecordPrefix(m->options_.group);
  STRATA_ASSIGN_OR_RETURN(
      std::string body,
      m->Call("/v3/kv/range", json{{"key", B64(prefix)}, {"range_end", B64(PrefixEnd(prefix))}}.dump()));
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return UnavailableError("etcd sent a range answer that is not JSON", body.substr(0, 300));
  std::map<std::string, std::string> out;
  auto kvs = j.find("kvs");
  if (kvs == j.end() || !kvs->is_array()) return out;
  for (const auto& kv : *kvs) {
    std::string key, value;
    if (!Base64Decode(Field(kv, "key"), &key) || !Base64Decode(Field(kv, "value"), &value)) continue;
    if (!key.starts_with(prefix) || key.size() == prefix.size()) continue;
    out[key.substr(prefix.size())] = std::move(value);
  }
  return out;
}

Status EtcdMembership::KeepAlive() {
  STRATA_ASSIGN_OR_RETURN(std::string body, Call("/v3/lease/keepalive", json{{"ID", lease_}}.dump()));
  // One message of the gateway's stream: {"result":{"ID":...,"TTL":"5"}}.
  json j = json::parse(body.substr(0, body.find('\n')), nullptr, false);
  std::string ttl = j.is_object() && j.contains("result") ? Field(j["result"], "TTL") : "";
  if (ttl.empty() || ttl == "0") {
    // The lease is gone (expired during a pause, or etcd lost it): join again.
    STRATA_LOG_WARN("group: membership lease {} expired; registering again", lease_);
    STRATA_RETURN_IF_ERROR(Grant());
    STRATA_RETURN_IF_ERROR(Register());
    return PutRecord(true);
  }
  return PutRecord(false);
}

Result<EtcdMembership::Snapshot> EtcdMembership::Read() {
  const std::string prefix = Prefix(options_.group);
  STRATA_ASSIGN_OR_RETURN(
      std::string body, Call("/v3/kv/range", json{{"key", B64(prefix)}, {"range_end", B64(PrefixEnd(prefix))}}.dump()));
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return UnavailableError("etcd sent a range answer that is not JSON", body.substr(0, 300));
  {
    MutexLock lock(mu_);
    ++stats_.reads;
  }
  Snapshot snap;
  snap.revision = j.contains("header") ? ToInt64(Field(j["header"], "revision")) : 0;
  auto kvs = j.find("kvs");
  if (kvs == j.end()) return snap;  // no members: the field is omitted
  if (!kvs->is_array()) return UnavailableError("etcd range answer without a kvs list");
  for (const auto& kv : *kvs) {
    std::string key, value;
    if (!Base64Decode(Field(kv, "key"), &key) || !Base64Decode(Field(kv, "value"), &value)) continue;
    if (!key.starts_with(prefix) || key.size() == prefix.size() || value.empty() || value.size() > 300) continue;
    snap.table[key.substr(prefix.size())] = value;
  }
  return snap;
}

void EtcdMembership::Adopt(Snapshot snap) {
  state_ = std::move(snap);
  Publish();
}

void EtcdMembership::Apply(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.revision != 0 && e.revision <= state_.revision) continue;  // already in a later read
    if (e.put) {
      state_.table[e.id] = e.address;
    } else {
      state_.table.erase(e.id);
    }
    state_.revision = std::max(state_.revision, e.revision);
  }
  Publish();
}

void EtcdMembership::Publish() {
  std::vector<Member> members = ToMembers(state_.table);
  {
    MutexLock lock(mu_);
    if (members == members_) return;
    members_ = members;
  }
  if (on_change_) on_change_(std::move(members));
}

Status EtcdMembership::OnWatchMessage(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return UnavailableError("etcd sent a watch message that is not JSON");
  if (j.contains("error")) return UnavailableError("etcd watch failed", std::string(text.substr(0, 300)));
  auto rit = j.find("result");
  if (rit == j.end() || !rit->is_object()) return Status::Ok();
  const json& r = *rit;
  if (r.value("canceled", false)) {
    // Compacted past our revision, or refused: re-read and watch again.
    return UnavailableError("etcd cancelled the watch (compact revision " + Field(r, "compact_revision") + ")",
                            Field(r, "cancel_reason"));
  }
  const int64_t header_revision = r.contains("header") ? ToInt64(Field(r["header"], "revision")) : 0;
  const std::string prefix = Prefix(options_.group);
  std::vector<Event> events;
  if (auto evs = r.find("events"); evs != r.end() && evs->is_array()) {
    for (const auto& ev : *evs) {
      if (!ev.is_object() || !ev.contains("kv")) continue;
      const json& kv = ev["kv"];
      Event e;
      const std::string type = Field(ev, "type");  // PUT is the default and omitted
      e.put = type.empty() || type == "PUT";
      std::string key;
      if (!Base64Decode(Field(kv, "key"), &key) || !key.starts_with(prefix) || key.size() == prefix.size()) continue;
      e.id = key.substr(prefix.size());
      if (e.put && (!Base64Decode(Field(kv, "value"), &e.address) || e.address.empty() || e.address.size() > 300)) {
        continue;
      }
      e.revision = ToInt64(Field(kv, "mod_revision"));
      if (e.revision == 0) e.revision = header_revision;
      events.push_back(std::move(e));
    }
  }
  {
    MutexLock lock(mu_);
    if (r.value("created", false)) watch_created_ = true;
    stats_.events += events.size();
    for (auto& e : events) pending_.push_back(std::move(e));
  }
  cv_.NotifyAll();
  return Status::Ok();
}

void EtcdMembership::StartWatch() {
  if (!watch_http_) {
    net::HttpClientOptions h;
    h.connect_timeout = options_.request_timeout;
    h.low_speed_bytes = 0;  // an idle stream is normal; the re-arm timeout and the poll cover a dead one
    h.max_connections = 1;
    watch_http_ = std::make_unique<net::HttpClient>(h);
  }
  const std::string prefix = Prefix(options_.group);
  json create = {{"key", B64(prefix)},
                 {"range_end", B64(PrefixEnd(prefix))},
                 {"start_revision", std::to_string(state_.revision + 1)}};
  net::HttpRequest req;
  req.method = "POST";
  req.url = options_.endpoint + "/v3/watch";
  req.headers.emplace_back("Content-Type", "application/json");
  req.body = Buffer::Copy(json{{"create_request", create}}.dump());
  req.timeout = options_.watch_rearm;
  auto splitter = std::make_shared<JsonObjectSplitter>();
  net::BodySink sink;
  sink.capacity = std::numeric_limits<size_t>::max();  // a stream, bounded per message by the splitter
  sink.write = [this, splitter](uint64_t, const uint8_t* data, size_t size) {
    return splitter->Feed(std::string_view(reinterpret_cast<const char*>(data), size),
                          [this](std::string_view m) { return OnWatchMessage(m); });
  };
  req.sink = std::move(sink);
  {
    MutexLock lock(mu_);
    ++stats_.watches;
  }
  // Runs on the watch client's I/O thread, at the latest when the loop
  // thread destroys that client (joining its thread), so `this` is alive.
  watch_http_->SendAsync(std::move(req), [this](Result<net::HttpResponse> r) {
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
  const std::chrono::milliseconds backoff_min(250);
  // The safety poll is spread over 0.75-1.25 x `poll`, so members started
  // together do not read the whole prefix in lock-step.
  Random rng;
  auto poll_interval = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(options_.poll * (0.75 + 0.5 * rng.UniformDouble()));
  };
  auto next_renew = Clock::now() + renew_every;
  auto next_poll = Clock::now() + poll_interval();
  auto next_watch = Clock::now();  // Join's read is fresh: watch from its revision at once
  auto backoff = backoff_min;
  bool watching = false, reread = false;
  for (;;) {
    std::vector<Event> events;
    bool created = false, ended = false;
    Status why;
    {
      MutexLock lock(mu_);
      auto wake = std::min(next_renew, next_poll);
      if (!watching) wake = std::min(wake, next_watch);
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
