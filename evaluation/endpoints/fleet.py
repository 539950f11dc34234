"""Endpoint fleets: one provider that spreads requests over several OpenAI-compatible endpoints.

* Routing: least outstanding requests among the healthy endpoints (ties: fewest requests so far,
  then the order given). A retry of a sample avoids the endpoint that just failed it when another
  healthy endpoint exists.
* Health: ``failure_threshold`` consecutive transient failures (connection errors, timeouts, 429,
  5xx — what the provider's ``should_retry`` calls transient) take an endpoint out for ``cooldown``
  seconds, doubled on each repeated ejection up to ``max_cooldown``. An endpoint that comes back is
  on probation: its first failure takes it out again, its first success makes it healthy and resets
  the cooldown. Errors that are not transient (a 400 for an over-long prompt) are counted but do
  not take an endpoint out: every endpoint would answer the same.
* All out: a request waits for the earliest endpoint to come back, up to ``max_wait`` seconds (the
  request timeout by default), and only then fails with ``FleetUnavailable`` (transient: the runner
  retries it with backoff).

The runner sees one ``Provider`` (``generate``, ``should_retry``, ``aclose``); ``endpoint_report``
gives the per-endpoint counts that ``envsim eval`` writes into ``summary.json`` (``endpoints``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from envsim.evaluation.endpoints.providers import Generation, Provider

FAILURE_THRESHOLD = 3
COOLDOWN_S = 30.0
MAX_COOLDOWN_S = 600.0
COUNTS = ("requests", "successes", "failures", "ejections")


class FleetUnavailable(RuntimeError):
    """Every endpoint of the fleet is out and none came back within the wait."""


@dataclass
class Endpoint:
    """One endpoint of a fleet: its provider, counters and health."""

    url: str
    provider: Provider
    requests: int = 0
    successes: int = 0
    failures: int = 0
    ejections: int = 0
    in_flight: int = 0
    consecutive_failures: int = 0
    out_until: float = 0.0
    cooldown: float = COOLDOWN_S
    probation: bool = False
    last_error: str | None = None
    errors: dict[str, int] = field(default_factory=dict)

    def healthy(self, now: float) -> bool:
        """In service at time ``now``."""
        return now >= self.out_until

    def report(self, now: float) -> dict[str, Any]:
        """Counters and health as JSON."""
        return {"url": self.url, "requests": self.requests, "successes": self.successes, "failures": self.failures,
                "ejections": self.ejections, "healthy_at_end": self.healthy(now),
                "errors": dict(sorted(self.errors.items(), key=lambda kv: -kv[1])), "last_error": self.last_error}


class FleetProvider:
    """Spreads ``generate`` calls over several providers (least outstanding requests, with ejection)."""

    def __init__(self, endpoints: Sequence[tuple[str, Provider]], *, failure_threshold: int = FAILURE_THRESHOLD,
                 cooldown: float = COOLDOWN_S, max_cooldown: float = MAX_COOLDOWN_S, max_wait: float = 120.0,
                 clock: Callable[[], float] = time.monotonic, log: Callable[[str], None] | None = None) -> None:
        if not endpoints:
            raise ValueError("a fleet needs at least one endpoint")
        urls = [url for url, _ in endpoints]
        if len(set(urls)) != len(urls):
            raise ValueError(f"the same endpoint is listed twice: {sorted({u for u in urls if urls.count(u) > 1})}")
        self.endpoints = [Endpoint(url, provider, cooldown=cooldown) for url, provider in endpoints]
        self.name = getattr(endpoints[0][1], "name", "fleet")
        self.failure_threshold = max(1, failure_threshold)
        self.base_cooldown = cooldown
        self.max_cooldown = max(cooldown, max_cooldown)
        self.max_wait = max_wait
        self.clock = clock
        self.log = log
        self._last_failed: dict[str, str] = {}      # sample id -> endpoint that failed it last

    def _pick(self, avoid: str | None) -> Endpoint | None:
        now = self.clock()
        healthy = [e for e in self.endpoints if e.healthy(now)]
        if len(healthy) > 1 and avoid is not None:
            healthy = [e for e in healthy if e.url != avoid] or healthy
        if not healthy:
            return None
        order = {e.url: i for i, e in enumerate(self.endpoints)}
        return min(healthy, key=lambda e: (e.in_flight, e.requests, order[e.url]))

    async def _acquire(self, avoid: str | None) -> Endpoint:
        waited = 0.0
        while True:
            endpoint = self._pick(avoid)
            if endpoint is not None:
                return endpoint
            now = self.clock()
            back = min(e.out_until for e in self.endpoints)
            delay = max(back - now, 0.01)
            if waited + delay > self.max_wait:
                raise FleetUnavailable(f"all {len(self.endpoints)} endpoints are out after repeated failures; the "
                                       f"first is back in {back - now:.0f}s (waited {waited:.0f}s)")
            await asyncio.sleep(delay)
            waited += delay

    def _failed(self, endpoint: Endpoint, exc: BaseException, transient: bool) -> None:
        kind = "timeout" if isinstance(exc, (asyncio.TimeoutError, asyncio.CancelledError)) else type(exc).__name__
        endpoint.failures += 1
        endpoint.errors[kind] = endpoint.errors.get(kind, 0) + 1
        endpoint.last_error = f"{kind}: {str(exc)[:200]}"
        if not transient or not endpoint.healthy(self.clock()):
            return                               # requests sent before an ejection do not extend it
        endpoint.consecutive_failures += 1
        if endpoint.probation or endpoint.consecutive_failures >= self.failure_threshold:
            if endpoint.probation:
                endpoint.cooldown = min(endpoint.cooldown * 2, self.max_cooldown)
            endpoint.out_until = self.clock() + endpoint.cooldown
            endpoint.ejections += 1
            endpoint.probation = True            # the next failure after its return ejects it again
            endpoint.consecutive_failures = 0
            if self.log is not None:
                self.log(f"endpoint {endpoint.url} out for {endpoint.cooldown:.0f}s after repeated failures "
                         f"({endpoint.last_error})")

    def _succeeded(self, endpoint: Endpoint) -> None:
        endpoint.successes += 1
        endpoint.consecutive_failures = 0
        endpoint.probation = False
        endpoint.cooldown = self.base_cooldown

    async def generate(self, messages: list[dict[str, str]], record: dict[str, Any]) -> Generation:
        """Send the request to the healthy endpoint with the fewest requests in flight."""
        key = str(record.get("id", id(record)))
        endpoint = await self._acquire(self._last_failed.get(key))
        endpoint.in_flight += 1
        endpoint.requests += 1
        try:
            generation = await endpoint.provider.generate(messages, record)
        except asyncio.CancelledError as exc:    # the caller's timeout: a slow endpoint counts as failing
            self._failed(endpoint, exc, transient=True)
            self._last_failed[key] = endpoint.url
            raise
        except Exception as exc:
            self._failed(endpoint, exc, transient=endpoint.provider.should_retry(exc))
            self._last_failed[key] = endpoint.url
            raise
        finally:
            endpoint.in_flight -= 1
        self._succeeded(endpoint)
        self._last_failed.pop(key, None)
        return generation

    def should_retry(self, exc: BaseException) -> bool:
        """Transient when any endpoint's provider says so; a fully-out fleet is transient too."""
        return isinstance(exc, FleetUnavailable) or any(e.provider.should_retry(exc) for e in self.endpoints)

    async def aclose(self) -> None:
        """Close every endpoint's client."""
        for endpoint in self.endpoints:
            close = getattr(endpoint.provider, "aclose", None)
            if close is not None:
                await close()

    def endpoint_report(self) -> list[dict[str, Any]]:
        """Per-endpoint counts (requests, successes, failures, ejections) and health."""
        now = self.clock()
        return [e.report(now) for e in self.endpoints]


