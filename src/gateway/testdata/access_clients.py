#!/usr/bin/env python3
"""Per-key access through `strata serve`, driven by boto3 with three keys
(alice and bob unrestricted, reader read-only with a grant on alice's bucket)
and anonymously (unsigned requests).

usage: access_clients.py GATEWAY_URL setup|check ALICE_KEY ALICE_SECRET BOB_KEY BOB_SECRET READER_KEY READER_SECRET
                         [RGW_URL RGW_KEY RGW_SECRET]
setup makes the buckets and objects; check asserts who may do what (run
before and after a restart of the gateway: ownership and ACLs must survive).
With RGW_*, check also reads the owner from the upstream bucket's tags.
Prints "N check(s), 0 failure(s)" at the end; exits non-zero on any failure.
"""
import sys

from botocore import UNSIGNED

from boto3_checks import answer, check, client, finish

url, phase = sys.argv[1:3]
alice_key, alice_secret, bob_key, bob_secret, reader_key, reader_secret = sys.argv[3:9]
upstream = sys.argv[9:12]

alice = client(url, alice_key, alice_secret)
bob = client(url, bob_key, bob_secret)
reader = client(url, reader_key, reader_secret)
anonymous = client(url, None, None, signature_version=UNSIGNED)


def error_code(fn):
    """"ok", or the error's code (its HTTP status when it has none: HEAD)."""
    status, code, _ = answer(fn)
    if status < 300:
        return "ok"
    return code or str(status)


def denied(fn, what):
    code = error_code(fn)
    check(code in ("AccessDenied", "403"), "%s: want AccessDenied, got %s" % (what, code))


def body(c, bucket, key):
    return c.get_object(Bucket=bucket, Key=key)["Body"].read()


def grants(acl):
    return sorted((g["Grantee"].get("URI") or g["Grantee"].get("ID"), g["Permission"]) for g in acl["Grants"])


ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"

if phase == "setup":
    alice.create_bucket(Bucket="alice-data")
    alice.put_object(Bucket="alice-data", Key="a.txt", Body=b"alice private")
    alice.put_object(Bucket="alice-data", Key="pub.txt", Body=b"public bytes", ACL="public-read")
    alice.put_object(Bucket="alice-data", Key="later.txt", Body=b"made public later")
    alice.put_object_acl(Bucket="alice-data", Key="later.txt", ACL="public-read")
    alice.create_bucket(Bucket="alice-public", ACL="public-read")
    alice.put_object(Bucket="alice-public", Key="listed.txt", Body=b"listed, not readable")
    bob.create_bucket(Bucket="bob-data")
    bob.put_object(Bucket="bob-data", Key="b.txt", Body=b"bob private")
    check(error_code(lambda: bob.create_bucket(Bucket="alice-data")) == "BucketAlreadyExists",
          "bob re-creating alice's bucket")
    # us-east-1 (the gateway's default region): S3 answers its owner 200 (gateway_compat_test checks the rest).
    check(error_code(lambda: alice.create_bucket(Bucket="alice-data")) == "ok", "alice re-creating her bucket")
    # A deleted bucket takes its owner with it: the name is free for another key, which then owns it.
    alice.create_bucket(Bucket="short-lived")
    alice.put_object(Bucket="short-lived", Key="k", Body=b"k")
    denied(lambda: bob.delete_bucket(Bucket="short-lived"), "bob deletes alice's bucket")
    check(error_code(lambda: alice.delete_bucket(Bucket="short-lived")) == "BucketNotEmpty", "a bucket with a key")
    alice.delete_object(Bucket="short-lived", Key="k")
    alice.delete_bucket(Bucket="short-lived")
    bob.create_bucket(Bucket="short-lived")
    denied(lambda: alice.list_objects_v2(Bucket="short-lived"), "alice lists the bucket bob now owns")
    bob.delete_bucket(Bucket="short-lived")
