"""S3 checksums through `strata serve`, driven by boto3 (Debian's: it computes
CRC32, CRC32C, SHA1 and SHA256 itself but knows neither CRC64NVME nor
x-amz-checksum-type, which go as requests signed by botocore's SigV4, as do
the aws-chunked trailer uploads). Usage: checksum_clients.py ENDPOINT KEY SECRET BUCKET.
Expected values are computed here independently (zlib, hashlib, bitwise
CRC32C/CRC64NVME), as AWS documents them. Exits non-zero on any failure."""
import base64
import functools
import hashlib
import http.client
import re
import sys
import urllib.parse
import zlib

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from boto3_checks import check, client, finish

ENDPOINT, KEY, SECRET, BUCKET = sys.argv[1:5]
s3 = client(ENDPOINT, KEY, SECRET)


@functools.lru_cache(maxsize=None)
def crc_table(poly):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


def reflected_crc(data, poly, width):
    mask = (1 << width) - 1
    table = crc_table(poly)
    crc = mask
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ mask


@functools.lru_cache(maxsize=None)
def raw(alg, data):
    if alg == "CRC32":
        return zlib.crc32(data).to_bytes(4, "big")
    if alg == "CRC32C":
        return reflected_crc(data, 0x82F63B78, 32).to_bytes(4, "big")
    if alg == "CRC64NVME":
        return reflected_crc(data, 0x9A6C9329AC4BC9B5, 64).to_bytes(8, "big")
    return hashlib.new(alg.lower(), data).digest()


def b64(b):
    return base64.b64encode(b).decode()


def value(alg, data):
    return b64(raw(alg, data))


def error_of(call):
    try:
        call()
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]
    return 200, ""


def signed_request(method, key, query="", body=b"", headers=None):
    """One request signed by botocore's S3 SigV4 (payload hash of `body`): (status, headers, text)."""
    url = f"{ENDPOINT}/{BUCKET}/{key}" + (("?" + query) if query else "")
    req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    S3SigV4Auth(Credentials(KEY, SECRET), "s3", "us-east-1").add_auth(req)
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request(method, u.path + (("?" + u.query) if u.query else ""), body=body, headers=dict(req.headers.items()))
    resp = conn.getresponse()
    text = resp.read().decode()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, text


def xml_field(text, name):
    m = re.search(f"<{name}>([^<]*)</{name}>", text)
    return m.group(1) if m else None


def checksum_type(response):
    return response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-checksum-type")


def absent(key):
    return error_of(lambda: s3.head_object(Bucket=BUCKET, Key=key))[0] == 404


assert reflected_crc(b"123456789", 0x9A6C9329AC4BC9B5, 64) == 0xAE8B14860A799888
data = b"the quick brown fox jumps over the lazy dog\n" * 3000

# boto3 computes the checksum itself (ChecksumAlgorithm=) for all but CRC64NVME.
for alg in ["CRC32", "CRC32C", "SHA1", "SHA256"]:
    key = "single/" + alg
    put = s3.put_object(Bucket=BUCKET, Key=key, Body=data, ChecksumAlgorithm=alg)
    check(put.get("Checksum" + alg) == value(alg, data), f"PutObject {alg} answers the checksum")
    head = s3.head_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
    check(head.get("Checksum" + alg) == value(alg, data), f"HeadObject {alg} returns the stored checksum")
    check(checksum_type(head) == "FULL_OBJECT", f"HeadObject {alg} type FULL_OBJECT")
    plain = s3.head_object(Bucket=BUCKET, Key=key)
    check("Checksum" + alg not in plain, f"HeadObject {alg} without checksum mode returns none")
    got = s3.get_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
    check(got.get("Checksum" + alg) == value(alg, data) and got["Body"].read() == data,
          f"GetObject {alg} (validated by botocore) returns bytes and checksum")

status, _, text = signed_request("PUT", "single/CRC64NVME", body=data,
                                 headers={"x-amz-checksum-crc64nvme": value("CRC64NVME", data)})
check(status == 200, f"PutObject CRC64NVME accepted ({status} {text})")
status, headers, _ = signed_request("HEAD", "single/CRC64NVME", headers={"x-amz-checksum-mode": "ENABLED"})
check(headers.get("x-amz-checksum-crc64nvme") == value("CRC64NVME", data)
      and headers.get("x-amz-checksum-type") == "FULL_OBJECT", "HeadObject returns the stored CRC64NVME")

