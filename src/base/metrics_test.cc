#include "base/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace strata {
namespace {

TEST(CounterTest, Increments) {
  Counter c;
  EXPECT_EQ(c.Value(), 0u);
  c.Inc();
  c.Inc(41);
  EXPECT_EQ(c.Value(), 42u);
}

TEST(CounterTest, ConcurrentIncrementsAreNotLost) {
  Counter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.Inc();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.Value(), 40000u);
}

TEST(GaugeTest, SetAndAdd) {
  Gauge g;
  g.Set(10);
  g.Add(-15);
  EXPECT_EQ(g.Value(), -5);
  g.Set(7);
  EXPECT_EQ(g.Value(), 7);
}

TEST(HistogramTest, BucketsAreCumulativeAndInclusive) {
  Histogram h({4, 1, 2});  // unsorted on purpose
  h.Observe(0.5);
  h.Observe(1);  // on a bound: belongs to le="1"
  h.Observe(1.5);
  h.Observe(3);
  h.Observe(100);
  auto s = h.Snap();
  EXPECT_EQ(s.bounds, (std::vector<double>{1, 2, 4}));
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.sum, 106.0);
}

TEST(HistogramTest, Quantiles) {
  Histogram empty({1, 2});
  EXPECT_EQ(empty.Snap().Quantile(0.5), 0);

  Histogram h({1, 2, 4});
  for (int i = 0; i < 10; ++i) h.Observe(1.5);  // all in (1, 2]
  auto s = h.Snap();
  EXPECT_DOUBLE_EQ(s.Quantile(0.5), 1.5);
  EXPECT_DOUBLE_EQ(s.Quantile(1.0), 2.0);
  EXPECT_DOUBLE_EQ(s.Quantile(0.0), 1.0);  // the first bucket that holds values, not an empty one
  EXPECT_DOUBLE_EQ(s.Quantile(-1), 1.0);   // clamped
  EXPECT_DOUBLE_EQ(s.Quantile(2), 2.0);

  Histogram spread({10, 20, 30, 40});
  for (double v : {5, 15, 25, 35}) spread.Observe(v);
  auto t = spread.Snap();
  EXPECT_DOUBLE_EQ(t.Quantile(0.25), 10);
  EXPECT_DOUBLE_EQ(t.Quantile(0.5), 20);
  EXPECT_DOUBLE_EQ(t.Quantile(0.625), 25);
  spread.Observe(1000);  // beyond the last bound: reported as the last bound
  EXPECT_DOUBLE_EQ(spread.Snap().Quantile(0.99), 40);
}

TEST(HistogramTest, BoundsHelpers) {
  EXPECT_EQ(Histogram::ExponentialBounds(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  auto lat = Histogram::LatencyBounds();
  ASSERT_EQ(lat.size(), 21u);
  EXPECT_DOUBLE_EQ(lat.front(), 100e-6);
  EXPECT_GT(lat.back(), 100);
}

TEST(MetricsRegistryTest, SameNameAndLabelsSameObject) {
  MetricsRegistry r;
  Counter& a = r.GetCounter("x_total", "X.", {{"op", "get"}});
  Counter& b = r.GetCounter("x_total", "X.", {{"op", "get"}});
  Counter& c = r.GetCounter("x_total", "X.", {{"op", "put"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
  EXPECT_EQ(&r.GetGauge("g", "G."), &r.GetGauge("g", "G."));
  EXPECT_EQ(&r.GetHistogram("h", "H."), &r.GetHistogram("h", "H."));
  EXPECT_EQ(&MetricsRegistry::Global(), &MetricsRegistry::Global());
}

TEST(MetricsRegistryTest, RendersPrometheusTextExactly) {
  MetricsRegistry r;
  r.GetCounter("strata_requests_total", "Requests served.", {{"op", "get"}}).Inc(3);
  r.GetCounter("strata_requests_total", "Requests served.", {{"op", "put"}}).Inc();
  Gauge& g = r.GetGauge("strata_inflight", "Requests in flight.");
  g.Set(5);
  g.Add(-2);
  Histogram& h = r.GetHistogram("strata_latency_seconds", "Latency.", {{"op", "get"}}, {0.1, 0.5, 1});
  for (double v : {0.05, 0.3, 0.3, 2.0}) h.Observe(v);

  const std::string expected =
      "# HELP strata_inflight Requests in flight.\n"
      "# TYPE strata_inflight gauge\n"
      "strata_inflight 3\n"
      "# HELP strata_latency_seconds Latency.\n"
      "# TYPE strata_latency_seconds histogram\n"
      "strata_latency_seconds_bucket{op=\"get\",le=\"0.1\"} 1\n"
      "strata_latency_seconds_bucket{op=\"get\",le=\"0.5\"} 3\n"
      "strata_latency_seconds_bucket{op=\"get\",le=\"1\"} 3\n"
      "strata_latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 4\n"
      "strata_latency_seconds_sum{op=\"get\"} 2.65\n"
      "strata_latency_seconds_count{op=\"get\"} 4\n"
      "# HELP strata_requests_total Requests served.\n"
      "# TYPE strata_requests_total counter\n"
      "strata_requests_total{op=\"get\"} 3\n"
      "strata_requests_total{op=\"put\"} 1\n";
  EXPECT_EQ(r.RenderPrometheus(), expected);
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndHelp) {
  MetricsRegistry r;
  r.GetCounter("c", "line one\nback\\slash", {{"path", "a\"b\\c\nd"}}).Inc(2);
  EXPECT_EQ(r.RenderPrometheus(),
            "# HELP c line one\\nback\\\\slash\n"
            "# TYPE c counter\n"
            "c{path=\"a\\\"b\\\\c\\nd\"} 2\n");
}

TEST(MetricsRegistryTest, EmptyRegistryRendersNothing) {
  MetricsRegistry r;
  EXPECT_EQ(r.RenderPrometheus(), "");
}

}  // namespace
}  // namespace strata
