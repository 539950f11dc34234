"""Model providers: small classes with ``generate`` and ``should_retry``; the runner owns retries,
timeouts and concurrency. Built-ins: ``null`` (predicts no change), ``oracle`` (runs the real tool),
``executor`` (runs the code shown in the prompt on the state shown there: ``executor_baseline.py``) and any
OpenAI-compatible chat endpoint."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class Generation:
    """One model answer with its token counts (when the server reports them)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    problem: str | None = None  # why this answer is a scored failure before parsing (too large, not text)


class Provider(Protocol):
    """What the runner needs from a model."""

    name: str

    async def generate(self, messages: list[dict[str, str]], record: dict[str, Any]) -> Generation: ...

    def should_retry(self, exc: BaseException) -> bool: ...


class NullProvider:
    """Baseline: the error-free no-change answer ``{"observation": {"success": true}, "patch": []}``."""

    name = "null"

    async def generate(self, messages: list[dict[str, str]], record: dict[str, Any]) -> Generation:
        """Always the same answer."""
        return Generation(json.dumps({"observation": {"success": True}, "patch": []}))

    def should_retry(self, exc: BaseException) -> bool:
        """Never fails, never retries."""
        return False


class OracleProvider:
    """Baseline: executes the real tool on the record's state (a self-check of labels and scorer)."""

    name = "oracle"

    async def generate(self, messages: list[dict[str, str]], record: dict[str, Any]) -> Generation:
        """Run the environment's code and answer its true observation and Δ."""
        return Generation(oracle_answer(record))

    def should_retry(self, exc: BaseException) -> bool:
        """Errors of the oracle are bugs, not transient."""
        return False


def oracle_answer(record: dict[str, Any]) -> str:
    """The true answer for a record, computed by executing the registered environment now."""
    from envsim.envs.sandbox import execute
    from envsim.envs.registry import get_env

    from envsim.envs.adapters.tau import is_tau

    env_class = get_env(record["env"])
    if record.get("origin") == "tau_bench" or is_tau(env_class):  # large states: labelled on touched records
        from envsim.construction.traced_labelling import label_traced

        transition, _ = label_traced(env_class, record["state"], record["action"], check_determinism=False)
    else:
        transition = execute(env_class, record["state"], record["action"])
    return json.dumps({"observation": transition.observation, "patch": transition.patch})


#: Request fields that define what is asked and how the answer is read: ``--extra`` may not set them. ``model`` and
#: ``messages`` are the run's model and prompt; ``temperature`` and ``max_tokens`` have their own options and are
#: recorded with the run; ``stream`` would turn the answer into server-sent events the client does not read;
#: ``n`` would ask for several answers of which one is scored (and all are paid for).
CORE_REQUEST_FIELDS = ("model", "messages", "temperature", "max_tokens", "stream", "n")
#: The option that sets a core field instead, where one does.
_FIELD_OPTIONS = {"model": "--model", "messages": "the benchmark and --prompt-mode", "temperature": "--temperature",
                  "max_tokens": "--max-tokens"}


def core_field_problem(extra: Any) -> str | None:
    """Why the extra request fields ``extra`` cannot be sent (they would replace a core request field:
    ``CORE_REQUEST_FIELDS``), or ``None`` when they can."""
    if not isinstance(extra, dict):
        return None
    clashes = [name for name in CORE_REQUEST_FIELDS if name in extra]
    if not clashes:
        return None
    instead = "; ".join(f"{name} with {_FIELD_OPTIONS[name]}" for name in clashes if name in _FIELD_OPTIONS)
    return (f"cannot set {', '.join(clashes)}: the core request fields ({', '.join(CORE_REQUEST_FIELDS)}) define "
            "what is asked and how the answer is read, and no extra field replaces them"
            + (f" (set {instead})" if instead else ""))


PROBE_MESSAGES = [{"role": "user", "content": "Reply with the JSON object {} and nothing else."}]
PROBE_MAX_TOKENS = 16


