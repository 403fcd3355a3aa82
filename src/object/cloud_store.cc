#include "object/cloud_store.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/random.h"
#include "base/units.h"
#include "object/store_wrapper.h"

namespace strata::object {
namespace {

class CloudStore : public StoreWrapper {
 public:
  CloudStore(ObjectStorePtr inner, CloudProfile profile, Clock& clock)
      : StoreWrapper(std::move(inner)), profile_(profile), clock_(clock), random_(profile.seed) {}

  Result<GetResult> Get(std::string_view key, const GetOptions& options) override {
    auto result = base_->Get(key, options);
    Pay(result.ok() ? result->data.size() : 0);
    return result;
  }
  Result<ObjectInfo> Head(std::string_view key) override {
    Pay(0);
    return base_->Head(key);
  }
  Result<PartRange> GetPartRange(std::string_view key, std::string_view etag, int part_number) override {
    Pay(0);  // a HEAD
    return base_->GetPartRange(key, etag, part_number);
  }
  Result<ListResult> List(const ListOptions& options) override {
    Pay(0);
    return base_->List(options);
  }
  Result<ObjectInfo> Put(std::string_view key, Buffer data, const PutOptions& options) override {
    Pay(data.size());
    return base_->Put(key, std::move(data), options);
  }
  Status Delete(std::string_view key) override {
    Pay(0);
    return base_->Delete(key);
  }
  Result<std::string> CreateMultipartUpload(std::string_view key, const PutOptions& options) override {
    Pay(0);
    return base_->CreateMultipartUpload(key, options);
  }
  Result<std::string> UploadPart(std::string_view key, std::string_view upload_id, int part_number, Buffer data,
                                 const PartOptions& options) override {
    Pay(data.size());
    return base_->UploadPart(key, upload_id, part_number, std::move(data), options);
  }
  Result<ObjectInfo> CompleteMultipartUpload(std::string_view key, std::string_view upload_id,
                                             const std::vector<CompletedPart>& parts,
                                             const CompleteOptions& options) override {
    Pay(0);
    return base_->CompleteMultipartUpload(key, upload_id, parts, options);
  }
  Status AbortMultipartUpload(std::string_view key, std::string_view upload_id) override {
    Pay(0);
    return base_->AbortMultipartUpload(key, upload_id);
  }
  Result<std::vector<PartInfo>> ListParts(std::string_view key, std::string_view upload_id) override {
    Pay(0);
    return base_->ListParts(key, upload_id);
  }
  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view prefix) override {
    Pay(0);
    return base_->ListMultipartUploads(prefix);
  }
  // Server-side: the bytes never cross the emulated network.
  Result<ObjectInfo> Copy(std::string_view src_key, std::string_view dst_key, const CopyOptions& options) override {
    Pay(0);
    return base_->Copy(src_key, dst_key, options);
  }
  Status ReadRangeTo(std::string_view key, std::string_view etag, uint64_t offset, uint64_t length,
                     const RangeConsumer& consume) override {
    if (!base_->Capabilities().range_streaming) return ObjectStore::ReadRangeTo(key, etag, offset, length, consume);
    Status st = base_->ReadRangeTo(key, etag, offset, length, consume);
    Pay(st.ok() ? length : 0);
    return st;
  }
  std::string Url() const override {
    std::string url = base_->Url();
    url += url.find('?') == std::string::npos ? '?' : '&';
    return url + "emulate=" + FormatCloudProfile(profile_);
  }

 private:
  void Pay(uint64_t bytes) {
    Duration d = CloudDelay(profile_, bytes);
    if (profile_.jitter.count() > 0) d += Duration(random_.Uniform(profile_.jitter.count()));
    if (d.count() > 0) clock_.SleepFor(d);
  }

