"""The hot path of one chat-completions request: a body encoded once, posted over a pooled HTTP/1.1 connection
(asyncio streams and ``h11``), the answer read as JSON. No per-request SDK work (the OpenAI SDK's request-body
transform walks every message and costs as much as the rest of the client), yet what users know from the SDK
holds (behind a proxy named by ``$HTTP_PROXY`` and the like, ``proxy_for``, the provider sends through the SDK):

* the base URL: ``base_url``, else ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``, with
  ``/chat/completions`` appended; the key as ``Authorization: Bearer``, ``$OPENAI_ORG_ID`` /
  ``$OPENAI_PROJECT_ID`` as the SDK's ``OpenAI-Organization`` / ``OpenAI-Project`` headers;
* errors are the SDK's own exception classes with the SDK's messages (``openai.RateLimitError`` for a 429,
  ``openai.InternalServerError`` for a 5xx, ``openai.APITimeoutError``, ``openai.APIConnectionError``, ...),
  built only when a request fails, so ``import openai`` is never paid by a run that does not fail;
* the response body is capped (``http_limits.CappedBody``: the rules of ``CappedTransport``) exactly as before.

Retries, backoff and timeouts stay with the runner (``RetryPolicy``), as with the SDK client (``max_retries=0``).
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import sys
from typing import Any
from urllib.parse import urlsplit

import h11

from envsim.evaluation.endpoints.http_limits import CappedBody, httpx_module

#: Bytes read from a connection at a time.
READ_CHUNK = 1 << 16

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


def proxy_for(url: str) -> str | None:
    """The proxy the OpenAI SDK (httpx, reading the environment) would send a request to ``url`` through:
    ``$HTTP_PROXY`` / ``$HTTPS_PROXY`` / ``$ALL_PROXY`` (any case) unless ``$NO_PROXY`` exempts the host;
    ``None`` for a direct connection."""
    import urllib.request

    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass_environment(parts.hostname or "", proxies):
        return None
    return proxy


def encode_body(payload: dict[str, Any]) -> bytes:
    """A request body as bytes (ASCII JSON: any string, even a lone surrogate, encodes)."""
    return json.dumps(payload).encode("ascii")


class ServerClosed(ConnectionError):
    """The server accepted the connection and the request, then closed or reset it, or broke the HTTP exchange,
    before a whole response: it is up, and did not answer (not "cannot connect")."""

    @classmethod
    def during_exchange(cls, err: BaseException) -> "ServerClosed":
        """The ``ServerClosed`` of an error raised while a request was sent and its response read."""
        if isinstance(err, h11.ProtocolError) and "closed" not in str(err).lower():
            return cls(f"broke the HTTP exchange ({type(err).__name__}: {str(err)[:200]})")
        return cls(f"closed the connection without a whole response ({type(err).__name__}: {str(err)[:200]})")


class _Connection:
    """One keep-alive connection: asyncio streams and the h11 state machine of its HTTP/1.1 exchanges."""

    __slots__ = ("reader", "writer", "h11")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.h11 = reader, writer, h11.Connection(h11.CLIENT)

    def reusable(self) -> bool:
        """Whether the next request may go over it (the last exchange ended cleanly, the server has not closed)."""
        return not (self.reader.at_eof() or self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


class ChatTransport:
    """POSTs pre-encoded chat-completions bodies to one endpoint over pooled keep-alive HTTP/1.1 connections.

    Each connection is an asyncio stream pair driven by ``h11`` (the HTTP/1.1 state machine httpx itself is built
    on), without an HTTP client's per-request machinery: at concurrency 64 an httpx client cost ~0.8 ms of CPU
    per request, this path ~0.1 ms (``benchmarks/eval_overhead.py``). Idle connections are a stack, so picking
    one costs O(1); one the server closed meanwhile is dropped, not used. Connections belong to the event loop
    that opened them; ``aclose`` closes them all (a later request opens new ones, e.g. in the run's loop after
    the preflight's). Timeouts of a whole request are the caller's (``RetryPolicy.timeout``); opening a
    connection is bounded by ``timeout`` here too."""

    def __init__(self, base_url: str | None, api_key: str, timeout: float, max_response_bytes: int) -> None:
        self.url = chat_url(base_url)
        parts = urlsplit(self.url)
        self.https = parts.scheme == "https"
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {self.url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host_header = parts.netloc.rpartition("@")[2]
        self.headers = [("Host", host_header), *request_headers(api_key).items(), ("Accept-Encoding", "identity")]
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()
        self._tls: Any = None

    async def _connect(self) -> _Connection:
        if self.https and self._tls is None:  # one certificate store for every connection (~20 ms to load)
            self._tls = httpx_module().create_ssl_context()
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, ssl=self._tls if self.https else None,
                                    server_hostname=self.host if self.https else None, limit=READ_CHUNK),
            self.timeout)
        connection = _Connection(reader, writer)
        self._open.add(connection)
        return connection

    async def post(self, body: bytes) -> Any:
        """The decoded JSON answer to ``body``. Raises the OpenAI SDK's exception for an error status, a
        timeout or a failed connection; ``http_limits.ResponseTooLarge`` past the body cap."""
        connection = None
        while self._idle and connection is None:
            candidate = self._idle.pop()
            if candidate.reusable():
                connection = candidate
            else:
                self._discard(candidate)
        exchanging = False
        try:
            if connection is None:
                connection = await self._connect()
            exchanging = True
            status, headers, content = await self._exchange(connection, body)
        except BaseException as err:
            if connection is not None:
                self._discard(connection)
            if isinstance(err, asyncio.TimeoutError) and not exchanging:  # opening the connection took too long
                openai = await sdk()
                raise openai.APITimeoutError(request=self._request()) from err
            if isinstance(err, (OSError, h11.ProtocolError, ssl.SSLError, asyncio.IncompleteReadError, EOFError)):
                openai = await sdk()
                # connected, the request sent: the server closed (or broke) the exchange; it did not refuse us
                cause = ServerClosed.during_exchange(err) if exchanging else err
                raise openai.APIConnectionError(request=self._request()) from cause
            raise
        if connection.h11.our_state is h11.DONE and connection.h11.their_state is h11.DONE \
                and connection in self._open:
            connection.h11.start_next_cycle()
            self._idle.append(connection)
        else:
            self._discard(connection)
        if status >= 400:
            await sdk()
            raise status_error(self._response(status, headers, content))
        try:
            return json.loads(content)
        except (ValueError, RecursionError):
            from envsim.evaluation.endpoints.providers import EndpointResponseError

            raise EndpointResponseError(f"HTTP {status} response is not JSON: {content[:80]!r}") from None

    async def _exchange(self, connection: _Connection, body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Send one request and read its whole response (status, headers, body decoded and capped)."""
        machine = connection.h11
        connection.writer.write(
            machine.send(h11.Request(method="POST", target=self.target,
                                     headers=[*self.headers, ("Content-Length", str(len(body)))]))
            + machine.send(h11.Data(data=body)) + machine.send(h11.EndOfMessage()))
        status, headers, body_reader = 0, [], None
        chunks: list[bytes] = []
        while True:
            event = machine.next_event()
            if event is h11.NEED_DATA:
                machine.receive_data(await connection.reader.read(READ_CHUNK))  # b"": the server closed
            elif isinstance(event, h11.Response):
                status, headers = event.status_code, list(event.headers)
                body_reader = CappedBody(self.max_response_bytes, status, headers)
            elif isinstance(event, h11.Data):
                if body_reader is not None:
                    chunks.append(body_reader.take(bytes(event.data)))
            elif isinstance(event, h11.EndOfMessage):
                return status, headers, b"".join(chunks)
            elif isinstance(event, h11.ConnectionClosed):
                raise EOFError("the server closed the connection without a response")
            # an informational (1xx) response: the final one follows

    def _request(self) -> Any:
        return httpx_module().Request("POST", self.url)

    def _response(self, status: int, headers: list[tuple[bytes, bytes]], content: bytes) -> Any:
        """An ``httpx.Response`` of an error answer (what the SDK's exceptions carry)."""
        kept = [(k, v) for k, v in headers if k.lower() not in (b"content-encoding", b"content-length",
                                                                 b"transfer-encoding")]
        return httpx_module().Response(status, headers=kept, content=content, request=self._request())

    def _discard(self, connection: _Connection) -> None:
        self._open.discard(connection)
        connection.close()

    async def aclose(self) -> None:
        """Close every connection (the next request opens new ones)."""
        connections, self._open, self._idle = self._open, set(), []
        for connection in connections:
            connection.close()


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
