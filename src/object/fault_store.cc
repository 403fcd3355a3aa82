#include "object/fault_store.h"

#include "object/list_util.h"

namespace strata::object {

FaultStore::FaultStore(ObjectStorePtr inner, FaultConfig config)
    : StoreWrapper(std::move(inner)),
      clock_(config.clock ? *config.clock : RealClock()),
      config_(config),
      random_(config.seed),
      stale_random_(config.seed * 0x9e3779b97f4a7c15ull + 0x5eed) {}

void FaultStore::FailNext(int n, Status status) {
  std::lock_guard lock(mu_);
  fail_next_ = n;
  fail_next_status_ = std::move(status);
}

void FaultStore::FailKey(std::string key_prefix, Status status, int times, FaultOp op) {
  std::lock_guard lock(mu_);
  rules_.push_back({std::move(key_prefix), std::move(status), times, op});
}

void FaultStore::ClearRules() {
  std::lock_guard lock(mu_);
  rules_.clear();
  fail_next_ = 0;
}

void FaultStore::SetConfig(FaultConfig config) {
  std::lock_guard lock(mu_);
  config_ = config;
}

Status FaultStore::KeepVersion(std::string_view key) {
  STRATA_ASSIGN_OR_RETURN(GetResult current, base_->Get(key, GetOptions{}));
  std::lock_guard lock(mu_);
  old_[std::string(key)] = OldVersion{std::move(current.info), std::move(current.data)};
  return Status::Ok();
}

void FaultStore::ForgetVersions() {
  std::lock_guard lock(mu_);
  old_.clear();
}

void FaultStore::KeepReplaced(std::string_view key) {
  {
    std::lock_guard lock(mu_);
    if (config_.stale_rate <= 0) return;
  }
  KeepVersion(key).IgnoreError();  // nothing there yet: nothing older to answer with
}

std::optional<FaultStore::OldVersion> FaultStore::DrawStale(std::string_view key) {
  std::lock_guard lock(mu_);
  if (config_.stale_rate <= 0) return std::nullopt;
  auto it = old_.find(key);
  if (it == old_.end() || !stale_random_.Bernoulli(config_.stale_rate)) return std::nullopt;
  ++counters_.stale;
  return it->second;
}

StoreFaultCounters FaultStore::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

Status FaultStore::Before(FaultOp op, std::string_view key, bool* truncate, bool* lose_reply) {
  *truncate = *lose_reply = false;
  Duration stall(0);
  Status injected;
  {
    std::lock_guard lock(mu_);
    ++counters_.requests;
    if (fail_next_ > 0) {
      --fail_next_;
      ++counters_.scripted;
      return fail_next_status_;
    }
    for (auto it = rules_.begin(); it != rules_.end(); ++it) {
      if ((it->op != FaultOp::kAny && it->op != op) || key.substr(0, it->prefix.size()) != it->prefix) continue;
      if (it->remaining == 0) continue;
      if (it->remaining > 0) --it->remaining;
      ++counters_.scripted;
      return it->status;
    }
    // Every rate is drawn on every request so a seed gives the same sequence
    // whatever the rates are.
    bool error = random_.Bernoulli(config_.error_rate);
    bool throttle = random_.Bernoulli(config_.throttle_rate);
    bool reset = random_.Bernoulli(config_.reset_rate);
    bool trunc = random_.Bernoulli(config_.truncate_rate);
    bool lost = random_.Bernoulli(config_.lost_reply_rate);
    bool do_stall = random_.Bernoulli(config_.stall_rate);
    const std::string k(key);
    if (error) {
      ++counters_.errors;
      injected = UnavailableError("injected server error on '" + k + "'", "InternalError (fault injection)");
    } else if (throttle) {
      ++counters_.throttles;
      injected = ThrottledError("injected throttling on '" + k + "'", "SlowDown (fault injection)");
    } else if (reset) {
      ++counters_.resets;
      injected = UnavailableError("connection lost while requesting '" + k + "'", "connection reset by peer");
    } else if (trunc && op == FaultOp::kGet) {
      *truncate = true;
    } else if (lost &&
               (op == FaultOp::kPut || op == FaultOp::kDelete || op == FaultOp::kMultipart || op == FaultOp::kCopy)) {
      *lose_reply = true;
    }
    if (do_stall) {
      ++counters_.stalls;
      stall = config_.stall;
    }
  }
  if (stall.count() > 0) clock_.SleepFor(stall);
  return injected;
}

Status FaultStore::Truncated(std::string_view key) {
  std::lock_guard lock(mu_);
  ++counters_.truncations;
  return UnavailableError("the body of '" + std::string(key) + "' ended early", "truncated body");
}

Status FaultStore::LostReply(std::string_view key) {
  std::lock_guard lock(mu_);
  ++counters_.lost_replies;
  return UnavailableError("no reply for the request on '" + std::string(key) + "' (it may have been applied)",
                          "connection reset by peer");
}

// Runs `call` unless a fault fires first; applies post-call faults.
#define STRATA_FAULT_CALL(op, key, call)                           \
  bool truncate = false, lose_reply = false;                       \
  STRATA_RETURN_IF_ERROR(Before(op, key, &truncate, &lose_reply)); \
  auto result = (call);                                            \
  if (result.ok() && truncate) return Truncated(key);              \
  if (result.ok() && lose_reply) return LostReply(key);            \
  return result

Result<GetResult> FaultStore::Get(std::string_view key, const GetOptions& options) {
  bool truncate = false, lose_reply = false;
  STRATA_RETURN_IF_ERROR(Before(FaultOp::kGet, key, &truncate, &lose_reply));
  if (std::optional<OldVersion> old = DrawStale(key)) {
    // The replica's own version decides the conditions and the range.
    STRATA_RETURN_IF_ERROR(CheckGetConditions(options, old->info));
    uint64_t begin = 0, end = 0;
    STRATA_RETURN_IF_ERROR(
        ResolveRange(options.range, old->info.size, &begin, &end).WithContext("get '" + std::string(key) + "'"));
    GetResult result;
    result.info = old->info;
    result.offset = begin;
    result.data = old->data.Slice(begin, end - begin);
    return result;
  }
  auto result = base_->Get(key, options);
  if (result.ok() && truncate) return Truncated(key);
  return result;
}
Result<ObjectInfo> FaultStore::Head(std::string_view key) {
  bool truncate = false, lose_reply = false;
  STRATA_RETURN_IF_ERROR(Before(FaultOp::kHead, key, &truncate, &lose_reply));
  if (std::optional<OldVersion> old = DrawStale(key)) return old->info;
  return base_->Head(key);
}
Result<ListResult> FaultStore::List(const ListOptions& options) {
  STRATA_FAULT_CALL(FaultOp::kList, options.prefix, base_->List(options));
}
Result<ObjectInfo> FaultStore::Put(std::string_view key, Buffer data, const PutOptions& options) {
  KeepReplaced(key);
  STRATA_FAULT_CALL(FaultOp::kPut, key, base_->Put(key, std::move(data), options));
}
Status FaultStore::Delete(std::string_view key) {
  KeepReplaced(key);
  STRATA_FAULT_CALL(FaultOp::kDelete, key, base_->Delete(key));
}
Result<std::string> FaultStore::CreateMultipartUpload(std::string_view key, const PutOptions& options) {
  STRATA_FAULT_CALL(FaultOp::kMultipart, key, base_->CreateMultipartUpload(key, options));
}
Result<std::string> FaultStore::UploadPart(std::string_view key, std::string_view upload_id, int part_number,
                                           Buffer data, const PartOptions& options) {
  STRATA_FAULT_CALL(FaultOp::kMultipart, key, base_->UploadPart(key, upload_id, part_number, std::move(data), options));
}
Result<ObjectInfo> FaultStore::CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                                       const std::vector<CompletedPart>& parts,
                                                       const CompleteOptions& options) {
  KeepReplaced(key);
  STRATA_FAULT_CALL(FaultOp::kMultipart, key, base_->CompleteMultipartUpload(key, upload_id, parts, options));
}
Status FaultStore::AbortMultipartUpload(std::string_view key, std::string_view upload_id) {
  STRATA_FAULT_CALL(FaultOp::kMultipart, key, base_->AbortMultipartUpload(key, upload_id));
}
Result<std::vector<PartInfo>> FaultStore::ListParts(std::string_view key, std::string_view upload_id) {
  STRATA_FAULT_CALL(FaultOp::kMultipart, key, base_->ListParts(key, upload_id));
}
Result<ObjectInfo> FaultStore::Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) {
  KeepReplaced(dst_key);
  STRATA_FAULT_CALL(FaultOp::kCopy, dst_key, base_->Copy(src_key, dst_key, options));
}

