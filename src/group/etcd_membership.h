// EtcdMembership: a cache group's member list kept in etcd (Debian's
// etcd-server), through etcd's documented v3 HTTP/JSON gateway (/v3/...,
// keys and values base64) over libcurl (etcd_client.h: TLS, client
// certificates, etcd users): no consensus of our own.
//
// Join grants a lease (ttl_seconds), puts this member's signed record
// (member_record.h) at /strata/groups/<group>/members/<id> under it, and a
// background thread keeps the lease alive (every ttl/3), signs the record
// again before it expires, and follows the prefix with etcd's watch (POST
// /v3/watch, a long-lived stream of JSON messages read as it arrives): a join
// or leave reaches every member within milliseconds, and each change costs
// etcd one small event per watcher rather than a full range read per member.
// Only records signed with the group secret and not expired count as members
// (at most kMaxRecords are read): a writer to etcd without the secret adds
// no member, and a thousand fake entries cost one HMAC each, once.
// The watch resumes from the last revision seen, so reconnecting (with
// backoff, after an error, an etcd restart or a compaction) loses no event; a
// slow range poll (`poll`) is the safety net for a stream that stalls
// silently. Each changed list goes to on_change, always from the background
// thread (or Join's). A member that dies stops renewing: etcd drops its key
// when the lease expires and the others move its blocks. A lost lease (etcd
// restarted, a long pause) is granted and put again. etcd being unreachable
// never fails a read, nor a start: a member that cannot reach etcd when it
// starts serves alone (no members: it reads the bucket itself) and joins
// when etcd answers; later, the last list is kept until its records expire
// (then the member reads the bucket alone until etcd is back), and the
// group's per-peer deadlines cover dead members meanwhile. Thread-safe; the destructor
// cancels the stream at once (it never waits for etcd to send something) and
// revokes the lease (a clean leave is seen at once).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "group/etcd_client.h"
#include "group/etcd_json.h"
#include "group/member_record.h"
#include "group/peer_protocol.h"
#include "group/rendezvous.h"

namespace strata::group {

struct EtcdOptions {
  EtcdEndpoint endpoint;
  std::string group;   // [A-Za-z0-9._-]+
  std::string secret;  // the group secret: signs this member's record, checks the others'
  Member self;
  int ttl_seconds = 5;
  // A record's life, re-signed every third of it: how long a copy of it can be
  // replayed, and how long the last list outlives an unreachable etcd.
  std::chrono::seconds record_validity{300};
  std::chrono::seconds max_skew = kDefaultMaxSkew;
  std::chrono::milliseconds poll{30000};  // full re-read (jittered), the safety net under the watch
  std::chrono::milliseconds request_timeout{2000};
  std::chrono::milliseconds watch_rearm{300000};  // a watch stream is re-opened this often
  std::chrono::milliseconds watch_backoff_max{10000};
  Clock* clock = nullptr;  // WallNow dates records; default RealClock()
  // What this member publishes beside its membership, under the same lease, at
  // /strata/groups/<group>/cached/<id> (e.g. the bytes it caches per dataset, for
  // the CSI scheduler extender): asked at every renewal, put when it changed,
  // signed (member_record.h) and signed again with the membership record.
  std::function<std::string()> record;
};

class EtcdMembership {
 public:
  // Records read at most (a range limit): more than a group ever has, few
  // enough that a prefix flooded by a writer without the secret costs little.
  static constexpr size_t kMaxRecords = 4096;
  using OnChange = std::function<void(std::vector<Member>)>;
  // Registers and reads the members (on_change runs with them before Join
  // returns). When etcd cannot be reached (refused, timed out), the member
  // starts alone and joins in the background. InvalidArgument or
  // PermissionDenied for what waiting will not fix: a bad group name or
  // secret, a user or certificate etcd refuses, a certificate that fails
  // verification.
  static Result<std::unique_ptr<EtcdMembership>> Join(EtcdOptions options, OnChange on_change);
  ~EtcdMembership();