class OpenAICompatibleProvider:
    """Any OpenAI-compatible chat-completions endpoint (vLLM, transformers serve, hosted APIs).

    Requests go through ``chat_http.ChatTransport`` (one JSON encoding per request, pooled connections, the
    SDK's errors), or through the SDK's client when the environment names a proxy for the URL (``$HTTP_PROXY``
    ...). ``client`` is an ``openai.AsyncOpenAI`` with the same settings, created (and ``openai`` imported) on
    first use."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 temperature: float = 0.0, max_tokens: int = 2048, timeout: float = 120.0,
                 extra_body: dict[str, Any] | None = None, max_response_bytes: int | None = None) -> None:
        from envsim.evaluation.endpoints.chat_http import ChatTransport, proxy_for
        from envsim.evaluation.endpoints.http_limits import DEFAULT_MAX_RESPONSE_BYTES

        problem = core_field_problem(extra_body)
        if problem:
            raise ValueError(f"extra request fields {problem}")
        self.name = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = extra_body or {}
        self.max_response_bytes = int(max_response_bytes or DEFAULT_MAX_RESPONSE_BYTES)
        self._client_args = {"base_url": base_url, "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
                             "timeout": timeout}
        self._sdk_client: Any = None
        self.transport = ChatTransport(base_url, self._client_args["api_key"], timeout, self.max_response_bytes)
        # behind a proxy the SDK's own client sends (it speaks to proxies; the pooled transport connects directly)
        self.proxy = proxy_for(self.transport.url)

    @property
    def client(self) -> Any:
        """An ``openai.AsyncOpenAI`` client with this provider's URL, key, timeout and body cap (no retries)."""
        if self._sdk_client is None:
            import openai

            from envsim.evaluation.endpoints.capped_client import capped_http_client

            self._sdk_client = openai.AsyncOpenAI(**self._client_args, max_retries=0,
                                                  http_client=capped_http_client(self.max_response_bytes, self.proxy,
                                                                                 timeout=self._client_args["timeout"]))
        return self._sdk_client

    async def reset_client(self) -> None:
        """Close the HTTP connections (they belong to the event loop that opened them: call this before the
        provider is used from another ``asyncio.run``); the next request opens fresh ones."""
        await self.aclose()

    def _request(self, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
        """The JSON body of one chat-completions request, as the SDK would send it: the fields of ``extra_body``
        (e.g. ``response_format``) at the top level, then the run's own settings, which nothing overrides."""
        return {**self.extra_body, "model": self.name, "messages": messages, "temperature": self.temperature,
                "max_tokens": max_tokens}

    async def probe(self) -> Generation:
        """One tiny request with the run's settings (model, temperature, extra fields; at most
        ``PROBE_MAX_TOKENS`` answer tokens): the preflight's proof that the endpoint answers."""
        return await self._complete(self._request(PROBE_MESSAGES, min(self.max_tokens, PROBE_MAX_TOKENS)))

    async def generate(self, messages: list[dict[str, str]], record: dict[str, Any]) -> Generation:
        """One chat completion with the run's settings."""
        return await self._complete(self._request(messages, self.max_tokens))

    async def _complete(self, payload: dict[str, Any]) -> Generation:
        from envsim.evaluation.endpoints.chat_http import encode_body
        from envsim.evaluation.endpoints.http_limits import ResponseTooLarge

        try:
            if self.proxy is None:
                response = await self.transport.post(encode_body(payload))
            else:
                response = await self._complete_with_sdk(payload)
        except ResponseTooLarge as exc:
            if exc.status >= 400:  # an error page, not an answer: the endpoint is at fault
                raise EndpointResponseError(f"HTTP {exc.status} error response exceeded {exc.limit} bytes") from None
            return Generation("", problem=str(exc))  # the model produced it: a scored failure
        return generation_of(response)

    async def _complete_with_sdk(self, payload: dict[str, Any]) -> Any:
        """The decoded response of ``payload`` sent by the SDK's client (used behind a proxy)."""
        settings = {key: payload[key] for key in ("model", "messages", "temperature", "max_tokens")}
        extra = {key: value for key, value in payload.items() if key not in settings}
        response = await self.client.chat.completions.create(**settings, extra_body=extra or None)
        return response.model_dump()

    async def aclose(self) -> None:
        """Close the HTTP connections (call before the event loop ends)."""
        await self.transport.aclose()
        if self._sdk_client is not None:
            client, self._sdk_client = self._sdk_client, None
            await client.close()

    def should_retry(self, exc: BaseException) -> bool:
        """Retry rate limits, server errors, timeouts and dropped connections."""
        if isinstance(exc, TimeoutError):
            return True
        o = sys.modules.get("openai")
        if o is None:  # not imported: ``exc`` is none of its errors (never imported here, in the event loop)
            return False

        if isinstance(exc, (o.RateLimitError, o.APITimeoutError, o.APIConnectionError, o.InternalServerError)):
            return True
        if isinstance(exc, o.APIStatusError):
            return exc.status_code in (408, 409, 425, 429) or exc.status_code >= 500
        return False


def generation_of(response: Any) -> Generation:
    """The answer text and token counts of a decoded chat-completions response; ``ValueError`` /
    ``EndpointResponseError`` when it is not one."""
    choices = response.get("choices") if isinstance(response, dict) else None
    if not choices or not isinstance(choices, list):
        raise ValueError("the endpoint returned no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if message is None:
        raise EndpointResponseError("the endpoint returned a choice without a message")
    text = message.get("content") if isinstance(message, dict) else None
    usage = response.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    tokens = (_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))
    if text is not None and not isinstance(text, str):
        return Generation("", *tokens, problem=f"response content is {_json_kind(text)}, not text")
    return Generation(text or "", *tokens)


class EndpointResponseError(RuntimeError):
    """The endpoint answered something that is not a chat completion (its fault, not the model's)."""


def _count(value: Any) -> int | None:
    """A token count as reported, or ``None`` when it is not a plain non-negative integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**12 else None


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def describe_error(exc: BaseException, url: str | None = None, timeout: float | None = None) -> str:
    """What went wrong with a request, with the server's own message when it sent one (``url``:
    default the URL of the failed request, when the exception carries it)."""
    url = url or _request_url(exc)
    openai = sys.modules.get("openai")
    if openai is None:  # not imported: ``exc`` is none of its errors
        if isinstance(exc, asyncio.TimeoutError):
            return f"no answer from {url} within {timeout or '?'} s"
        return f"{type(exc).__name__} from {url}: {str(exc)[:300]}"
    if isinstance(exc, (asyncio.TimeoutError, openai.APITimeoutError)):
        return f"no answer from {url} within {timeout or '?'} s"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code} from {url}: {server_message(exc.body, exc.message)}"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        from envsim.evaluation.endpoints.chat_http import ServerClosed

        if isinstance(cause, ServerClosed):  # connected and sent: the server is up and did not answer
            return f"{url} {str(cause)[:400]}"
        said = f"{type(cause).__name__}: {str(cause)[:300]}" if cause else str(exc)[:300]
        if _disconnected(cause):
            return f"{url} closed the connection without answering ({said})"
        return f"cannot connect to {url}: {said}"
    return f"{type(exc).__name__} from {url}: {str(exc)[:300]}"


def _disconnected(cause: BaseException | None) -> bool:
    """Whether a connection error of the SDK's own client (used behind a proxy) is httpx's "server disconnected
    without sending a response" (the server was reached), not a failed connection."""
    httpx = sys.modules.get("httpx")
    return httpx is not None and isinstance(cause, httpx.RemoteProtocolError)


