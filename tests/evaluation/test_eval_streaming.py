"""The evaluation hot path (issue 28): records are streamed (read when a worker is free, never the whole split),
chat requests keep the OpenAI SDK's URL and error semantics without the SDK on the hot path. Figures (CPU per
sample, peak memory) live in ``benchmarks/eval_overhead.py``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from envsim.benchmark import load
from envsim.benchmark.stream import file_sha256, open_stream
from envsim.benchmark.validation import BenchmarkFileError
from envsim.evaluation.endpoints.providers import Generation, NullProvider
from envsim.evaluation.running.runner import EvalConfig, prepare_run_dir, run_samples
from envsim.evaluation.running.single_run import evenly_spaced


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("limit", [None, 1, 7, 40])
def test_stream_yields_the_records_and_limit_cut_of_load(tmp_path, limit):
    records = load("v1", "test")[:40]
    path = _write(tmp_path / "b.jsonl", records)
    stream = open_stream(str(path), limit=limit)
    expected = evenly_spaced(load(str(path)), limit)
    assert len(stream) == len(expected) and stream.total == 40
    assert list(stream) == expected
    assert file_sha256(path) == __import__("hashlib").sha256(path.read_bytes()).hexdigest()


def test_stream_keeps_an_id_subset_in_file_order_then_the_limit_and_refuses_a_run_check_up_front(tmp_path):
    from functools import partial

    from envsim.evaluation.running.subsets import SubsetError, select_positions, select_records

    records = load("v1", "test")[:20]
    path = _write(tmp_path / "b.jsonl", records)
    ids = [records[i]["id"] for i in (17, 3, 9, 11)]          # any order in the list; file order in the run
    stream = open_stream(str(path), select=partial(select_positions, ids=ids))
    assert list(stream) == select_records(load(str(path)), ids)
    assert [r["id"] for r in open_stream(str(path), limit=2, select=partial(select_positions, ids=ids))] == \
        [r["id"] for r in evenly_spaced(select_records(load(str(path)), ids), 2)]
    with pytest.raises(SubsetError, match="1 id\\(s\\) are not in this split"):
        open_stream(str(path), select=partial(select_positions, ids=[*ids, "nope"]))
    refuse = lambda record: "no view" if record["id"] == records[6]["id"] else None  # noqa: E731
    with pytest.raises(BenchmarkFileError, match=rf"{path}:7: no view"):
        open_stream(str(path), check=refuse)                  # before any record is read for its turn


def test_bad_lines_are_refused_before_the_run_and_strict_refusals_at_their_turn(tmp_path):
    records = load("v1", "test")[:5]
    path = _write(tmp_path / "b.jsonl", records)
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(BenchmarkFileError, match=rf"{path}:6: not a JSON line"):
        open_stream(str(path))                 # every line checked before a run starts
    deep = _write(tmp_path / "deep.jsonl", records)
    nested = dict(records[0], id="deep", state={"a": json.loads("[" * 300 + "]" * 300)})
    deep.write_text(deep.read_text() + json.dumps(nested) + "\n")
    stream = open_stream(str(deep))            # what only the strict decoder refuses: found at its turn
    read = []
    with pytest.raises(BenchmarkFileError, match=rf"{deep}:6: JSON nested deeper than 200 levels"):
        for record in stream:
            read.append(record["id"])
    assert read == [r["id"] for r in records]
    duplicate = _write(tmp_path / "d.jsonl", [records[0], records[1], records[0]])
    with pytest.raises(BenchmarkFileError, match=rf"{duplicate}:3: duplicate id .* \(first at {duplicate}:1\)"):
        list(open_stream(str(duplicate)))
    bad_first = tmp_path / "f.jsonl"
    bad_first.write_text('{"id": 1}\n')
    with pytest.raises(BenchmarkFileError, match=rf"{bad_first}:1:"):
        open_stream(str(bad_first))


def test_records_are_read_only_when_a_worker_is_free(tmp_path):
    records = load("v1", "test")[:30]
    pulled: list[str] = []
    in_flight = {"now": 0, "most_ahead": 0}

    def lazily():
        for record in records:
            pulled.append(record["id"])
            in_flight["most_ahead"] = max(in_flight["most_ahead"], len(pulled) - done_count())
            yield record

    rows: list[dict] = []

    def done_count() -> int:
        return len(rows)

    class Slow(NullProvider):
        async def generate(self, messages, record):
            await asyncio.sleep(0.001)
            return Generation(json.dumps({"observation": {"success": True}, "patch": []}))

    config = EvalConfig(model="null")
    prepare_run_dir(tmp_path, config)
    kept = asyncio.run(run_samples(lazily(), Slow(), config, tmp_path, concurrency=4, on_result=rows.append,
                                   keep_rows=False))
    assert kept == {} and len(rows) == 30 and pulled == [r["id"] for r in records]
    assert in_flight["most_ahead"] <= 4        # never more records held than samples in flight
    again = asyncio.run(run_samples(lazily(), Slow(), config, tmp_path, concurrency=4))
    assert len(again) == 30                    # resumed: every id already scored, nothing re-sent
    assert sum(1 for _ in (tmp_path / "results.jsonl").open()) == 30


def test_chat_url_and_errors_are_the_sdks(monkeypatch):
    import httpx2
    import openai

    from envsim.evaluation.endpoints.chat_http import chat_url, request_headers, status_error

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert chat_url(None) == "https://api.openai.com/v1/chat/completions"
    assert chat_url("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"
    assert chat_url("http://h/v1?api-version=2") == "http://h/v1/chat/completions?api-version=2"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env:1/v1")
    assert chat_url(None) == "http://env:1/v1/chat/completions"
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    assert request_headers("k")["Authorization"] == "Bearer k" and request_headers("k")["OpenAI-Organization"] == "org-1"
    request = httpx2.Request("POST", "http://h/v1/chat/completions")
    for status, kind in ((429, openai.RateLimitError), (503, openai.InternalServerError),
                         (404, openai.NotFoundError), (418, openai.APIStatusError)):
        response = httpx2.Response(status, json={"error": {"message": "nope"}}, request=request)
        error = status_error(response)
        assert type(error) is kind and str(error) == f"Error code: {status} - nope" and error.body == {"message": "nope"}