elif phase == "check":
    # Bob: nothing of alice's, by any route.
    denied(lambda: bob.get_object(Bucket="alice-data", Key="a.txt"), "bob GET alice's object")
    denied(lambda: bob.list_objects_v2(Bucket="alice-data"), "bob lists alice's bucket")
    denied(lambda: bob.put_object(Bucket="alice-data", Key="a.txt", Body=b"bob was here"), "bob PUT")
    denied(lambda: bob.delete_object(Bucket="alice-data", Key="a.txt"), "bob DELETE")
    denied(lambda: bob.copy_object(Bucket="bob-data", Key="stolen", CopySource={"Bucket": "alice-data", "Key": "a.txt"}),
           "bob copies alice's object")
    denied(lambda: bob.get_object_acl(Bucket="alice-data", Key="a.txt"), "bob reads alice's ACL")
    denied(lambda: bob.put_bucket_acl(Bucket="alice-data", ACL="public-read"), "bob sets alice's bucket ACL")
    check(error_code(lambda: bob.head_bucket(Bucket="alice-data")) == "403", "bob HEAD alice's bucket")
    theirs = [b["Name"] for b in bob.list_buckets()["Buckets"]]  # and any bucket nobody owns
    check("bob-data" in theirs and "alice-data" not in theirs and "alice-public" not in theirs,
          "bob's ListBuckets: %s" % theirs)
    mine = [b["Name"] for b in alice.list_buckets()["Buckets"]]
    check("alice-data" in mine and "alice-public" in mine and "bob-data" not in mine, "alice's ListBuckets: %s" % mine)
    check(body(alice, "alice-data", "a.txt") == b"alice private", "alice reads her object")
    check(body(bob, "bob-data", "b.txt") == b"bob private", "bob reads his object")
    denied(lambda: alice.get_object(Bucket="bob-data", Key="b.txt"), "alice GET bob's object")
    keys = sorted(o["Key"] for o in alice.list_objects_v2(Bucket="alice-data").get("Contents", []))
    check(keys == ["a.txt", "later.txt", "pub.txt"], "alice-data's keys (no record file): %s" % keys)
    # The read-only key: reads and lists alice-data (its grant), writes nothing.
    check(body(reader, "alice-data", "a.txt") == b"alice private", "reader GET")
    check(len(reader.list_objects_v2(Bucket="alice-data").get("Contents", [])) == 3, "reader lists")
    denied(lambda: reader.put_object(Bucket="alice-data", Key="r.txt", Body=b"r"), "reader PUT")
    denied(lambda: reader.delete_object(Bucket="alice-data", Key="a.txt"), "reader DELETE")
    denied(lambda: reader.delete_objects(Bucket="alice-data", Delete={"Objects": [{"Key": "a.txt"}]}),
           "reader DeleteObjects")
    denied(lambda: reader.create_bucket(Bucket="reader-bucket"), "reader CreateBucket")
    denied(lambda: reader.put_object_acl(Bucket="alice-data", Key="a.txt", ACL="public-read"), "reader PutObjectAcl")
    denied(lambda: reader.get_object(Bucket="bob-data", Key="b.txt"), "reader GET bob's object")
    # ACLs as S3 answers them.
    check(grants(alice.get_object_acl(Bucket="alice-data", Key="a.txt")) == [(alice_key, "FULL_CONTROL")],
          "a.txt's ACL")
    for key in ("pub.txt", "later.txt"):
        check(grants(alice.get_object_acl(Bucket="alice-data", Key=key)) ==
              sorted([(alice_key, "FULL_CONTROL"), (ALL_USERS, "READ")]), key + "'s ACL")
    check(grants(alice.get_bucket_acl(Bucket="alice-public")) == sorted([(alice_key, "FULL_CONTROL"),
                                                                           (ALL_USERS, "READ")]),
          "alice-public's ACL")
    check(grants(alice.get_bucket_acl(Bucket="alice-data")) == [(alice_key, "FULL_CONTROL")], "alice-data's ACL")
    # Anonymous: public-read objects and the public-read bucket's listing; nothing else, never a write.
    check(body(anonymous, "alice-data", "pub.txt") == b"public bytes", "anonymous GET of a public-read object")
    check(body(anonymous, "alice-data", "later.txt") == b"made public later", "anonymous GET after PutObjectAcl")
    denied(lambda: anonymous.get_object(Bucket="alice-data", Key="a.txt"), "anonymous GET of a private object")
    denied(lambda: anonymous.list_objects_v2(Bucket="alice-data"), "anonymous list of a private bucket")
    check([o["Key"] for o in anonymous.list_objects_v2(Bucket="alice-public")["Contents"]] == ["listed.txt"],
          "anonymous list of a public-read bucket")
    denied(lambda: anonymous.get_object(Bucket="alice-public", Key="listed.txt"),
           "anonymous GET of a private object in a public-read bucket")
    denied(lambda: anonymous.put_object(Bucket="alice-public", Key="anon", Body=b"x"), "anonymous PUT")
    denied(lambda: anonymous.delete_object(Bucket="alice-data", Key="pub.txt"), "anonymous DELETE")
    denied(lambda: anonymous.list_buckets(), "anonymous ListBuckets")
    check(body(alice, "alice-data", "pub.txt") == b"public bytes", "pub.txt unchanged")
    if upstream:
        rgw = client(upstream[0], upstream[1], upstream[2])
        tags = {t["Key"]: t["Value"] for t in rgw.get_bucket_tagging(Bucket="alice-data")["TagSet"]}
        check(tags.get("strata-owner") == alice_key, "alice-data's owner tag upstream: %s" % tags)
        tags = {t["Key"]: t["Value"] for t in rgw.get_bucket_tagging(Bucket="alice-public")["TagSet"]}
        check(tags.get("strata-acl") == "public-read", "alice-public's ACL tag upstream: %s" % tags)
else:
    sys.exit("unknown phase " + phase)

finish()
