"""The blob cache is bounded by what the blobs hold, not by their number (issue 45: 8 cached blobs of 32 MiB of
``{}`` peaked at 6.3 GB), and a blob with more values than a state may have is refused before it is parsed."""

from __future__ import annotations

import gzip
import hashlib
import tracemalloc

import pytest

from envsim.benchmark import state_store
from envsim.benchmark.state_store import StateRefError, load_blob


def _blob(folder, text: bytes) -> str:
    digest = hashlib.sha256(text).hexdigest()
    (folder / f"{digest}.json.gz").write_bytes(gzip.compress(text))
    return f"sha256:{digest}"


def _empties(n: int, tag: int) -> bytes:
    return b'{"tag":%d,"x":[' % tag + b",".join([b"{}"] * n) + b"]}"


@pytest.fixture(autouse=True)
def _fresh_cache():
    state_store._blob.cache_clear()
    yield
    state_store._blob.cache_clear()


def test_the_cache_keeps_at_most_its_value_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(state_store, "MAX_BLOB_VALUES", 120_000)  # each blob counts ~100,000 (its "{" and ",")
    monkeypatch.setattr(state_store, "MAX_CACHED_VALUES", 240_000)
    refs = [_blob(tmp_path, _empties(50_000, i)) for i in range(8)]
    tracemalloc.start()
    try:
        for ref in refs:
            assert len(load_blob(str(tmp_path), ref)["x"]) == 50_000
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(state_store._BLOBS) == 2  # 2 x ~100,000 counted within 240,000; 8 would be ~800,000
    assert held < 3 * 50_000 * 200, f"{held / 2**20:.1f} MiB held"
    assert load_blob(str(tmp_path), refs[-1])["tag"] == 7  # the latest is still cached and correct


def test_small_blobs_share_the_cache_as_before(tmp_path):
    refs = [_blob(tmp_path, b'{"n": %d}' % i) for i in range(8)]
    for ref in refs:
        load_blob(str(tmp_path), ref)
    assert len(state_store._BLOBS) == 8
    load_blob(str(tmp_path), _blob(tmp_path, b'{"n": 99}'))
    assert len(state_store._BLOBS) == 8  # the least recently used one made room


def test_a_blob_with_more_values_than_a_state_may_have_is_refused_unparsed(tmp_path, monkeypatch):
    monkeypatch.setattr(state_store, "MAX_BLOB_VALUES", 1_000)
    parsed: list[str] = []
    monkeypatch.setattr(state_store, "loads", lambda text, **k: parsed.append(text) or {})
    ref = _blob(tmp_path, _empties(2_000, 0))
    with pytest.raises(StateRefError, match=r"holds up to 4,00\d JSON values, over the 1,000 .*MAX_BLOB_VALUES"):
        load_blob(str(tmp_path), ref)
    assert parsed == []
