// Randomness behind an interface so tests are reproducible (seeded).
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

namespace strata {

// Thread-safe seeded generator.
class Random {
 public:
  explicit Random(uint64_t seed = std::random_device{}()) : engine_(seed) {}
  uint64_t Next() {
    std::lock_guard lock(mu_);
    return engine_();
  }
  // Uniform in [0, n); n > 0.
  uint64_t Uniform(uint64_t n) { return n ? Next() % n : 0; }
  // Uniform in [0, 1).
  double UniformDouble() { return (Next() >> 11) * (1.0 / 9007199254740992.0); }
  bool Bernoulli(double p) { return UniformDouble() < p; }

 private:
  std::mutex mu_;
  std::mt19937_64 engine_;
};

}  // namespace strata
