#include "object/cloud_store.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/random.h"
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
                              " (expected e.g. ttfb=30ms,bw=25MB/s,jitter=5ms)");
}

// Splits "12.5ms" into 12.5 and "ms". Only plain decimals (no exponent/sign).
bool SplitNumber(std::string_view s, double* value, std::string_view* unit) {
  size_t i = 0;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
  if (i == 0) return false;
  std::string number(s.substr(0, i));
  char* end = nullptr;
  *value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(*value)) return false;
  *unit = s.substr(i);
  return true;
}

Result<Duration> ParseDuration(std::string_view spec, std::string_view s) {
  double v = 0;
  std::string_view unit;
  if (!SplitNumber(s, &v, &unit)) return BadSpec(spec, "'" + std::string(s) + "' is not a duration");
  double ns_per = 0;
  if (unit == "ns")
    ns_per = 1;
  else if (unit == "us")
    ns_per = 1e3;
  else if (unit == "ms")
    ns_per = 1e6;
  else if (unit == "s")
    ns_per = 1e9;
  else
    return BadSpec(spec, "duration '" + std::string(s) + "' needs a unit: ns, us, ms or s");
  double ns = v * ns_per;
  if (!(ns <= 1e15)) return BadSpec(spec, "duration '" + std::string(s) + "' is too long");
  return Duration(static_cast<int64_t>(std::llround(ns)));
}

Result<double> ParseBandwidth(std::string_view spec, std::string_view s) {
  if (s == "unlimited" || s == "inf") return 0.0;
  double v = 0;
  std::string_view unit;
  if (!SplitNumber(s, &v, &unit)) return BadSpec(spec, "'" + std::string(s) + "' is not a bandwidth");
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "/s") unit.remove_suffix(2);
  static const std::pair<std::string_view, double> kUnits[] = {
      {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    double bps = v * scale;
    if (!(bps <= 1e15)) return BadSpec(spec, "bandwidth '" + std::string(s) + "' is above 1 PB/s");
    return bps;
  }
  if (unit.empty() && v == 0) return 0.0;
  return BadSpec(spec, "bandwidth '" + std::string(s) + "' needs a unit: B, KB, MB, GB, KiB, MiB or GiB per second");
}

std::string FormatDuration(Duration d) {
  int64_t ns = d.count();
  if (ns % 1000000000 == 0) return std::to_string(ns / 1000000000) + "s";
  if (ns % 1000000 == 0) return std::to_string(ns / 1000000) + "ms";
  if (ns % 1000 == 0) return std::to_string(ns / 1000) + "us";
  return std::to_string(ns) + "ns";
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
      STRATA_ASSIGN_OR_RETURN(profile.first_byte, ParseDuration(spec, value));
    } else if (name == "jitter") {
      STRATA_ASSIGN_OR_RETURN(profile.jitter, ParseDuration(spec, value));
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
  std::string out = "ttfb=" + FormatDuration(profile.first_byte) + ",bw=";
  if (profile.bytes_per_second_per_connection <= 0) {
    out += "unlimited";
  } else {
    // Whole bytes per second: fractions of a byte are noise, and this keeps
    // the text free of exponents the parser does not accept.
    out += std::to_string(static_cast<uint64_t>(std::llround(profile.bytes_per_second_per_connection))) + "B/s";
  }
  if (profile.jitter.count() > 0) out += ",jitter=" + FormatDuration(profile.jitter);
  if (profile.seed != 1) out += ",seed=" + std::to_string(profile.seed);
  return out;
}

}  // namespace strata::object
