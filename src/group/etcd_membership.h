// EtcdMembership: a cache group's member list kept in etcd (Debian's
// etcd-server), through etcd's documented v3 HTTP/JSON gateway (/v3/...,
// keys and values base64) over libcurl: no consensus of our own.
//
// Join grants a lease (ttl_seconds), puts /strata/groups/<group>/members/<id>
// = <peer address> under it, and a background thread keeps the lease alive
// (every ttl/3) and follows the prefix with etcd's watch (POST /v3/watch, a
// long-lived stream of JSON messages read as it arrives): a join or leave
// reaches every member within milliseconds, and each change costs etcd one
// small event per watcher rather than a full range read per member. The watch
// resumes from the last revision seen, so reconnecting (with backoff, after
// an error, an etcd restart or a compaction) loses no event; a slow range
// poll (`poll`) is the safety net for a stream that stalls silently. Each
// changed list goes to on_change, always from the background thread. A member
// that dies stops renewing: etcd drops its key when the lease expires and the
// others move its blocks. A lost lease (etcd restarted, a long pause) is
// granted and put again. etcd being unreachable never fails a read: the last
// list is kept and the group's per-peer deadlines cover dead members meanwhile.
// Thread-safe; the destructor cancels the stream at once (it never waits for
// etcd to send something) and revokes the lease (a clean leave is seen at once).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "group/rendezvous.h"
#include "net/http_client.h"

namespace strata::group {

struct EtcdOptions {
  std::string endpoint = "http://127.0.0.1:2379";  // etcd client URL
  std::string group;                               // [A-Za-z0-9._-]+
  Member self;
  int ttl_seconds = 5;
  std::chrono::milliseconds poll{30000};  // full re-read (jittered), the safety net under the watch
  std::chrono::milliseconds request_timeout{2000};
  std::chrono::milliseconds watch_rearm{300000};  // a watch stream is re-opened this often
  std::chrono::milliseconds watch_backoff_max{10000};
  // What this member publishes beside its membership, under the same lease, at
  // /strata/groups/<group>/cached/<id> (e.g. the bytes it caches per dataset, for
  // the CSI scheduler extender): asked at every renewal, put when it changed.
  std::function<std::string()> record;
};

class EtcdMembership {
 public:
  using OnChange = std::function<void(std::vector<Member>)>;
  // Registers and reads the members once (on_change runs with them before
  // Join returns). Unavailable when etcd cannot be reached.
  static Result<std::unique_ptr<EtcdMembership>> Join(EtcdOptions options, OnChange on_change);
  ~EtcdMembership();

  // The group's members now, read once without joining (`strata warm`,
  // `strata cache group`). Unavailable when etcd cannot be reached.
  static Result<std::vector<Member>> List(EtcdOptions options);

  std::vector<Member> members() const;
  struct Stats {
    uint64_t reads = 0;    // full range reads (join, safety poll, after a broken watch)
    uint64_t watches = 0;  // watch streams opened (1 + reconnects + re-arms)
    uint64_t events = 0;   // member events received on the watch
  };
  Stats stats() const;
  // Stops renewing without revoking, as a crashed member would (tests).
  void StopWithoutLeaving();

  static std::string Prefix(const std::string& group) { return "/strata/groups/" + group + "/members/"; }
  static std::string RecordPrefix(const std::string& group) { return "/strata/groups/" + group + "/cached/"; }
  // Every member's record (EtcdOptions::record) now, by member id.
  static Result<std::map<std::string, std::string>> ReadRecords(EtcdOptions options);

 private:
  EtcdMembership(EtcdOptions options, OnChange on_change);
  Result<std::string> Call(const std::string& path, const std::string& json);
  Status Grant();
  Status KeepAlive();
  Status Register();
  Status PutRecord(bool force);  // the loop thread (and Join) only
  struct Snapshot {
    std::map<std::string, std::string> table;  // member id -> peer address
    int64_t revision = 0;                      // etcd's revision the table is at
  };
  struct Event {
    bool put = false;  // else a delete
    std::string id, address;
    int64_t revision = 0;
  };
  Result<Snapshot> Read();
  // Takes `snap` as the state (a fresh read is never older than what the
  // loop applied, since only the loop applies), or applies watched events.
  void Adopt(Snapshot snap);
  void Apply(const std::vector<Event>& events);
  void Publish();  // hands the member list to on_change if it changed
  void StartWatch();
  // One message of the watch stream (called on the watch client's I/O thread).
  Status OnWatchMessage(std::string_view text);
  void Loop();
  void Stop(bool revoke);

  EtcdOptions options_;
  OnChange on_change_;
  net::HttpClient http_;
  std::string lease_;       // the lease ID (decimal), touched by Join and then the loop thread only
  std::string record_put_;  // the record last put under lease_ (loop thread only)
  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<Member> members_ GUARDED_BY(mu_);
  Snapshot state_;  // touched by Join and then the loop thread only
  // Filled by the watch stream's callbacks, drained by the loop thread.
  std::vector<Event> pending_ GUARDED_BY(mu_);
  bool watch_created_ GUARDED_BY(mu_) = false;
  bool watch_ended_ GUARDED_BY(mu_) = false;
  Status watch_status_ GUARDED_BY(mu_);
  Stats stats_ GUARDED_BY(mu_);
  // The watch's own client, so cancelling its stream touches nothing else;
  // created and destroyed by the loop thread only.
  std::unique_ptr<net::HttpClient> watch_http_;
  std::thread thread_;
};

}  // namespace strata::group
