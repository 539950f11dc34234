"""Preflight of an evaluation: before the first sample, check that the endpoint can be reached, with
the run's own settings, and show the server's own words when it cannot.

Two checks, in order:

1. **Credentials.** A model name other than the built-in baselines without ``--base-url`` goes to
   the OpenAI SDK's default endpoint (``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``), which
   needs an API key: without one (``--api-key`` or ``$OPENAI_API_KEY``) the run is refused before any
   request. A ``--base-url`` without a key is fine (local servers accept any key).
2. **One real request** per endpoint (``OpenAICompatibleProvider.probe``: the run's model, temperature
   and extra request fields, a one-line prompt, at most 16 answer tokens). Transient failures are
   retried twice with the run's backoff. An endpoint that does not answer fails the preflight with
   the HTTP status and the server's error message (or the connection error and the URL).

A fleet (several ``--base-url``) passes when at least one endpoint answers; the others are named.
With ``--response-format json-schema`` the probe carries the run's ``response_format`` field; an endpoint that
refuses the request (HTTP 400, 415, 422 or 501: no structured output there) fails the preflight with a message
naming ``--response-format``.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from envsim.control_chars import escape_controls
from envsim.evaluation.endpoints.providers import describe_error
from envsim.evaluation.running.runner import RetryPolicy

BASELINES = ("null", "oracle", "executor")
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
PREFLIGHT_RETRIES = 2
#: HTTP statuses of an endpoint that refuses a request field it does not support (here: ``response_format``).
REFUSED_STATUSES = (400, 415, 422, 501)


class PreflightFailed(RuntimeError):
    """The endpoint cannot serve the run (message: what failed, in the server's words, and what to do)."""


@dataclass
class EndpointCheck:
    """The outcome of one endpoint's probe request."""

    url: str
    ok: bool
    detail: str
    latency_s: float | None = None
    status: int | None = None  # the HTTP status of a refused probe


def refused_format(check: EndpointCheck) -> bool:
    """Whether a failed probe was the endpoint refusing the ``response_format`` field: a refusal status, or a
    server error that names the field (llama-cpp-python's own server answers OpenAI's ``json_schema`` type with
    HTTP 500 and a validation error naming ``response_format``)."""
    return check.status in REFUSED_STATUSES or (check.status == 500 and "response_format" in check.detail)


def default_url() -> str:
    """The endpoint the OpenAI SDK uses when no base URL is given."""
    return os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL


def check_credentials(model: str, urls: Sequence[str], api_key: str | None) -> None:
    """Refuse a run that would go to the default hosted endpoint without an API key."""
    if urls or model in BASELINES or api_key:
        return
    raise PreflightFailed(
        f"no --base-url and no API key: model {model!r} would be sent to {default_url()}, which needs a key. "
        "Pass --api-key (or set OPENAI_API_KEY), or point --base-url at your server, e.g. "
        "--base-url http://localhost:8000/v1 (a local server needs no key). The built-in baselines are "
        "--model null, --model oracle and --model executor.")


async def probe_endpoint(url: str, provider: Any, policy: RetryPolicy) -> EndpointCheck:
    """Send the provider's probe request (retrying transient failures twice); never raises."""
    attempt = 0
    started = time.monotonic()
    while True:
        attempt += 1
        try:
            await asyncio.wait_for(provider.probe(), timeout=policy.timeout)
            return EndpointCheck(url, True, "answered", round(time.monotonic() - started, 3))
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none raised
            transient = isinstance(exc, asyncio.TimeoutError) or provider.should_retry(exc)
            if transient and attempt <= PREFLIGHT_RETRIES:
                await asyncio.sleep(policy.delay(attempt))
                continue
            return EndpointCheck(url, False, describe_error(exc, url, policy.timeout),
                                 status=getattr(exc, "status_code", None))


def endpoints_of(provider: Any, urls: Sequence[str]) -> list[tuple[str, Any]]:
    """``(url, provider)`` pairs to probe: each member of a fleet, or the one provider."""
    members = getattr(provider, "endpoints", None)
    if members is not None:
        return [(member.url, member.provider) for member in members]
    return [(urls[0] if urls else default_url(), provider)]


async def run_preflight(provider: Any, urls: Sequence[str], policy: RetryPolicy,
                        response_format: str = "free") -> list[EndpointCheck]:
    """Probe every endpoint concurrently; raise ``PreflightFailed`` when none answers (naming
    ``--response-format`` when a ``json-schema`` probe was refused).

    Providers without a ``probe`` (the built-in baselines) pass without a request."""
    targets = [(url, member) for url, member in endpoints_of(provider, urls) if hasattr(member, "probe")]
    if not targets:
        return []
    checks = list(await asyncio.gather(*(probe_endpoint(url, member, policy) for url, member in targets)))
    if not any(check.ok for check in checks):
        details = "; ".join(escape_controls(check.detail) for check in checks)  # the server's words, shown
        if response_format != "free" and any(refused_format(check) for check in checks):
            raise PreflightFailed(
                f"preflight failed, no sample was sent: the endpoint refused the request with --response-format "
                f"{response_format} ({details}). It does not accept a response_format with a JSON schema: run with "
                "--response-format free, or serve the model with structured output (vLLM guided decoding, the "
                "llama.cpp server).")
        raise PreflightFailed(f"preflight failed, no sample was sent: {details}. Check --model, --base-url and "
                              "the API key (--api-key / OPENAI_API_KEY), or skip this check with --no-preflight.")
    return checks


def preflight(model: str, provider: Any, urls: Sequence[str], api_key: str | None, policy: RetryPolicy,
              response_format: str = "free") -> list[EndpointCheck]:
    """Both checks, from synchronous code (the probe clients are closed afterwards, so the run's
    event loop starts with fresh connections); ``response_format``: the run's ``--response-format``."""
    check_credentials(model, urls, api_key)

    async def probe_and_close() -> list[EndpointCheck]:
        try:
            return await run_preflight(provider, urls, policy, response_format)
        finally:
            for _url, member in endpoints_of(provider, urls):
                reset = getattr(member, "reset_client", None)
                if reset is not None:
                    await reset()

    return asyncio.run(probe_and_close())


def announce(checks: Sequence[EndpointCheck], echo: Callable[[str], Any]) -> None:
    """One line per checked endpoint: its latency, or why it did not answer (the run goes on with the others)."""
    for check in checks:
        if check.ok:
            echo(f"preflight: {escape_controls(check.url)} answered in {check.latency_s:.2f} s")
        else:
            echo(f"warning: preflight: {escape_controls(check.detail)} (the run goes on with the endpoints that "
                 "answered)")
