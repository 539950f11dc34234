"""The hot path of one chat-completions request: a body encoded once, posted over a pooled HTTP/1.1 connection,
the answer read as JSON. No per-request SDK work (the OpenAI SDK's request-body transform walks every message
and costs as much as the rest of the client), yet what users know from the SDK holds:

* the base URL: ``base_url``, else ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``, with
  ``/chat/completions`` appended; the key as ``Authorization: Bearer``, ``$OPENAI_ORG_ID`` /
  ``$OPENAI_PROJECT_ID`` as the SDK's ``OpenAI-Organization`` / ``OpenAI-Project`` headers;
* errors are the SDK's own exception classes with the SDK's messages (``openai.RateLimitError`` for a 429,
  ``openai.InternalServerError`` for a 5xx, ``openai.APITimeoutError``, ``openai.APIConnectionError``, ...),
  built only when a request fails, so ``import openai`` is never paid by a run that does not fail;
* the response body is capped (``http_limits.CappedTransport``) exactly as before.

Retries, backoff and timeouts stay with the runner (``RetryPolicy``), as with the SDK client (``max_retries=0``).
"""

from __future__ import annotations

import json
import os
import ssl
import sys
from typing import Any

from envsim.evaluation.http_limits import CappedTransport, httpx

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def chat_url(base_url: str | None) -> str:
    """The chat-completions URL of ``base_url`` as the OpenAI SDK resolves it (``$OPENAI_BASE_URL`` and the
    SDK's default when none is given; ``/chat/completions`` appended after one slash; a query string kept)."""
    base = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
    path, separator, query = base.partition("?")
    return path.rstrip("/") + "/chat/completions" + separator + query


def request_headers(api_key: str) -> dict[str, str]:
    """The headers of every request: JSON both ways, the key, and the SDK's organisation/project headers."""
    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "envsim",
               "Authorization": f"Bearer {api_key}"}
    for variable, header in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
        if os.environ.get(variable):
            headers[header] = os.environ[variable]
    return headers


def encode_body(payload: dict[str, Any]) -> bytes:
    """A request body as bytes (ASCII JSON: any string, even a lone surrogate, encodes)."""
    return json.dumps(payload).encode("ascii")


class ChatTransport:
    """POSTs pre-encoded chat-completions bodies to one endpoint over pooled keep-alive connections.

    The pool is a stack of idle one-connection HTTP clients: a request takes one (or opens a new one) and
    gives it back when its answer is read, so choosing a connection costs O(1) at any concurrency (an HTTP
    client's own pool scans and polls every connection it holds on each request: at concurrency 64 that was
    the client's largest CPU cost). Clients are created in the event loop that uses them; ``aclose`` closes
    them all (a later request opens new ones, e.g. in the run's loop after the preflight's)."""

    def __init__(self, base_url: str | None, api_key: str, timeout: float, max_response_bytes: int) -> None:
        self.url = chat_url(base_url)
        self.headers = request_headers(api_key)
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._idle: list[Any] = []
        self._open: set[Any] = set()
        self._tls: Any = None

    def _new_client(self) -> Any:
        if self._tls is None:  # one certificate store for every connection (loading it is ~20 ms each time)
            # a plain http:// endpoint never handshakes: a verifying context without loaded certificates (it
            # would refuse any certificate) costs nothing to make
            self._tls = (httpx.create_ssl_context() if not self.url.startswith("http://")
                         else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        transport = CappedTransport(httpx.AsyncHTTPTransport(verify=self._tls, limits=limits), self.max_response_bytes)
        client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(self.timeout), headers=self.headers)
        self._open.add(client)
        return client

    async def post(self, body: bytes) -> Any:
        """The decoded JSON answer to ``body``. Raises the OpenAI SDK's exception for an error status, a
        timeout or a failed connection; ``http_limits.ResponseTooLarge`` past the body cap."""
        client = self._idle.pop() if self._idle else self._new_client()
        try:
            request = client.build_request("POST", self.url, content=body)
            try:
                response = await client.send(request)
            except httpx.TimeoutException as err:
                openai = await sdk()
                raise openai.APITimeoutError(request=request) from err
            except (httpx.RequestError, ssl.SSLError) as err:
                openai = await sdk()
                raise openai.APIConnectionError(request=request) from err
        finally:
            if client in self._open:  # not closed meanwhile by aclose
                self._idle.append(client)
        if response.status_code >= 400:
            await sdk()
            raise status_error(response)
        try:
            return json.loads(response.content)
        except (ValueError, RecursionError):
            from envsim.evaluation.providers import EndpointResponseError

            raise EndpointResponseError(f"HTTP {response.status_code} response is not JSON: "
                                        f"{response.content[:80]!r}") from None

    async def aclose(self) -> None:
        """Close every connection (the next request opens new ones)."""
        clients, self._open, self._idle = self._open, set(), []
        for client in clients:
            await client.aclose()


async def sdk() -> Any:
    """The ``openai`` module; its first import (~0.7 s) runs in a worker thread, so the event loop goes on
    serving the other samples (and their timeouts) meanwhile."""
    module = sys.modules.get("openai")
    if module is None:
        import asyncio
        import importlib

        module = await asyncio.to_thread(importlib.import_module, "openai")
    return module


def status_error(response: Any) -> Exception:
    """The OpenAI SDK's exception for an error response, with the SDK's message (``Error code: 429 - ...``)
    and body (its ``error`` object when there is one)."""
    import openai

    message = f"Error code: {response.status_code}"
    text = response.text.strip()
    body: Any = text
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        pass
    else:
        error = body.get("error", body) if isinstance(body, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        if isinstance(detail, str) and detail:
            message += f" - {detail}"
    data = body.get("error", body) if isinstance(body, dict) else body
    kinds = {400: openai.BadRequestError, 401: openai.AuthenticationError, 403: openai.PermissionDeniedError,
             404: openai.NotFoundError, 409: openai.ConflictError, 422: openai.UnprocessableEntityError,
             429: openai.RateLimitError}
    kind = kinds.get(response.status_code) or (openai.InternalServerError if response.status_code >= 500
                                               else openai.APIStatusError)
    return kind(message, response=response, body=data)
