// libFuzzer target: the cache group's peer protocol past its authentication.
// The first byte picks what the rest is:
//   0: a request target, signed here with the group secret (so parsing is
//      reached) and handled by a member serving one small mem:// object;
//   1: an answer (nonce, MAC, body on separate lines) checked against a
//      request, and a body sealed here that must verify once and never when
//      altered;
//   2: a member record (id, then the value) as etcd would hold it, and one
//      signed here with an address taken from the input;
//   3: a peer address.
// Anything accepted must round-trip; nothing may crash.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/clock.h"
#include "cache/cached_store.h"
#include "group/address.h"
#include "group/member_record.h"
#include "group/peer_protocol.h"
#include "group/peer_server.h"
#include "object/mem_store.h"

namespace {

using namespace strata;
using namespace strata::group;

constexpr char kSecret[] = "fuzz-peer-protocol-secret-0123456789";
const WallTime kNow{std::chrono::seconds(1700000000)};

std::string_view NextLine(std::string_view* in) {
  size_t nl = in->find('\n');
  std::string_view f = in->substr(0, nl);
  in->remove_prefix(nl == std::string_view::npos ? in->size() : nl + 1);
  return f;
}

struct Member {
  FakeClock clock;  // its wall clock reads kNow
  std::shared_ptr<cache::CachedStore> store;
  std::unique_ptr<PeerService> service;
  Member() {
    auto bucket = object::MakeMemStore("fuzz-peer");
    (void)bucket->Put("k", Buffer::FromString(std::string(10000, 'x')));
    cache::CacheOptions co;
    co.block_size = 4096;
    co.ram_bytes = 1 << 20;
    store = std::make_shared<cache::CachedStore>(bucket, cache::BlockCache::Open(co).value());
    PeerServerOptions po;
    po.secret = kSecret;
    po.clock = &clock;
    service = std::make_unique<PeerService>(po);
    service->AddStore(store.get());
  }
};

void Request(std::string_view target) {
  static Member* member = new Member();
  const std::string mac = SignPeerRequest(kSecret, "GET", target, 1700000000);
  PeerResponse r = member->service->Handle("GET", target, "1700000000", mac);
  if (r.status == 200 && !VerifyPeerAnswer(kSecret, mac, target, r.nonce, r.mac, r.body.view()).ok()) std::abort();
  if (r.status == 403) std::abort();  // it was signed
  auto parsed = ParseBlockTarget(target);
  if (parsed.ok()) {
    auto again = ParseBlockTarget(FormatBlockTarget(*parsed));
    if (!again.ok() || again->key != parsed->key || again->etag != parsed->etag || again->store != parsed->store ||
        again->index != parsed->index || again->block_size != parsed->block_size ||
        again->object_size != parsed->object_size) {
      std::abort();
    }
  }
  // Unsigned, or signed with another secret: always refused.
  if (member->service->Handle("GET", target, "1700000000", std::string(64, '0')).status != 403) std::abort();
}

void Answer(std::string_view in) {
  const std::string target = "/strata/peer/v1/status";
  const std::string request_mac = SignPeerRequest(kSecret, "GET", target, 1700000000);
  std::string_view nonce = NextLine(&in), mac = NextLine(&in);
  (void)VerifyPeerAnswer(kSecret, request_mac, target, nonce, mac, in);
  auto seal = SealPeerAnswer(kSecret, request_mac, target, in);
  if (!seal.ok() || !VerifyPeerAnswer(kSecret, request_mac, target, seal->nonce, seal->mac, in).ok()) std::abort();
  if (!in.empty()) {
    std::string altered(in);
    altered[altered.size() / 2] ^= 0x20;
    if (VerifyPeerAnswer(kSecret, request_mac, target, seal->nonce, seal->mac, altered).ok()) std::abort();
  }
}

void Record(std::string_view in) {
  std::string_view id = NextLine(&in);
  (void)ParseMemberRecord(kSecret, "g", id, in, kNow, std::chrono::seconds(60));
  MemberRecord r{std::string(id), std::string(NextLine(&in)), 1700000000, 1700000090};
  auto back =
      ParseMemberRecord(kSecret, "g", r.id, FormatMemberRecord(kSecret, "g", r), kNow, std::chrono::seconds(60));
  const bool valid = !r.id.empty() && r.id.size() <= kMaxMemberIdLength && ParseHostPort(r.address).ok() &&
                     r.address.find(' ') == std::string::npos;
  if (back.ok() != valid) std::abort();
  if (back.ok() && back->address != r.address) std::abort();
}

void Address(std::string_view in) {
  auto hp = ParseHostPort(in, true);
  if (!hp.ok()) return;
  auto again = ParseHostPort(FormatHostPort(*hp), true);
  if (!again.ok() || again->host != hp->host || again->port != hp->port) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string copy(reinterpret_cast<const char*>(data) + 1, size - 1);  // exact-size heap copy for ASan
  switch (data[0] % 4) {
    case 0: Request(copy); break;
    case 1: Answer(copy); break;
    case 2: Record(copy); break;
    case 3: Address(copy); break;
  }
  return 0;
}
