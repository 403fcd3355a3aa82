// A decorator that makes any store behave like a cloud bucket: each request
// pays a time to first byte (plus seeded jitter) and moves its body at a
// per-connection bandwidth (each request is one connection, so parallel
// requests get parallel bandwidth). Time passes through the given Clock, so
// tests with FakeClock(auto_advance) are instant and exact. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/clock.h"
#include "object/object_store.h"

namespace strata::object {

struct CloudProfile {
  Duration first_byte = std::chrono::milliseconds(30);
  double bytes_per_second_per_connection = 25e6;  // <= 0: unlimited
  Duration jitter = Duration(0);                  // uniform in [0, jitter) added per request
  uint64_t seed = 1;
};

// The wait one request moving `bytes` body bytes pays, before jitter.
Duration CloudDelay(const CloudProfile& profile, uint64_t bytes);

// Owns `inner`; `clock` must outlive the returned store (without it: RealClock()).
// Every operation (Get, Head, List, Put, Delete, multipart calls, Copy) pays
// first_byte; Get, Put and UploadPart also pay their body at the bandwidth.
ObjectStorePtr EmulateCloud(ObjectStorePtr inner, CloudProfile profile, Clock& clock);
ObjectStorePtr EmulateCloud(ObjectStorePtr inner, CloudProfile profile);

// Parses "ttfb=30ms,bw=25MB/s,jitter=5ms,seed=7" (any subset, any order;
// unset fields keep their defaults), in strata's one grammar (base/units.h).
// ttfb and jitter: a duration with its unit (ns to m), at most 1m. bw: a rate
// (25MB/s: MB is 10^6 bytes, MiB 2^20; 100Mbit/s; the "/s" may be left out),
// "unlimited" or 0 for no cap. InvalidArgument naming the spec otherwise.
Result<CloudProfile> ParseCloudProfile(std::string_view spec);

// The inverse of ParseCloudProfile (round-trips).
std::string FormatCloudProfile(const CloudProfile& profile);

}  // namespace strata::object
