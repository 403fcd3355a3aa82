#include "base/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace strata {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  std::sort(bounds_.begin(), bounds_.end());
  buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i] = 0;
}

void Histogram::Observe(double value) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  if (value > 0) sum_micros_.fetch_add(static_cast<uint64_t>(std::llround(value * 1e6)), std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Snap() const {
  Snapshot s;
  s.bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_micros_.load(std::memory_order_relaxed) / 1e6;
  return s;
}

double Histogram::Snapshot::Quantile(double q) const {
  if (count == 0) return 0;
  double rank = std::clamp(q, 0.0, 1.0) * count;
  double lower = 0;
  uint64_t below = 0;
  for (size_t i = 0; i < cumulative.size(); ++i) {
    // Skip empty buckets so q=0 lands in the first bucket that holds a value.
    if (cumulative[i] >= rank && cumulative[i] > below) {
      if (i >= bounds.size()) return bounds.empty() ? 0 : bounds.back();
      uint64_t in_bucket = cumulative[i] - below;
      double frac = in_bucket ? (rank - below) / in_bucket : 1.0;
      return lower + (bounds[i] - lower) * frac;
    }
    below = cumulative[i];
    if (i < bounds.size()) lower = bounds[i];
  }
  return bounds.empty() ? 0 : bounds.back();
}

std::vector<double> Histogram::ExponentialBounds(double start, double factor, int count) {
  std::vector<double> b;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  return b;
}

std::vector<double> Histogram::LatencyBounds() { return ExponentialBounds(100e-6, 2.0, 21); }

MetricsRegistry::Family& MetricsRegistry::FamilyFor(const std::string& name, Kind kind, const std::string& help) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.kind = kind;
    it->second.help = help;
  }
  return it->second;
}

Counter& MetricsRegistry::GetCounter(const std::string& name, const std::string& help, const Labels& labels) {
  MutexLock lock(mu_);
  auto& slot = FamilyFor(name, Kind::kCounter, help).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::GetGauge(const std::string& name, const std::string& help, const Labels& labels) {
  MutexLock lock(mu_);
  auto& slot = FamilyFor(name, Kind::kGauge, help).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::GetHistogram(const std::string& name, const std::string& help, const Labels& labels,
                                         std::vector<double> bounds) {
  MutexLock lock(mu_);
  auto& slot = FamilyFor(name, Kind::kHistogram, help).histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(std::move(bounds));
  return *slot;
}

namespace {
std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string RenderLabels(const Labels& labels, const std::string& extra_key = {}, const std::string& extra_val = {}) {
  if (labels.empty() && extra_key.empty()) return {};
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k + "=\"" + Escape(v) + "\"";
  }
  if (!extra_key.empty()) {
    if (!first) out += ',';
    out += extra_key + "=\"" + extra_val + "\"";
  }
  return out + "}";
}

// Shortest text that parses back to the same double, so bounds render as
// le="0.1", not le="0.10000000000000001".
std::string FormatDouble(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

// HELP text escapes only backslash and newline (exposition format 0.0.4).
std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

std::string MetricsRegistry::RenderPrometheus() const {
  MutexLock lock(mu_);
  std::ostringstream os;
  for (const auto& [name, fam] : families_) {
    os << "# HELP " << name << ' ' << EscapeHelp(fam.help) << '\n';
    switch (fam.kind) {
      case Kind::kCounter:
        os << "# TYPE " << name << " counter\n";
        for (const auto& [labels, c] : fam.counters) os << name << RenderLabels(labels) << ' ' << c->Value() << '\n';
        break;
      case Kind::kGauge:
        os << "# TYPE " << name << " gauge\n";
        for (const auto& [labels, g] : fam.gauges) os << name << RenderLabels(labels) << ' ' << g->Value() << '\n';
        break;
      case Kind::kHistogram:
        os << "# TYPE " << name << " histogram\n";
        for (const auto& [labels, h] : fam.histograms) {
          auto s = h->Snap();
          for (size_t i = 0; i < s.cumulative.size(); ++i) {
            std::string le = i < s.bounds.size() ? FormatDouble(s.bounds[i]) : "+Inf";
            os << name << "_bucket" << RenderLabels(labels, "le", le) << ' ' << s.cumulative[i] << '\n';
          }
          os << name << "_sum" << RenderLabels(labels) << ' ' << FormatDouble(s.sum) << '\n';
          os << name << "_count" << RenderLabels(labels) << ' ' << s.count << '\n';
        }
        break;
    }
  }
  return os.str();
}

MetricsRegistry& MetricsRegistry::Global() {
  static MetricsRegistry* registry = new MetricsRegistry();  // never destroyed: used at exit
  return *registry;
}

}  // namespace strata
