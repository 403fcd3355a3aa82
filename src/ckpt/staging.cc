#include "ckpt/staging.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "base/executor.h"
#include "base/sanitizers.h"
#include "ckpt/writer.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace strata::ckpt {
namespace {

constexpr size_t kHugePage = 2u << 20;
constexpr size_t kPrefaultStep = 64u << 20;
constexpr uint64_t kCopyChunk = 4ull << 20;    // work unit shared between copy threads
constexpr uint64_t kStreamMin = 256ull << 10;  // below this a plain memcpy is as good

#if defined(__x86_64__)
__attribute__((target("avx2"))) void StreamCopyAvx2(uint8_t* dst, const uint8_t* src, uint64_t n) {
  // Align the destination for the streaming stores; loads may be unaligned.
  const uint64_t head = std::min<uint64_t>(n, (32 - reinterpret_cast<uintptr_t>(dst) % 32) % 32);
  std::memcpy(dst, src, head);
  dst += head, src += head, n -= head;
  uint64_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + 96), d);
  }
  _mm_sfence();  // streaming stores are weakly ordered: publish them before the persist thread reads
  std::memcpy(dst + i, src + i, n - i);
}
#endif

void CopyChunk(uint8_t* dst, const void* src, uint64_t n) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && n >= kStreamMin) return StreamCopyAvx2(dst, static_cast<const uint8_t*>(src), n);
#endif
  std::memcpy(dst, src, n);
}

}  // namespace

// ---- StagingRegion ----

Result<StagingRegionPtr> StagingRegion::Map(size_t capacity) {
  capacity = std::max(kHugePage, (capacity + kHugePage - 1) / kHugePage * kHugePage);
  const size_t mapped = capacity + kHugePage;  // room to align the start to 2 MiB
  void* base = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    return Status(
        errno == ENOMEM ? Code::kNoSpace : Code::kIOError,
        "mapping " + std::to_string(capacity >> 20) + " MiB of checkpoint staging memory: " + std::strerror(errno));
  }
  MarkMapped(base, mapped);
  auto* data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHugePage - 1) & ~(kHugePage - 1));
  // Huge pages: 512x fewer faults and TLB misses; ignored where THP is off.
  ::madvise(data, capacity, MADV_HUGEPAGE);
  return StagingRegionPtr(new StagingRegion(base, mapped, data, capacity));
}

StagingRegion::~StagingRegion() { ::munmap(base_, mapped_); }

bool StagingRegion::Prefault(const std::atomic<bool>* stop) {
  bool populate = true;
  for (size_t off = 0; off < capacity_; off += kPrefaultStep) {
    if (stop && stop->load(std::memory_order_relaxed)) return false;
    const size_t n = std::min(kPrefaultStep, capacity_ - off);
    if (populate && ::madvise(data_ + off, n, MADV_POPULATE_WRITE) == 0) continue;
    populate = false;  // older kernel: touch one byte per page
    for (size_t p = 0; p < n; p += 4096) static_cast<volatile uint8_t*>(data_)[off + p] = 0;
  }
  return true;
}

// ---- StagingPool ----

StagingPool::~StagingPool() {
  stop_ = true;
  MutexLock lock(thread_mu_);
  if (prefault_thread_.joinable()) prefault_thread_.join();
}

void StagingPool::Prefault(size_t bytes) {
  if (bytes == 0) return;
  MutexLock thread_lock(thread_mu_);
  {
    MutexLock lock(mu_);
    if (prefaulting_ > 0) return;
    prefaulting_ = bytes;
    limit_ = std::max<uint64_t>(limit_, bytes + kHugePage);
  }
  if (prefault_thread_.joinable()) prefault_thread_.join();
  prefault_thread_ = std::thread([this, bytes] {
    // The thread's boundary: an exception is the pool's status, and waiters are released.
    Status st = RunGuarded("ckpt: prefaulting staging memory", [&]() -> Status {
      auto region = StagingRegion::Map(bytes);
      STRATA_RETURN_IF_ERROR(region.status());
      const bool complete = (*region)->Prefault(&stop_);
      MutexLock lock(mu_);
      if (complete) {
        pooled_ += (*region)->capacity();
        free_.push_back(std::move(*region));
      }
      return Status::Ok();
    });
    MutexLock lock(mu_);
    if (!st.ok()) prefault_status_ = st;
    prefaulting_ = 0;
    cv_.NotifyAll();
  });
}

