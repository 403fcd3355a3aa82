// EtcdMembership: a cache group's member list kept in etcd (Debian's
// etcd-server), through etcd's documented v3 HTTP/JSON gateway (/v3/...,
// keys and values base64) over libcurl: no consensus of our own.
//
// Join grants a lease (ttl_seconds), puts /strata/groups/<group>/members/<id>
// = <peer address> under it, and a background thread keeps the lease alive
// (every ttl/3) and reads the prefix (every poll interval), handing each
// changed list to on_change. A member that dies stops renewing: etcd drops
// its key when the lease expires and the others move its blocks. A lost
// lease (etcd restarted, a long pause) is granted and put again. etcd being
// unreachable never fails a read: the last list is kept and the group's
// per-peer deadlines cover dead members meanwhile.
// Polling, not the watch stream: one range per member per second is nothing
// for etcd at 1,000 members, and a poll cannot silently stall like a stream.
// Thread-safe; the destructor revokes the lease (a clean leave is seen at once).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "group/rendezvous.h"
#include "net/http_client.h"

namespace strata::group {

struct EtcdOptions {
  std::string endpoint = "http://127.0.0.1:2379";  // etcd client URL
  std::string group;                               // [A-Za-z0-9._-]+
  Member self;
  int ttl_seconds = 5;
  std::chrono::milliseconds poll{1000};
  std::chrono::milliseconds request_timeout{2000};
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
  // Stops renewing without revoking, as a crashed member would (tests).
  void StopWithoutLeaving();

  static std::string Prefix(const std::string& group) { return "/strata/groups/" + group + "/members/"; }

 private:
  EtcdMembership(EtcdOptions options, OnChange on_change);
  Result<std::string> Call(const std::string& path, const std::string& json);
  Status Grant();
  Status KeepAlive();
  Status Register();
  Result<std::vector<Member>> Read();
  void Loop();
  void Stop(bool revoke);

  EtcdOptions options_;
  OnChange on_change_;
  net::HttpClient http_;
  std::string lease_;  // the lease ID (decimal), touched by Join and then the loop thread only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<Member> members_;
  std::thread thread_;
};

}  // namespace strata::group