  const CloudProfile profile_;
  Clock& clock_;
  Random random_;
};

Status BadSpec(std::string_view spec, const std::string& why) {
  return InvalidArgumentError("bad cloud profile '" + std::string(spec) + "': " + why +
                              " (a spec reads e.g. ttfb=30ms,bw=25MB/s,jitter=5ms)");
}

// An emulated first byte (or jitter) past a minute is no cloud bucket, and a
// unit is required: "ttfb=30" could mean 30 ms as well as 30 s.
constexpr DurationRules kLatencyRules{.unit_required = true, .max = std::chrono::minutes(1)};
// "bw=" names a rate, so "bw=2GB" reads as 2GB/s.
constexpr RateRules kBandwidthRules{.allow_unlimited = true, .per_second_implied = true, .max = 1e15};

Result<Duration> ParseLatency(std::string_view spec, std::string_view s) {
  auto d = ParseDuration(s, kLatencyRules);
  if (!d.ok()) return BadSpec(spec, d.status().message());
  return *d;
}

Result<double> ParseBandwidth(std::string_view spec, std::string_view s) {
  auto r = ParseRate(s, kBandwidthRules);
  if (!r.ok()) return BadSpec(spec, r.status().message());
  return std::isinf(*r) ? 0.0 : *r;  // the profile's 0: unlimited
}

}  // namespace

Duration CloudDelay(const CloudProfile& profile, uint64_t bytes) {
  Duration d = profile.first_byte;
  if (bytes > 0 && profile.bytes_per_second_per_connection > 0) {
    double ns = static_cast<double>(bytes) * 1e9 / profile.bytes_per_second_per_connection;
    d += Duration(static_cast<int64_t>(std::min(ns, 1e18)));  // capped so absurd inputs cannot overflow
  }
  return d;
}

ObjectStorePtr EmulateCloud(ObjectStorePtr inner, CloudProfile profile, Clock& clock) {
  return std::make_shared<CloudStore>(std::move(inner), profile, clock);
}

ObjectStorePtr EmulateCloud(ObjectStorePtr inner, CloudProfile profile) {
  return EmulateCloud(std::move(inner), profile, RealClock());
}

Result<CloudProfile> ParseCloudProfile(std::string_view spec) {
  CloudProfile profile;
  if (spec.size() > 1024) return BadSpec(spec.substr(0, 64), "longer than 1024 bytes");
  std::string_view rest = spec;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return BadSpec(spec, "'" + std::string(item) + "' is not name=value");
    std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    if (name == "ttfb" || name == "first_byte" || name == "latency") {
      STRATA_ASSIGN_OR_RETURN(profile.first_byte, ParseLatency(spec, value));
    } else if (name == "jitter") {
      STRATA_ASSIGN_OR_RETURN(profile.jitter, ParseLatency(spec, value));
    } else if (name == "bw" || name == "bandwidth") {
      STRATA_ASSIGN_OR_RETURN(profile.bytes_per_second_per_connection, ParseBandwidth(spec, value));
    } else if (name == "seed") {
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), profile.seed);
      if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
        return BadSpec(spec, "seed '" + std::string(value) + "' is not an unsigned integer");
      }
    } else {
      return BadSpec(spec, "unknown setting '" + std::string(name) + "' (known: ttfb, bw, jitter, seed)");
    }
  }
  return profile;
}

std::string FormatCloudProfile(const CloudProfile& profile) {
  std::string out = "ttfb=" + FormatDurationExact(profile.first_byte) + ",bw=";
  if (profile.bytes_per_second_per_connection <= 0) {
    out += "unlimited";
  } else {
    // Whole bytes per second: fractions of a byte are noise, and this keeps
    // the text free of exponents the parser does not accept.
    out += std::to_string(static_cast<uint64_t>(std::llround(profile.bytes_per_second_per_connection))) + "B/s";
  }
  if (profile.jitter.count() > 0) out += ",jitter=" + FormatDurationExact(profile.jitter);
  if (profile.seed != 1) out += ",seed=" + std::to_string(profile.seed);
  return out;
}

}  // namespace strata::object
