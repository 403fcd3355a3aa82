#include "ckpt/upload_queue.h"

#include <algorithm>
#include <iterator>

namespace strata::ckpt {

size_t UploadQueue::NewerThan(int64_t step, const std::set<int64_t>& extra) const {
  std::set<int64_t> newer(remote_.upper_bound(step), remote_.end());
  for (auto it = queued_.upper_bound(step); it != queued_.end(); ++it) newer.insert(it->first);
  if (inflight_ && inflight_->step > step) newer.insert(inflight_->step);
  newer.insert(extra.upper_bound(step), extra.end());
  return newer.size();
}

bool UploadQueue::Superseded(int64_t step) const {
  return keep_remote_ > 0 && NewerThan(step) >= static_cast<size_t>(keep_remote_);
}

std::vector<UploadQueue::Entry> UploadQueue::DropSuperseded() {
  std::vector<Entry> dropped;
  if (keep_remote_ <= 0) return dropped;
  // A dropped step still counts for older ones: the newest keep_remote of
  // all these are never dropped, and they are newer than every dropped one.
  for (auto it = queued_.begin(); it != queued_.end();) {
    if (NewerThan(it->first) >= static_cast<size_t>(keep_remote_)) {
      if (it->first > newest_remote_) passed_[it->first] = it->second.bytes;
      dropped.push_back(std::move(it->second));
      it = queued_.erase(it);
    } else {
      ++it;
    }
  }
  superseded_ += dropped.size();
  return dropped;
}

bool UploadQueue::Fits(int64_t step, uint64_t bytes) const {
  // As if every admitted save and this one had committed (they are the newest steps).
  std::set<int64_t> coming{step};
  uint64_t total = bytes;
  for (const auto& [s, b] : reserved_) {
    coming.insert(s);
    total += b;
  }
  size_t count = coming.size() + passed_.size();
  for (const auto& [s, b] : passed_) total += b;
  if (inflight_) {
    ++count;
    total += inflight_->bytes;
  }
  for (const auto& [s, e] : queued_) {
    // One this save would supersede leaves the backlog only if the bucket is past it already.
    if (s < newest_remote_ && keep_remote_ > 0 && NewerThan(s, coming) >= static_cast<size_t>(keep_remote_)) continue;
    ++count;
    total += e.bytes;
  }
  if (count == 1) return true;
  return (max_steps_ == 0 || count <= max_steps_) && (max_bytes_ == 0 || total <= max_bytes_);
}

bool UploadQueue::HasRoomFor(uint64_t bytes) const {
  const TierStats now = Stats(WallTime{});
  if (now.pending_steps == 0) return true;
  return (max_steps_ == 0 || now.pending_steps + 1 <= max_steps_) &&
         (max_bytes_ == 0 || now.pending_bytes + bytes <= max_bytes_);
}

void UploadQueue::NoteSuperseded(int64_t step, uint64_t bytes) {
  if (step > newest_remote_) passed_[step] = bytes;
  ++superseded_;
}

void UploadQueue::Reserve(int64_t step, uint64_t bytes) { reserved_[step] = bytes; }

void UploadQueue::Unreserve(int64_t step) { reserved_.erase(step); }

void UploadQueue::NoteLocalCommit(int64_t step, WallTime at) {
  newest_local_ = std::max(newest_local_, step);
  if (step > newest_remote_) behind_.emplace(step, at);
}

std::vector<UploadQueue::Entry> UploadQueue::Enqueue(Entry entry) {
  reserved_.erase(entry.step);
  const int64_t step = entry.step;
  queued_[step] = std::move(entry);
  return DropSuperseded();
}

std::vector<UploadQueue::Entry> UploadQueue::NoteRemote(int64_t step) {
  remote_.insert(step);
  // Only the newest keep_remote count for superseding (one when keeping all).
  const size_t keep = static_cast<size_t>(std::max(keep_remote_, 1));
  while (remote_.size() > keep) remote_.erase(remote_.begin());
  if (step > newest_remote_) {
    newest_remote_ = step;
    behind_.erase(behind_.begin(), behind_.upper_bound(step));
    passed_.erase(passed_.begin(), passed_.upper_bound(step));
  }
  return DropSuperseded();
}

std::optional<UploadQueue::Entry> UploadQueue::Next() {
  if (queued_.empty() || inflight_) return std::nullopt;
  auto newest = std::prev(queued_.end());
  inflight_ = std::move(newest->second);
  queued_.erase(newest);
  return inflight_;
}

std::vector<UploadQueue::Entry> UploadQueue::Finish(int64_t step, bool uploaded) {
  if (inflight_ && inflight_->step == step) inflight_.reset();
  if (!uploaded) {
    ++failed_;
    passed_.clear();  // what it superseded no longer holds saves back: it may never land
    return {};
  }
  ++uploaded_;
  return NoteRemote(step);
}

std::vector<UploadQueue::Entry> UploadQueue::TakeQueued() {
  std::vector<Entry> all;
  for (auto& [s, e] : queued_) all.push_back(std::move(e));
  queued_.clear();
  return all;
}

std::set<int64_t> UploadQueue::NewerThanQueued() const {
  std::set<int64_t> steps;
  const int64_t newest = NewestQueued();
  for (const auto& [s, b] : reserved_) {
    if (s > newest) steps.insert(s);
  }
  return steps;
}

std::optional<int64_t> UploadQueue::uploading() const {
  if (!inflight_) return std::nullopt;
  return inflight_->step;
}

std::set<int64_t> UploadQueue::Pending() const {
  std::set<int64_t> steps;
  for (const auto& [s, e] : queued_) steps.insert(s);
  for (const auto& [s, b] : reserved_) steps.insert(s);
  for (const auto& [s, b] : passed_) steps.insert(s);
  if (inflight_) steps.insert(inflight_->step);
  return steps;
}

TierStats UploadQueue::Stats(WallTime now) const {
  TierStats t;
  t.newest_local = newest_local_;
  t.newest_remote = newest_remote_;
  t.lag_steps = newest_local_ > newest_remote_ ? newest_local_ - newest_remote_ : 0;
  t.lag_checkpoints = behind_.size();
  if (!behind_.empty() && now > behind_.begin()->second) t.lag = now - behind_.begin()->second;
  for (const auto& [s, e] : queued_) t.pending_bytes += e.bytes;
  for (const auto& [s, b] : reserved_) t.pending_bytes += b;
  for (const auto& [s, b] : passed_) t.pending_bytes += b;
  t.pending_steps = queued_.size() + reserved_.size() + passed_.size();
  if (inflight_) {
    ++t.pending_steps;
    t.pending_bytes += inflight_->bytes;
    t.uploading = inflight_->step;
  }
  t.uploaded = uploaded_;
  t.superseded = superseded_;
  t.failed = failed_;
  return t;
}

}  // namespace strata::ckpt