Status StagingPool::WaitReady() {
  MutexLock lock(mu_);
  cv_.Wait(lock, [&]() REQUIRES(mu_) { return prefaulting_ == 0; });
  return prefault_status_;
}

Result<StagingRegionPtr> StagingPool::Take(size_t size, bool* cold) {
  *cold = false;
  {
    MutexLock lock(mu_);
    for (;;) {
      size_t best = free_.size();
      for (size_t i = 0; i < free_.size(); ++i) {
        const size_t cap = free_[i]->capacity();
        if (cap >= size && (best == free_.size() || cap < free_[best]->capacity())) best = i;
      }
      if (best != free_.size()) {
        StagingRegionPtr r = std::move(free_[best]);
        free_.erase(free_.begin() + best);
        pooled_ -= r->capacity();
        return r;
      }
      // A region being faulted in: finishing that is cheaper than faulting a new one.
      if (prefaulting_ < size) break;
      cv_.Wait(lock, [&]() REQUIRES(mu_) { return prefaulting_ == 0; });
    }
    // Regions too small for this save would only hold memory: drop them.
    std::erase_if(free_, [&](const StagingRegionPtr& r) REQUIRES(mu_) {
      if (r->capacity() >= size) return false;
      pooled_ -= r->capacity();
      return true;
    });
  }
  *cold = true;
  return StagingRegion::Map(size);
}

void StagingPool::Give(StagingRegionPtr region) {
  if (!region) return;
  MutexLock lock(mu_);
  if (pooled_ + region->capacity() > limit_) return;  // unmapped: the pool is full
  pooled_ += region->capacity();
  free_.push_back(std::move(region));
}

void StagingPool::SetLimit(uint64_t bytes) {
  MutexLock lock(mu_);
  limit_ = std::max(limit_, bytes);
}

// ---- StageCopy ----

void StageCopy(const std::vector<CopyTask>& tasks, size_t threads) {
  std::vector<CopyTask> chunks;
  uint64_t total = 0;
  for (const auto& t : tasks) {
    total += t.n;
    for (uint64_t off = 0; off < t.n; off += kCopyChunk) {
      chunks.push_back({static_cast<const uint8_t*>(t.src) + off, t.dst + off, std::min(kCopyChunk, t.n - off)});
    }
  }
  // Small tensors first would leave a thread idle at the end: biggest first.
  std::stable_sort(chunks.begin(), chunks.end(), [](const CopyTask& a, const CopyTask& b) { return a.n > b.n; });
  threads = std::clamp<size_t>(threads, 1, std::max<size_t>(1, std::min<uint64_t>(chunks.size(), total / kCopyChunk)));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < chunks.size(); i = next++) CopyChunk(chunks[i].dst, chunks[i].src, chunks[i].n);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (auto& h : helpers) h.join();
}

Result<double> MemcpyBaselineSeconds(const std::vector<TensorView>& tensors, size_t threads) {
  constexpr uint64_t kChunk = 4ull << 20;
  uint64_t total = 0;
  for (const auto& t : tensors) total += t.size;
  STRATA_ASSIGN_OR_RETURN(StagingRegionPtr region, StagingRegion::Map(std::max<uint64_t>(total, 1)));
  region->Prefault();
  std::vector<CopyTask> chunks;
  uint64_t at = 0;
  for (const auto& t : tensors) {
    for (uint64_t off = 0; off < t.size; off += kChunk) {
      chunks.push_back(
          {static_cast<const uint8_t*>(t.data) + off, region->data() + at + off, std::min(kChunk, t.size - off)});
    }
    at += t.size;
  }
  double best = 1e9;
  for (int rep = 0; rep < 2; ++rep) {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < chunks.size(); i = next++) std::memcpy(chunks[i].dst, chunks[i].src, chunks[i].n);
    };
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
    work();
    for (auto& h : helpers) h.join();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace strata::ckpt
