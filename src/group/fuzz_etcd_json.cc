// libFuzzer target: what the cache group reads from etcd, past the records'
// authentication. The input is parsed as each kind of etcd answer (range,
// watch message, lease grant, keep-alive, auth token), fed to the watch
// stream's splitter in two pieces (split where its first byte says), and its
// lines become the id and address of a member record that is signed here and
// placed in a range answer: that record must come back out, verified, iff
// its id and address are valid, and every other entry must be refused. A
// published record (the scheduler extender's) signed here with the input as its
// payload must come back whole, and under another id not at all.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "base/hash.h"
#include "group/address.h"
#include "group/etcd_json.h"
#include "group/member_record.h"

namespace {

using namespace strata;
using namespace strata::group;

constexpr char kSecret[] = "fuzz-etcd-json-secret-0123456789abcd";
const WallTime kNow{std::chrono::seconds(1700000000)};

std::string B64(const std::string& s) { return Base64Encode(s.data(), s.size()); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);  // exact-size heap copy for ASan
  auto range = ParseEtcdRange(in);
  if (range.ok()) {
    for (const auto& kv : range->kvs) {
      // Nobody here has the secret's MAC for arbitrary input: nothing verifies.
      if (ParseMemberRecord(kSecret, "g", kv.key, kv.value, kNow, std::chrono::seconds(60)).ok()) std::abort();
      if (ParsePublishedRecord(kSecret, "g", kv.key, kv.value, kNow, std::chrono::seconds(60)).ok()) std::abort();
    }
  }
  (void)ParseEtcdWatchMessage(in);
  (void)ParseEtcdLeaseGrant(in);
  (void)ParseEtcdKeepAliveTtl(in);
  if (auto token = ParseEtcdAuthToken(in); token.ok()) {
    for (char c : *token) {
      if (c <= 0x20 || c >= 0x7f) std::abort();  // it goes into a header
    }
  }
  JsonObjectSplitter splitter;
  const size_t cut = size ? data[0] % (size + 1) : 0;
  auto each = [](std::string_view m) {
    if (m.empty() || m.front() != '{' || m.back() != '}') std::abort();  // whole objects only
    (void)ParseEtcdWatchMessage(m);
    return Status::Ok();
  };
  if (splitter.Feed(std::string_view(in).substr(0, cut), each).ok()) {
    (void)splitter.Feed(std::string_view(in).substr(cut), each);
  }

  // A record signed with the group secret, its id and address from the input.
  const size_t nl = in.find('\n');
  MemberRecord r{in.substr(0, nl), nl == std::string::npos ? "" : in.substr(nl + 1), 1700000000, 1700000090};
  const std::string prefix = "/strata/groups/g/members/";
  nlohmann::json kvs = nlohmann::json::array();
  kvs.push_back(
      {{"key", B64(prefix + r.id)}, {"value", B64(FormatMemberRecord(kSecret, "g", r))}, {"mod_revision", "3"}});
  kvs.push_back({{"key", B64(prefix + "x")}, {"value", B64(in)}});
  auto signed_range = ParseEtcdRange(nlohmann::json{{"header", {{"revision", "3"}}}, {"kvs", kvs}}.dump());
  if (!signed_range.ok() || signed_range->kvs.size() != 2) std::abort();
  int verified = 0;
  for (const auto& kv : signed_range->kvs) {
    if (!kv.key.starts_with(prefix)) std::abort();
    auto rec = ParseMemberRecord(kSecret, "g", kv.key.substr(prefix.size()), kv.value, kNow, std::chrono::seconds(60));
    if (rec.ok()) {
      ++verified;
      if (rec->address != r.address || rec->id != r.id) std::abort();
    }
  }
  const bool valid = !r.id.empty() && r.id.size() <= kMaxMemberIdLength && ParseHostPort(r.address).ok() &&
                     r.address.find(' ') == std::string::npos;
  if (verified != (valid ? 1 : 0)) std::abort();

  // A published record (the extender's input) with the input as its payload comes back whole.
  if (in.size() < (64 << 10) && !r.id.empty() && r.id.size() <= kMaxMemberIdLength) {
    const std::string published = FormatPublishedRecord(kSecret, "g", r.id, in, 1700000000, 1700000090);
    auto payload = ParsePublishedRecord(kSecret, "g", r.id, published, kNow, std::chrono::seconds(60));
    if (!payload.ok() || *payload != in) std::abort();
    if (ParsePublishedRecord(kSecret, "g", r.id + "x", published, kNow, std::chrono::seconds(60)).ok()) std::abort();
  }
  return 0;
}
