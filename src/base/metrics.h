// Metrics: counters, gauges and histograms in a registry that renders the
// Prometheus text format. Metric objects are created once (registration is
// thread-safe and returns a stable reference) and updated lock-free.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace strata {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t d) { value_.fetch_add(d, std::memory_order_relaxed); }
  int64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Cumulative buckets with fixed upper bounds (+Inf implied).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    uint64_t count = 0;
    double sum = 0;
    double Quantile(double q) const;  // linear interpolation within a bucket
  };
  Snapshot Snap() const;

  // Exponential bounds from `start`, multiplied by `factor`, `count` of them.
  static std::vector<double> ExponentialBounds(double start, double factor, int count);
  // Latency bounds in seconds, 100 us .. ~100 s.
  static std::vector<double> LatencyBounds();

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micros_{0};  // sum kept in millionths to stay atomic
};

class MetricsRegistry {
 public:
  // The same (name, labels) always returns the same object.
  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& GetHistogram(const std::string& name, const std::string& help, const Labels& labels = {},
                          std::vector<double> bounds = Histogram::LatencyBounds());
  // Prometheus text exposition format 0.0.4.
  std::string RenderPrometheus() const;

  static MetricsRegistry& Global();

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Family {
    Kind kind;
    std::string help;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& FamilyFor(const std::string& name, Kind kind, const std::string& help) REQUIRES(mu_);
  mutable Mutex mu_;
  std::map<std::string, Family> families_ GUARDED_BY(mu_);
};

}  // namespace strata