Status FaultStore::ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                               const RangeConsumer& consume) {
  // A base that does not stream is read through Get, which injects the faults.
  if (!base_->Capabilities().range_streaming) return ObjectStore::ReadRangeTo(key, etag, offset, length, consume);
  bool truncate = false, lose_reply = false;
  STRATA_RETURN_IF_ERROR(Before(FaultOp::kGet, key, &truncate, &lose_reply));
  if (std::optional<OldVersion> old = DrawStale(key)) {
    if (!etag.empty() && etag != old->info.etag) {
      return PreconditionFailedError("'" + std::string(key) + "' is at ETag " + old->info.etag + ", not " +
                                     std::string(etag));
    }
    uint64_t begin = 0, end = 0;
    STRATA_RETURN_IF_ERROR(ResolveRange(ByteRange::Of(offset, length), old->info.size, &begin, &end));
    if (end - begin != length) {  // as ObjectStore::ReadRangeTo says of a short range
      return UnavailableError("range " + std::to_string(offset) + "+" + std::to_string(length) + " of '" +
                              std::string(key) + "' came back as " + std::to_string(begin) + "+" +
                              std::to_string(end - begin));
    }
    return consume(begin, old->data.data() + begin, end - begin);
  }
  Status result = base_->ReadRangeTo(key, etag, offset, length, consume);
  if (result.ok() && truncate) return Truncated(key);
  return result;
}

#undef STRATA_FAULT_CALL

}  // namespace strata::object