  // The group's members now, read once without joining (`strata warm`,
  // `strata cache group`). Unavailable when etcd cannot be reached.
  static Result<std::vector<Member>> List(EtcdOptions options);

  std::vector<Member> members() const;
  bool registered() const { return registered_.load(); }  // this member's record is in etcd
  struct Stats {
    uint64_t reads = 0;     // full range reads (join, safety poll, after a broken watch)
    uint64_t watches = 0;   // watch streams opened (1 + reconnects + re-arms)
    uint64_t events = 0;    // member events received on the watch
    uint64_t rejected = 0;  // records ignored: unsigned, signed with another secret, expired, malformed
  };
  Stats stats() const;
  // Stops renewing without revoking, as a crashed member would (tests).
  void StopWithoutLeaving();

  static std::string Prefix(const std::string& group) { return "/strata/groups/" + group + "/members/"; }
  static std::string RecordPrefix(const std::string& group) { return "/strata/groups/" + group + "/cached/"; }
  // Every member's record (EtcdOptions::record) now, by member id: the payloads
  // signed with options.secret and valid now; the others refused, with the reason.
  struct PublishedRecords {
    std::map<std::string, std::string> payloads;
    std::map<std::string, Status> refused;
  };
  static Result<PublishedRecords> ReadRecords(EtcdOptions options);

 private:
  EtcdMembership(EtcdOptions options, std::unique_ptr<EtcdClient> client, OnChange on_change);
  static Result<std::unique_ptr<EtcdMembership>> Make(EtcdOptions options, OnChange on_change);
  Status Connect();  // grant, register, read: Join, then the loop until it succeeds
  Status Grant();
  Status KeepAlive();
  Status Register();             // (re)signs this member's record and puts it under the lease
  Status PutRecord(bool force);  // the loop thread (and Connect) only
  struct Snapshot {
    std::map<std::string, MemberRecord> table;  // verified records by member id
    int64_t revision = 0;                       // etcd's revision the table is at
  };
  Result<Snapshot> Read();
  // Verifies `kv` and adds it to `table` (or drops its id); false if rejected.
  bool Ingest(const EtcdKv& kv, std::map<std::string, MemberRecord>* table);
  // Takes `snap` as the state (a fresh read is never older than what the
  // loop applied, since only the loop applies), or applies watched events.
  void Adopt(Snapshot snap);
  void Apply(const std::vector<EtcdEvent>& events);
  void Publish();  // hands the live members to on_change if they changed
  void CountRejected(uint64_t n);
  void StartWatch();
  // One message of the watch stream (called on the watch client's I/O thread).
  Status OnWatchMessage(std::string_view text);
  void Loop();
  void Stop(bool revoke);

  EtcdOptions options_;
  Clock& clock_;
  std::unique_ptr<EtcdClient> etcd_;
  OnChange on_change_;
  std::string lease_;  // the lease ID (decimal), touched by Join and then the loop thread only
  std::atomic<bool> registered_{false};
  std::string record_put_;  // the record last put under lease_ (loop thread only)
  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<Member> members_ GUARDED_BY(mu_);
  Snapshot state_;  // touched by Join and then the loop thread only
  // Filled by the watch stream's callbacks, drained by the loop thread.
  std::vector<EtcdEvent> pending_ GUARDED_BY(mu_);
  bool watch_created_ GUARDED_BY(mu_) = false;
  bool watch_ended_ GUARDED_BY(mu_) = false;
  Status watch_status_ GUARDED_BY(mu_);
  Stats stats_ GUARDED_BY(mu_);
  uint64_t rejected_logged_ = 0;  // loop thread (and Join) only
  // The watch's own client, so cancelling its stream touches nothing else;
  // created and destroyed by the loop thread only.
  std::unique_ptr<net::HttpClient> watch_http_;
  std::thread thread_;
};

}  // namespace strata::group