def merge_reports(previous: Iterable[dict[str, Any]], current: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add the counts of a resumed run to those of earlier invocations (per URL; latest health wins)."""
    merged: dict[str, dict[str, Any]] = {}
    for row in [*previous, *current]:
        if not isinstance(row, dict) or "url" not in row:
            continue
        old = merged.get(row["url"])
        if old is None:
            merged[row["url"]] = {**row, "errors": dict(row.get("errors") or {})}
            continue
        for key in COUNTS:
            old[key] = int(old.get(key) or 0) + int(row.get(key) or 0)
        for kind, count in (row.get("errors") or {}).items():
            old["errors"][kind] = old["errors"].get(kind, 0) + count
        old["healthy_at_end"] = row.get("healthy_at_end")
        old["last_error"] = row.get("last_error") or old.get("last_error")
    return list(merged.values())


def read_url_file(path: Path) -> list[str]:
    """Endpoint URLs, one per line; blank lines and ``#`` comments are skipped."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def make_fleet(model: str, urls: Sequence[str], *, max_wait: float | None = None,
               log: Callable[[str], None] | None = None, **kwargs: Any) -> FleetProvider:
    """A fleet of OpenAI-compatible endpoints serving ``model`` (``kwargs`` as for the provider: timeout, ...)."""
    from envsim.evaluation.endpoints.providers import OpenAICompatibleProvider

    timeout = float(kwargs.get("timeout", 120.0))
    return FleetProvider([(url, OpenAICompatibleProvider(model, base_url=url, **kwargs)) for url in urls],
                         max_wait=timeout if max_wait is None else max_wait, log=log)


def format_endpoints(report: Sequence[dict[str, Any]]) -> str:
    """Console table of per-endpoint counts."""
    lines = [f"{'endpoint':40} {'requests':>8} {'ok':>6} {'failed':>6} {'ejected':>7}  health"]
    for row in report:
        lines.append(f"{row['url'][:40]:40} {row['requests']:>8} {row['successes']:>6} {row['failures']:>6} "
                     f"{row['ejections']:>7}  {'up' if row.get('healthy_at_end') else 'out'}")
    return "\n".join(lines)
