"""The one file digest and the one codes digest (storage/digests.py), against independent computations."""

import hashlib

import numpy as np

from omnivoice_demo.storage import digests


def test_file_digest_is_the_sha256_of_the_bytes_across_block_edges(tmp_path, monkeypatch):
    monkeypatch.setattr(digests, "BLOCK", 7)   # many blocks, one partial
    data = bytes(range(256)) * 3 + b"tail"
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert digests.file_sha256(path) == hashlib.sha256(data).hexdigest()
    (tmp_path / "empty").write_bytes(b"")
    assert digests.file_sha256(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()


def test_codes_digest_hashes_each_chunks_shape_then_its_int64_values():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 1024, (8, 5)), rng.integers(0, 1024, (8, 3))
    expected = hashlib.sha256()
    for chunk in (a, b):
        expected.update(repr(chunk.shape).encode())
        expected.update(chunk.astype("<i8").tobytes())
    assert digests.codes_sha256([a, b]) == expected.hexdigest()
    # the dtype the codes arrive in does not matter; the chunking and every value do
    assert digests.codes_sha256([a.astype(np.int32), b.astype(np.int16)]) == expected.hexdigest()
    joined = np.concatenate([a, b], axis=-1)
    assert digests.codes_sha256([joined]) != expected.hexdigest()
    changed = b.copy()
    changed[7, 2] += 1
    assert digests.codes_sha256([a, changed]) != expected.hexdigest()