# A wrong checksum: 400 BadDigest, and the key does not exist afterwards.
for alg in ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"]:
    key = "bad/" + alg
    status, _, text = signed_request("PUT", key, body=data, headers={"x-amz-checksum-" + alg.lower(): value(alg, b"x")})
    check(status == 400 and xml_field(text, "Code") == "BadDigest", f"wrong {alg} is 400 BadDigest ({status} {text})")
    check(absent(key), f"wrong {alg} stored nothing")
err = error_of(lambda: s3.put_object(Bucket=BUCKET, Key="bad/boto", Body=data, ChecksumSHA256=value("SHA256", b"x")))
check(err == (400, "BadDigest"), f"a wrong checksum from boto3 is BadDigest (got {err})")

# Content-MD5: verified; malformed is InvalidDigest.
md5 = b64(hashlib.md5(data).digest())
check(error_of(lambda: s3.put_object(Bucket=BUCKET, Key="md5/good", Body=data, ContentMD5=md5))[0] == 200,
      "Content-MD5 that matches is accepted")
err = error_of(lambda: s3.put_object(Bucket=BUCKET, Key="md5/bad", Body=data,
                                     ContentMD5=b64(hashlib.md5(b"x").digest())))
check(err == (400, "BadDigest"), f"Content-MD5 mismatch is BadDigest (got {err})")
err = error_of(lambda: s3.put_object(Bucket=BUCKET, Key="md5/bad", Body=data, ContentMD5="bm90LW1kNQ=="))
check(err == (400, "InvalidDigest"), f"malformed Content-MD5 is InvalidDigest (got {err})")
check(absent("md5/bad"), "a refused Content-MD5 stored nothing")


# aws-chunked with an unsigned trailer checksum, signed by botocore as an SDK does over TLS.
def trailer_put(key, payload, trailer_value):
    url = f"{ENDPOINT}/{BUCKET}/{key}"
    body = (f"{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n" +
            b"x-amz-checksum-crc32:" + trailer_value.encode() + b"\r\n\r\n")
    req = AWSRequest(method="PUT", url=url, data=body, headers={
        "Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(payload)),
        "x-amz-trailer": "x-amz-checksum-crc32", "Content-Length": str(len(body))})
    req.context["checksum"] = {"request_algorithm": {"in": "trailer", "algorithm": "crc32",
                                                     "name": "x-amz-checksum-crc32"}}
    S3SigV4Auth(Credentials(KEY, SECRET), "s3", "us-east-1").add_auth(req)
    check(req.headers["X-Amz-Content-SHA256"] == "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "trailer request signed")
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request("PUT", u.path, body=body, headers=dict(req.headers.items()))
    resp = conn.getresponse()
    return resp.status, resp.read().decode()


status, text = trailer_put("trailer/good", data, value("CRC32", data))
check(status == 200, f"unsigned-trailer PUT with the right CRC32 is accepted ({status} {text})")
head = s3.head_object(Bucket=BUCKET, Key="trailer/good", ChecksumMode="ENABLED")
check(head.get("ChecksumCRC32") == value("CRC32", data), "trailer checksum stored and returned")
check(head.get("ContentEncoding") is None, "aws-chunked is not kept as Content-Encoding")
check(s3.get_object(Bucket=BUCKET, Key="trailer/good")["Body"].read() == data, "trailer PUT bytes read back")
status, text = trailer_put("trailer/bad", data, value("CRC32", b"x"))
check(status == 400 and "<Code>BadDigest</Code>" in text, f"wrong trailer checksum is BadDigest ({status})")
check(absent("trailer/bad"), "wrong trailer checksum stored nothing")

# Multipart, COMPOSITE (CRC32 and SHA256): base64(H(raw part checksums)) + "-N"; boto3 computes the parts'.
parts_data = [bytes([65 + i]) * (5 << 20) for i in range(2)] + [b"last part"]
for alg in ["CRC32", "CRC32C", "SHA256"]:
    key = "mp/composite-" + alg
    up = s3.create_multipart_upload(Bucket=BUCKET, Key=key, ChecksumAlgorithm=alg)
    parts = []
    for n, p in enumerate(parts_data, 1):
        r = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up["UploadId"], PartNumber=n, Body=p,
                           ChecksumAlgorithm=alg)
        check(r.get("Checksum" + alg) == value(alg, p), f"UploadPart {alg} answers the part's checksum")
        parts.append({"PartNumber": n, "ETag": r["ETag"], "Checksum" + alg: r["Checksum" + alg]})
    listed = s3.list_parts(Bucket=BUCKET, Key=key, UploadId=up["UploadId"])
    check([p.get("Checksum" + alg) for p in listed["Parts"]] == [value(alg, p) for p in parts_data],
          f"ListParts returns each part's {alg}")
    # A part checksum that is not the uploaded one: InvalidPart.
    wrong = [dict(p) for p in parts]
    wrong[1]["Checksum" + alg] = value(alg, b"x")
    err = error_of(lambda: s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up["UploadId"],
                                                        MultipartUpload={"Parts": wrong}))
    check(err == (400, "InvalidPart"), f"Complete with a wrong part {alg} is InvalidPart (got {err})")
    done = s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": parts})
    expected = b64(raw(alg, b"".join(raw(alg, p) for p in parts_data))) + "-3"
    check(done.get("Checksum" + alg) == expected, f"Complete answers the composite {alg} {expected}")
    head = s3.head_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
    check(head.get("Checksum" + alg) == expected and checksum_type(head) == "COMPOSITE",
          f"HeadObject returns the composite {alg}")
    got = s3.get_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
    check(got["Body"].read() == b"".join(parts_data), f"composite {alg} object reads back")

