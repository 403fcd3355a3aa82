// GroupMember: what a front end (`strata mount`, `strata serve`) holds to
// join a cache group: the peer endpoint, the CacheGroup router and, for
// etcd, the membership registration. Built from the flags every front end
// takes the same way:
//   --cache-group etcd://HOST:PORT/<group> | etcds://HOST:PORT/<group>?ca=...  (etcd_client.h)
//                 | static://HOST:PORT,HOST:PORT,...
//   --peer-listen HOST:PORT     this member's peer endpoint (its id, too)
//   --group-secret-file FILE    the group secret (or STRATA_GROUP_SECRET), 32 bytes at least
// A static list must name this member's --peer-listen address (it is added
// if missing). Thread-safe; destroy it after the stores it is attached to
// stop reading.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "cache/cached_store.h"
#include "group/cache_group.h"
#include "group/etcd_client.h"
#include "group/etcd_membership.h"
#include "group/peer_server.h"

namespace strata::group {

struct GroupUrl {
  std::string scheme;              // "etcd" (etcd:// and etcds://) or "static"
  EtcdEndpoint etcd;               // where etcd is and how to reach it
  std::string group;               // etcd group name
  std::vector<std::string> peers;  // static: host:port, validated (address.h)
};
Result<GroupUrl> ParseGroupUrl(std::string_view url);

struct JoinOptions {
  std::string url;     // --cache-group
  std::string listen;  // --peer-listen HOST:PORT (port 0: any free port; static lists need a fixed one)
  std::string secret;  // the secret itself (read by the front end from the file or env), kMinSecretBytes at least
  std::chrono::milliseconds deadline{2000};
  std::function<std::string()> record;  // etcd groups: published beside the membership (EtcdOptions::record)
};

class GroupMember {
 public:
  // Starts the peer endpoint and joins. With etcd unreachable it starts
  // alone and joins when etcd answers (EtcdMembership::Join).
  static Result<std::unique_ptr<GroupMember>> Join(const JoinOptions& options);
  ~GroupMember();
  // Serves `store`'s blocks to the group and routes its misses through it.
  // The member keeps the store alive (the peer endpoint may still be asked
  // for its blocks after its owner, e.g. a gateway bucket, let it go).
  void Attach(const std::shared_ptr<cache::CachedStore>& store);
  CacheGroup& group() { return *group_; }
  PeerService& service() { return *service_; }
  std::string address() const { return server_->address(); }

 private:
  GroupMember() = default;
  std::unique_ptr<PeerService> service_;
  std::unique_ptr<PeerServer> server_;
  std::shared_ptr<CacheGroup> group_;
  std::unique_ptr<EtcdMembership> etcd_;
  Mutex attached_mu_;
  std::vector<std::shared_ptr<cache::CachedStore>> attached_ GUARDED_BY(attached_mu_);  // outlive server_
};

// The members of the group at `url` now, without joining: a static list as
// given, or etcd's records read once, those signed with `secret` only.
Result<std::vector<Member>> ListGroupMembers(const std::string& url, const std::string& secret,
                                             std::chrono::milliseconds deadline = std::chrono::milliseconds(2000));

// A member's kPeerStatusPath JSON (the request signed with `secret`, the
// answer's MAC verified). Unavailable when it does not answer within `deadline`.
Result<std::string> FetchMemberStatus(const Member& member, const std::string& secret,
                                      std::chrono::milliseconds deadline);

// The secret from `file` (trailing newline dropped; refused when group or
// others may read it) or, with no file, the STRATA_GROUP_SECRET environment
// variable. InvalidArgument when neither, or when it is shorter than
// kMinSecretBytes; PermissionDenied for a loose file mode.
Result<std::string> ReadGroupSecret(const std::string& file);

}  // namespace strata::group