def failure_reason(exc: BaseException, timeout: float | None = None) -> str:
    """The reason a failed request is recorded with: its kind (``timeout`` or the exception's class) once, then
    what ``describe_error`` says (``ValueError from URL: ...``, not ``ValueError: ValueError from URL: ...``)."""
    kind = "timeout" if isinstance(exc, asyncio.TimeoutError) else type(exc).__name__
    detail = describe_error(exc, timeout=timeout)
    return detail if detail.startswith(kind) else f"{kind}: {detail}"


def _request_url(exc: BaseException) -> str:
    """The URL of the request an SDK exception belongs to (``"the endpoint"`` when it has none)."""
    try:
        return str(exc.request.url)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - any exception without a request
        return "the endpoint"


def server_message(body: Any, fallback: str) -> str:
    """The error text of an error response body (OpenAI's ``{"error": {"message"}}``, FastAPI's
    ``{"detail"}``, a plain ``{"message"}`` or text), cut to 300 characters."""
    found: Any = None
    if isinstance(body, dict):
        error = body.get("error")
        found = (error.get("message") if isinstance(error, dict) else error) or body.get("message") \
            or body.get("detail")
    elif isinstance(body, str):
        found = body
    text = str(found if found not in (None, "") else fallback).strip()
    return text[:300] + ("…" if len(text) > 300 else "")


def make_provider(model: str, base_url: str | None = None, **kwargs: Any) -> Provider:
    """``null``, ``oracle`` and ``executor`` are built-in; any other name is served by an OpenAI-compatible endpoint."""
    if model == "null" and base_url is None:
        return NullProvider()
    if model == "oracle" and base_url is None:
        return OracleProvider()
    if model == "executor" and base_url is None:
        from envsim.evaluation.baselines.executor_baseline import ExecutorProvider

        return ExecutorProvider()
    return OpenAICompatibleProvider(model, base_url=base_url, **kwargs)


def now() -> float:
    """Monotonic seconds (latency measurement)."""
    return time.monotonic()
