#include "dataset/object_sink.h"

#include <algorithm>

namespace strata::dataset {

ObjectSink::ObjectSink(object::ObjectStore& store, std::string key, SinkOptions options)
    : store_(store), key_(std::move(key)), options_(options) {
  options_.part_size = std::max<uint64_t>(options_.part_size, store_.MinPartSize());
  options_.max_inflight = std::max(options_.max_inflight, 1);
}

ObjectSink::~ObjectSink() {
  if (!closed_) Abort();
}

void ObjectSink::Abort() {
  for (auto& [n, f] : inflight_) f.wait();
  inflight_.clear();
  if (!upload_id_.empty()) store_.AbortMultipartUpload(key_, upload_id_).IgnoreError();
  upload_id_.clear();
  closed_ = true;
}

Status ObjectSink::Append(Buffer data) {
  if (closed_) return InternalError("append to a closed sink for " + key_);
  if (!error_.ok()) return error_;
  if (data.empty()) return Status::Ok();
  hasher_.Update(data.data(), data.size());
  crc32c_ = Crc32c(data.data(), data.size(), crc32c_);
  size_ += data.size();
  // Cut exactly at part boundaries so every part but the last has part_size bytes.
  while (!data.empty()) {
    uint64_t take = std::min<uint64_t>(data.size(), options_.part_size - pending_bytes_);
    pending_.push_back(data.Slice(0, take));
    pending_bytes_ += take;
    data = data.Slice(take);
    if (pending_bytes_ == options_.part_size) {
      error_ = Flush(false);
      if (!error_.ok()) return error_;
    }
  }
  return Status::Ok();
}

Status ObjectSink::Reap(size_t keep) {
  while (inflight_.size() > keep) {
    auto& [number, future] = inflight_.front();
    Result<std::string> etag = future.get();
    if (!etag.ok()) return etag.status().WithContext("uploading part " + std::to_string(number) + " of " + key_);
    parts_.push_back({number, *etag});
    inflight_.erase(inflight_.begin());
  }
  return Status::Ok();
}

Status ObjectSink::Flush(bool final_part) {
  if (pending_bytes_ == 0 && !final_part) return Status::Ok();
  if (upload_id_.empty()) {
    auto id = store_.CreateMultipartUpload(key_);
    ++requests_;
    if (!id.ok()) return id.status().WithContext("starting the upload of " + key_);
    upload_id_ = *id;
  }
  Buffer part = Concat(pending_);
  pending_.clear();
  pending_bytes_ = 0;
  int number = static_cast<int>(parts_.size() + inflight_.size() + 1);
  if (number > 10000) return InvalidArgumentError(key_ + ": more than 10000 parts; raise the part size");
  STRATA_RETURN_IF_ERROR(Reap(options_.max_inflight - 1));
  object::ObjectStore* store = &store_;
  std::string key = key_, id = upload_id_;
  inflight_.emplace_back(number, std::async(std::launch::async, [store, key, id, number, part] {
                           return store->UploadPart(key, id, number, part);
                         }));
  ++requests_;
  return Status::Ok();
}

Result<WrittenObject> ObjectSink::Close() {
  if (closed_) return InternalError("sink for " + key_ + " closed twice");
  auto fail = [&](Status s) {
    Abort();
    return s;
  };
  if (!error_.ok()) return fail(error_);
  WrittenObject out;
  out.key = key_;
  out.size = size_;
  out.sha256 = ToHex(hasher_.Finish());
  out.crc32c = Crc32cHex(crc32c_);
  if (upload_id_.empty()) {
    auto put = store_.Put(key_, Concat(pending_));
    ++requests_;
    if (!put.ok()) return fail(put.status().WithContext("writing " + key_));
    out.etag = put->etag;
  } else {
    if (pending_bytes_ > 0) {
      Status s = Flush(true);
      if (!s.ok()) return fail(s);
    }
    Status s = Reap(0);
    if (!s.ok()) return fail(s);
    std::sort(parts_.begin(), parts_.end(), [](auto& a, auto& b) { return a.part_number < b.part_number; });
    auto done = store_.CompleteMultipartUpload(key_, upload_id_, parts_);
    ++requests_;
    if (!done.ok()) return fail(done.status().WithContext("completing the upload of " + key_));
    out.etag = done->etag;
    upload_id_.clear();
  }
  closed_ = true;
  out.requests = requests_;
  return out;
}

}  // namespace strata::dataset
