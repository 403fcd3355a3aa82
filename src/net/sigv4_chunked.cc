// aws-chunked streaming bodies (STREAMING-AWS4-HMAC-SHA256-PAYLOAD and the
// trailer variants): framing, chained chunk signatures, trailers.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "base/constant_time.h"
#include "base/hash.h"
#include "net/sigv4.h"

namespace strata::net {
namespace {

constexpr size_t kMaxLine = 4096;  // a chunk header or trailer line
constexpr size_t kMaxTrailers = 32;

Status Framing(std::string message) {
  return InvalidArgumentError(std::move(message)).WithForeignCode("IncompleteBody");
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string ChunkStringToSign(std::string_view amz_date, std::string_view scope, std::string_view previous_signature,
                              std::string_view chunk_data) {
  std::string s = "AWS4-HMAC-SHA256-PAYLOAD\n";
  s += amz_date;
  s += '\n';
  s += scope;
  s += '\n';
  s += previous_signature;
  s += '\n';
  s += kEmptyPayloadSha256;
  s += '\n';
  s += ToHex(Sha256(chunk_data));
  return s;
}

std::string EncodeSignedChunk(std::string_view signing_key, std::string_view amz_date, std::string_view scope,
                              std::string* previous_signature, std::string_view chunk_data) {
  std::string sig = SignatureHex(signing_key, ChunkStringToSign(amz_date, scope, *previous_signature, chunk_data));
  char size_hex[20];
  std::snprintf(size_hex, sizeof size_hex, "%zx", chunk_data.size());
  std::string out = size_hex;
  out += ";chunk-signature=";
  out += sig;
  out += "\r\n";
  out += chunk_data;
  out += "\r\n";
  *previous_signature = std::move(sig);
  return out;
}

AwsChunkedDecoder::AwsChunkedDecoder(std::string signing_key, std::string amz_date, std::string scope,
                                     std::string seed_signature, Options options)
    : signing_key_(std::move(signing_key)),
      amz_date_(std::move(amz_date)),
      scope_(std::move(scope)),
      previous_signature_(std::move(seed_signature)),
      options_(options) {}

AwsChunkedDecoder AwsChunkedDecoder::ForRequest(const VerifiedRequest& verified, Options options) {
  options.signed_chunks = verified.payload_sha256 != kStreamingUnsignedTrailer;
  options.signed_trailer = verified.payload_sha256 == kStreamingPayloadTrailer;
  return AwsChunkedDecoder(verified.signing_key, verified.amz_date, verified.scope, verified.seed_signature, options);
}

Status AwsChunkedDecoder::Fail(Status s) {
  state_ = State::kFailed;
  error_ = s;
  return s;
}

Status AwsChunkedDecoder::ParseHeaderLine(std::string_view line) {
  // "<hex size>[;chunk-signature=<64 hex>]" (extensions other than chunk-signature are rejected).
  size_t semi = line.find(';');
  std::string_view hex = Trim(line.substr(0, semi));
  if (hex.empty() || hex.size() > 16) return Framing("malformed aws-chunked size");
  uint64_t size = 0;
  for (char c : hex) {
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) return Framing("malformed aws-chunked size");
    size = size << 4 | static_cast<uint64_t>(d);
  }
  if (size > options_.max_chunk_size) {
    return InvalidArgumentError("aws-chunked chunk of " + std::to_string(size) + " bytes exceeds the limit of " +
                                std::to_string(options_.max_chunk_size))
        .WithForeignCode("InvalidRequest");
  }
  if (options_.decoded_content_length && size > *options_.decoded_content_length - decoded_) {
    return Framing("aws-chunked body is longer than x-amz-decoded-content-length");
  }
  chunk_signature_.clear();
  if (semi != std::string_view::npos) {
    std::string_view ext = Trim(line.substr(semi + 1));
    constexpr std::string_view kSig = "chunk-signature=";
    if (ext.substr(0, kSig.size()) != kSig) return Framing("unexpected aws-chunked extension");
    chunk_signature_ = std::string(ext.substr(kSig.size()));
  }
  if (Signed() && chunk_signature_.size() != 64) {
    return UnauthenticatedError("aws-chunked chunk without a valid chunk-signature")
        .WithForeignCode("SignatureDoesNotMatch");
  }
  chunk_size_ = size;
  chunk_.clear();
  return Status::Ok();
}

Status AwsChunkedDecoder::EndChunk() {
  if (Signed()) {
    std::string expected =
        SignatureHex(signing_key_, ChunkStringToSign(amz_date_, scope_, previous_signature_, chunk_));
    if (!ConstantTimeEquals(expected, chunk_signature_)) {
      return UnauthenticatedError("aws-chunked chunk signature mismatch at decoded offset " + std::to_string(decoded_))
          .WithForeignCode("SignatureDoesNotMatch");
    }
    previous_signature_ = std::move(expected);
  }
  return Status::Ok();
}

Status AwsChunkedDecoder::ParseTrailerLine(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return Framing("malformed aws-chunked trailer");
  std::string name(Trim(line.substr(0, colon)));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string value(Trim(line.substr(colon + 1)));
  if (name == "x-amz-trailer-signature") {
    trailer_signature_ = value;
    return Status::Ok();
  }
  if (trailers_.size() >= kMaxTrailers) return Framing("too many aws-chunked trailers");
  trailer_text_ += name + ":" + value + "\n";
  trailers_.emplace_back(std::move(name), std::move(value));
  return Status::Ok();
}

Status AwsChunkedDecoder::Feed(std::string_view wire, std::string* out) {
  if (state_ == State::kFailed) return error_;
  size_t i = 0;
  while (i < wire.size()) {
    switch (state_) {
      case State::kHeader:
      case State::kTrailer: {
        size_t nl = wire.find('\n', i);
        size_t end = nl == std::string_view::npos ? wire.size() : nl;
        if (line_.size() + (end - i) > kMaxLine) return Fail(Framing("aws-chunked header line too long"));
        line_.append(wire.data() + i, end - i);
        i = end;
        if (nl == std::string_view::npos) break;
        ++i;
        if (line_.empty() || line_.back() != '\r') return Fail(Framing("aws-chunked line not ended by CRLF"));
        line_.pop_back();
        std::string line = std::move(line_);
        line_.clear();
        if (state_ == State::kHeader) {
          Status s = ParseHeaderLine(line);
          if (!s.ok()) return Fail(s);
          state_ = State::kData;
          if (chunk_size_ == 0) {
            // The final chunk: its signature covers empty data; then trailers until an empty line.
            s = EndChunk();
            if (!s.ok()) return Fail(s);
            state_ = State::kTrailer;
          }
        } else if (!line.empty()) {
          Status s = ParseTrailerLine(line);
          if (!s.ok()) return Fail(s);
        } else {
          if (options_.signed_trailer) {
            std::string sts = "AWS4-HMAC-SHA256-TRAILER\n" + amz_date_ + "\n" + scope_ + "\n" + previous_signature_ +
                              "\n" + ToHex(Sha256(trailer_text_));
            if (!ConstantTimeEquals(SignatureHex(signing_key_, sts), trailer_signature_)) {
              return Fail(UnauthenticatedError("aws-chunked trailer signature mismatch")
                              .WithForeignCode("SignatureDoesNotMatch"));
            }
          }
          state_ = State::kDone;
        }
        break;
      }
      case State::kData: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(chunk_size_ - chunk_.size(), wire.size() - i));
        chunk_.append(wire.data() + i, take);  // grows with bytes actually received, never by the declared size
        i += take;
        if (chunk_.size() == chunk_size_) {
          state_ = State::kDataCrLf;
          line_.clear();
        }
        break;
      }
      case State::kDataCrLf: {
        line_ += wire[i++];
        if (line_.size() < 2) break;
        if (line_ != "\r\n") return Fail(Framing("aws-chunked data not followed by CRLF"));
        line_.clear();
        Status s = EndChunk();
        if (!s.ok()) return Fail(s);
        out->append(chunk_);
        decoded_ += chunk_.size();
        chunk_.clear();
        state_ = State::kHeader;
        break;
      }
      case State::kDone: return Fail(Framing("data after the final aws-chunked chunk"));
      case State::kFailed: return error_;
    }
  }
  return Status::Ok();
}

Status AwsChunkedDecoder::Finish() const {
  if (state_ == State::kFailed) return error_;
  if (state_ != State::kDone) return Framing("aws-chunked body ended before its final chunk");
  if (options_.decoded_content_length && decoded_ != *options_.decoded_content_length) {
    return Framing("aws-chunked body has " + std::to_string(decoded_) +
                   " bytes but x-amz-decoded-content-length says " + std::to_string(*options_.decoded_content_length));
  }
  return Status::Ok();
}

}  // namespace strata::net
