"""Endpoint fleets: least-outstanding routing, ejection and return of failing endpoints, and whole runs of
``envsim eval`` / ``envsim simulate`` over several local HTTP servers, one of them failing."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer
from envsim.evaluation.endpoints.fleet import FleetProvider, FleetUnavailable, merge_reports, read_url_file
from envsim.evaluation.endpoints.providers import Generation


class Transient(RuntimeError):
    """What a 5xx / connection error is for the fleet."""


class FakeProvider:
    """Answers after ``delay`` seconds, or raises ``fail`` (Transient: retryable)."""

    name = "fake"

    def __init__(self, delay: float = 0.0, fail: BaseException | None = None) -> None:
        self.delay, self.fail, self.calls, self.closed = delay, fail, 0, False

    async def generate(self, messages, record):
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.fail is not None:
            raise self.fail
        return Generation("{}")

    def should_retry(self, exc):
        return isinstance(exc, Transient)

    async def aclose(self):
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _by_url(fleet: FleetProvider) -> dict[str, dict]:
    return {row["url"]: row for row in fleet.endpoint_report()}


def test_least_outstanding_requests_spread_concurrent_load():
    slow, fast = FakeProvider(delay=0.2), FakeProvider(delay=0.01)
    fleet = FleetProvider([("slow", slow), ("fast", fast)])

    async def run():
        await asyncio.gather(*(fleet.generate([], {"id": str(i)}) for i in range(2)))   # one each: both idle
        for i in range(10):                                    # one at a time: both idle again, ties by count
            await fleet.generate([], {"id": f"s{i}"})
        await fleet.aclose()

    asyncio.run(run())
    counts = _by_url(fleet)
    assert counts["slow"]["requests"] == 6 and counts["fast"]["requests"] == 6
    assert slow.closed and fast.closed

    busy = FleetProvider([("slow", FakeProvider(delay=0.3)), ("fast", FakeProvider(delay=0.01))])

    async def overlapping():
        first = asyncio.ensure_future(busy.generate([], {"id": "a"}))    # goes to "slow" (order breaks the tie)
        await asyncio.sleep(0.05)
        for i in range(5):                                     # "slow" has one in flight: all go to "fast"
            await busy.generate([], {"id": f"b{i}"})
        await first

    asyncio.run(overlapping())
    assert _by_url(busy)["slow"]["requests"] == 1 and _by_url(busy)["fast"]["requests"] == 5


def test_repeated_failures_take_an_endpoint_out_then_it_returns_on_probation():
    clock = Clock()
    bad, good = FakeProvider(fail=Transient("500")), FakeProvider()
    fleet = FleetProvider([("bad", bad), ("good", good)], failure_threshold=3, cooldown=30, clock=clock)

    async def call(key: str):
        try:
            await fleet.generate([], {"id": key})
            return True
        except Transient:
            return False

    async def run():
        # force traffic to "bad": the good endpoint looks busy
        fleet.endpoints[1].in_flight = 100
        assert [await call(f"x{i}") for i in range(3)] == [False] * 3
        fleet.endpoints[1].in_flight = 0
        assert _by_url(fleet)["bad"]["ejections"] == 1 and not fleet.endpoints[0].healthy(clock.now)
        assert all([await call(f"y{i}") for i in range(5)])           # all to the good one
        assert bad.calls == 3
        clock.now += 31                                                # back, on probation
        fleet.endpoints[1].in_flight = 100
        assert not await call("z")                                     # one failure: out again, twice as long
        assert fleet.endpoints[0].out_until == pytest.approx(clock.now + 60)
        fleet.endpoints[1].in_flight = 0

    asyncio.run(run())
    bad_row = _by_url(fleet)["bad"]
    assert bad_row["ejections"] == 2 and bad_row["failures"] == 4 and bad_row["successes"] == 0
    assert bad_row["errors"] == {"Transient": 4} and not bad_row["healthy_at_end"]


def test_non_transient_errors_do_not_eject_and_retries_avoid_the_failing_endpoint():
    rejecting = FakeProvider(fail=ValueError("prompt too long"))
    fleet = FleetProvider([("a", rejecting), ("b", FakeProvider())], failure_threshold=1)

    async def run():
        with pytest.raises(ValueError):
            await fleet.generate([], {"id": "s"})              # "a" first (tie)
        await fleet.generate([], {"id": "s"})                  # the retry of "s" goes to "b"

    asyncio.run(run())
    rows = _by_url(fleet)
    assert rows["a"]["ejections"] == 0 and rows["a"]["healthy_at_end"] and rows["b"]["successes"] == 1


def test_when_every_endpoint_is_out_a_request_waits_for_the_first_back():
    fleet = FleetProvider([("a", FakeProvider()), ("b", FakeProvider())], max_wait=1.0)

    async def run():
        now = fleet.clock()
        fleet.endpoints[0].out_until = now + 0.2
        fleet.endpoints[1].out_until = now + 50
        started = fleet.clock()
        await fleet.generate([], {"id": "w"})
        return fleet.clock() - started

    waited = asyncio.run(run())
    assert 0.15 <= waited < 1.0 and _by_url(fleet)["a"]["successes"] == 1

    far = FleetProvider([("a", FakeProvider())], max_wait=0.1)
    far.endpoints[0].out_until = far.clock() + 60
    with pytest.raises(FleetUnavailable, match="all 1 endpoints are out"):
        asyncio.run(far.generate([], {"id": "x"}))
    assert far.should_retry(FleetUnavailable("x"))


def test_counts_add_up_over_resumed_runs_and_url_files(tmp_path):
    first = [{"url": "u", "requests": 3, "successes": 2, "failures": 1, "ejections": 0, "errors": {"E": 1},
              "healthy_at_end": True}]
    second = [{"url": "u", "requests": 2, "successes": 0, "failures": 2, "ejections": 1, "errors": {"E": 2},
               "healthy_at_end": False}, {"url": "v", "requests": 1, "successes": 1, "failures": 0, "ejections": 0}]
    merged = {r["url"]: r for r in merge_reports(first, second)}
    assert merged["u"]["requests"] == 5 and merged["u"]["errors"] == {"E": 3} and not merged["u"]["healthy_at_end"]
    assert merged["v"]["successes"] == 1
    listing = tmp_path / "urls.txt"
    listing.write_text("# replicas\nhttp://a:8000/v1\n\n  http://b:8000/v1  # node 2\n")
    assert read_url_file(listing) == ["http://a:8000/v1", "http://b:8000/v1"]
    with pytest.raises(ValueError):
        FleetProvider([("a", FakeProvider()), ("a", FakeProvider())])


class AlwaysFailing:
    """An HTTP server that answers every request with 500."""

    def __enter__(self) -> "AlwaysFailing":
        self.hits = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                return

            def do_POST(self):  # noqa: N802
                owner.hits += 1
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = b'{"error": {"message": "internal error"}}'
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_eval_over_three_servers_one_failing_scores_everything(tmp_path, small_benchmark, small_records):
    run_dir = tmp_path / "run"
    with FakeOpenAIServer(small_records) as one, FakeOpenAIServer(small_records) as two, AlwaysFailing() as bad:
        urls = tmp_path / "urls.txt"
        urls.write_text(f"{two.base_url}\n# the broken replica\n{bad.base_url}\n")
        result = CliRunner().invoke(main, ["eval", "--model", "oracle", "--benchmark", str(small_benchmark),
                                           "--run-dir", str(run_dir), "--base-url", one.base_url,
                                           "--base-url-file", str(urls), "--concurrency", "6",
                                           "--no-preflight"],  # routing alone (the preflight is tested apart)
                                    catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["scored"] == len(small_records) and summary["infra_failures"] == 0
    assert summary["overall"]["cm"] == 1.0
    rows = {row["url"]: row for row in summary["endpoints"]}
    assert set(rows) == {one.base_url, two.base_url, bad.base_url}
    assert rows[bad.base_url]["successes"] == 0 and rows[bad.base_url]["ejections"] == 1
    assert 3 <= rows[bad.base_url]["failures"] == bad.hits and not rows[bad.base_url]["healthy_at_end"]
    assert rows[one.base_url]["successes"] + rows[two.base_url]["successes"] == len(small_records)
    assert rows[one.base_url]["successes"] > 0 and rows[two.base_url]["successes"] > 0
    assert "out for 30s after repeated failures" in result.output and bad.base_url in result.output
    config = json.loads((run_dir / "config.json").read_text())
    assert config["base_url"] == ",".join(sorted([one.base_url, two.base_url, bad.base_url]))


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def test_simulate_goes_on_when_one_endpoint_refuses_connections(tmp_path, small_records):
    dead = _closed_port()
    with FakeOpenAIServer(small_records) as good:
        result = CliRunner().invoke(main, ["simulate", "--env", "online_store-v1", "--simulator", "oracle",
                                           "--base-url", dead, "--base-url", good.base_url, "--episodes", "2",
                                           "--steps", "5", "--out", str(tmp_path / "sim")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "sim" / "stats.json").read_text())
    rows = {row["url"]: row for row in stats["endpoints"]}
    assert rows[dead]["successes"] == 0 and rows[dead]["ejections"] == 1 and rows[dead]["failures"] == 3
    assert rows[good.base_url]["successes"] == stats["steps"] == 10
    assert stats["fallback_steps"] == 0                       # every step got an answer from the good replica


def test_bad_endpoint_lists_are_usage_errors(tmp_path, small_benchmark):
    empty = tmp_path / "none.txt"
    empty.write_text("# nothing here\n")
    for args in (["--base-url-file", str(empty)], ["--base-url", "localhost:8000"]):
        result = CliRunner().invoke(main, ["eval", "--model", "m", "--benchmark", str(small_benchmark),
                                           "--run-dir", str(tmp_path / "r"), *args])
        assert result.exit_code == 2 and ("lists no endpoint" in result.output or "not an http" in result.output)
