import io
import tarfile
import uuid

import pytest

import strata


def roundtrip(store):
    info = store.put("a/one.bin", b"0123456789")
    assert info["size"] == 10 and info["etag"]
    store.put("a/two.bin", bytearray(b"xy"))
    store.put("b/three.bin", memoryview(b"zzz"))

    assert store.get("a/one.bin") == b"0123456789"
    assert bytes(store.get("a/one.bin", 2, 5)) == b"234"
    assert bytes(store.get("a/one.bin", 7)) == b"789"
    assert bytes(store.get("a/one.bin", end=3)) == b"012"
    assert bytes(store.get("a/one.bin", -4)) == b"6789"
    head = store.head("a/one.bin")
    assert head["size"] == 10 and head["etag"] == info["etag"]

    assert [(k, s) for k, s, _ in store.list()] == [("a/one.bin", 10), ("a/two.bin", 2), ("b/three.bin", 3)]
    assert [k for k, _, _ in store.list("a/")] == ["a/one.bin", "a/two.bin"]
    assert sorted(k for k, _, _ in store.list("", "/")) == ["a/", "b/"]

    store.delete("a/two.bin")
    store.delete("a/two.bin")  # deleting a missing key is not an error (as in S3)
    with pytest.raises(strata.NotFound) as e:
        store.get("a/two.bin")
    assert isinstance(e.value, FileNotFoundError) and e.value.code == "NotFound"
    assert "a/two.bin" in str(e.value)
    with pytest.raises(FileNotFoundError):
        store.head("nope")


def test_file_store_roundtrip(tmp_path):
    store = strata.open(str(tmp_path / "bucket"))
    assert store.url.startswith("file://")
    roundtrip(store)
    assert (tmp_path / "bucket" / "a" / "one.bin").read_bytes() == b"0123456789"


def test_mem_store_roundtrip():
    roundtrip(strata.open(f"mem://pytest-{uuid.uuid4().hex}"))


def test_cached_store_roundtrip(tmp_path):
    store = strata.open(str(tmp_path / "bucket"), cache_dir=str(tmp_path / "cache"), cache_limit=64 << 20)
    roundtrip(store)
    # Reads of a cached object come back from the cache; the bytes are the same.
    store.put("big.bin", bytes(range(256)) * 4096)
    assert bytes(store.get("big.bin", 1000, 1010)) == (bytes(range(256)) * 4096)[1000:1010]
    assert bytes(store.get("big.bin")) == bytes(range(256)) * 4096


def test_get_is_zero_copy_and_read_only(tmp_path):
    store = strata.open(str(tmp_path))
    store.put("k", b"abc")
    view = store.get("k")
    assert isinstance(view, memoryview) and view.readonly
    assert isinstance(view.obj, strata.Buffer)
    with pytest.raises(TypeError):
        view[0] = 1


def test_errors_map_to_python_exceptions(tmp_path):
    store = strata.open(str(tmp_path))
    store.put("k", b"abc")
    with pytest.raises(strata.OutOfRange) as e:
        store.get("k", 10, 20)
    assert isinstance(e.value, ValueError) and isinstance(e.value, strata.Error)
    with pytest.raises(strata.InvalidArgument):
        strata.open("ftp://nowhere")
    assert issubclass(strata.Throttled, strata.Unavailable) and issubclass(strata.Unavailable, ConnectionError)


def test_object_reader_with_tarfile(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        data = b"hello tar"
        ti = tarfile.TarInfo("x.txt")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    store = strata.open(str(tmp_path))
    store.put("t.tar", buf.getvalue())
    with tarfile.open(fileobj=io.BufferedReader(strata.ObjectReader(store, "t.tar"))) as tf:
        assert tf.extractfile("x.txt").read() == b"hello tar"