# Multipart, FULL_OBJECT (CRC32, and CRC64NVME by default): the CRC of the whole object, checked at Complete.
whole = b"".join(parts_data)
for alg, create_headers in [("CRC32", {"x-amz-checksum-algorithm": "CRC32", "x-amz-checksum-type": "FULL_OBJECT"}),
                            ("CRC64NVME", {"x-amz-checksum-algorithm": "CRC64NVME"})]:
    key = "mp/full-" + alg
    header = "x-amz-checksum-" + alg.lower()
    status, headers, text = signed_request("POST", key, "uploads", headers=create_headers)
    check(status == 200 and headers.get("x-amz-checksum-type") == "FULL_OBJECT",
          f"CreateMultipartUpload {alg} answers type FULL_OBJECT ({status} {text})")
    upload_id = xml_field(text, "UploadId")
    xml = "<CompleteMultipartUpload>"
    for n, p in enumerate(parts_data, 1):
        status, headers, text = signed_request("PUT", key, f"partNumber={n}&uploadId={upload_id}", body=p,
                                               headers={header: value(alg, p)})
        check(status == 200 and headers.get(header) == value(alg, p), f"UploadPart {alg} ({status} {text})")
        xml += (f"<Part><PartNumber>{n}</PartNumber><ETag>{headers.get('etag')}</ETag>"
                f"<Checksum{alg}>{value(alg, p)}</Checksum{alg}></Part>")
    xml = (xml + "</CompleteMultipartUpload>").encode()
    status, _, text = signed_request("POST", key, f"uploadId={upload_id}", body=xml,
                                     headers={header: value(alg, b"x"), "x-amz-checksum-type": "FULL_OBJECT"})
    check(status == 400 and xml_field(text, "Code") == "BadDigest",
          f"Complete with a wrong full-object {alg} is BadDigest ({status} {text})")
    check(absent(key), f"a refused Complete ({alg}) stored nothing")
    status, _, text = signed_request("POST", key, f"uploadId={upload_id}", body=xml,
                                     headers={header: value(alg, whole), "x-amz-checksum-type": "FULL_OBJECT"})
    check(status == 200 and xml_field(text, "Checksum" + alg) == value(alg, whole)
          and xml_field(text, "ChecksumType") == "FULL_OBJECT", f"Complete answers the full-object {alg} ({text})")
    status, headers, _ = signed_request("HEAD", key, headers={"x-amz-checksum-mode": "ENABLED"})
    check(headers.get(header) == value(alg, whole) and headers.get("x-amz-checksum-type") == "FULL_OBJECT",
          f"HeadObject returns the full-object {alg}")
got = s3.get_object(Bucket=BUCKET, Key="mp/full-CRC32", ChecksumMode="ENABLED")
check(got.get("ChecksumCRC32") == value("CRC32", whole) and got["Body"].read() == whole,
      "GetObject (validated by botocore) returns the full-object CRC32 and the bytes")

finish()
