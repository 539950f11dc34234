"""The OpenAI SDK's HTTP client with the response-body cap of ``http_limits``: its transport asks for
uncompressed bodies and counts each body as it arrives (after decoding), stopping at the cap with
``ResponseTooLarge``. Only the SDK path needs it (``OpenAICompatibleProvider.client``); the chat requests
of a run go through ``chat_http`` and ``http_limits.CappedBody``."""

from __future__ import annotations

import zlib
from typing import Any, AsyncIterator

from envsim.evaluation.endpoints.http_limits import (DEFAULT_MAX_RESPONSE_BYTES, ResponseEncodingRefused, ResponseTooLarge,
                                           _ZLIB_ENCODINGS, httpx_module)

httpx = httpx_module()


class _CappedStream(httpx.AsyncByteStream):
    """The body of one response, counted (after decoding) against a byte budget."""

    def __init__(self, inner: Any, limit: int, status: int, wbits: int | None) -> None:
        self._inner = inner
        self._limit = limit
        self._status = status
        self._decoder = zlib.decompressobj(wbits) if wbits is not None else None

    def _decode(self, chunk: bytes, budget: int) -> bytes:
        if self._decoder is None:
            return chunk
        try:  # at most budget + 1 bytes out: enough to know the cap is passed, never more in memory
            return self._decoder.decompress(chunk, budget + 1)
        except zlib.error as exc:
            raise ResponseEncodingRefused(f"compressed response body is corrupt: {exc}") from None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self._inner:
            data = self._decode(chunk, self._limit - total)
            total += len(data)
            if total > self._limit:
                raise ResponseTooLarge(self._limit, self._status)
            if data:
                yield data
            while self._decoder is not None and self._decoder.unconsumed_tail:
                data = self._decode(self._decoder.unconsumed_tail, self._limit - total)
                total += len(data)
                if total > self._limit:
                    raise ResponseTooLarge(self._limit, self._status)
                if data:
                    yield data

    async def aclose(self) -> None:
        """Close the underlying connection stream."""
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


class CappedTransport(httpx.AsyncBaseTransport):
    """Wraps a transport: asks for uncompressed bodies and caps their size at ``limit`` bytes."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self.limit = limit

    async def handle_async_request(self, request: Any) -> Any:
        """Send ``request``; the response's body stream raises ``ResponseTooLarge`` past the cap."""
        request.headers["Accept-Encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        headers = [(k, v) for k, v in response.headers.multi_items()]
        encoding = response.headers.get("content-encoding", "identity").strip().lower() or "identity"
        length = response.headers.get("content-length", "")
        try:
            if encoding == "identity" and length.strip().isdigit() and int(length) > self.limit:
                raise ResponseTooLarge(self.limit, response.status_code)  # known before reading a byte
            if encoding != "identity" and encoding not in _ZLIB_ENCODINGS:
                raise ResponseEncodingRefused(f"endpoint sent Content-Encoding {encoding[:40]!r} although "
                                              "asked for identity; its size cannot be bounded")
        except Exception:
            await response.aclose()
            raise
        wbits = _ZLIB_ENCODINGS.get(encoding)
        if wbits is not None:  # decoded here, so httpx must not decode again
            headers = [(k, v) for k, v in headers if k.lower() not in ("content-encoding", "content-length")]
        stream = _CappedStream(response.stream, self.limit, response.status_code, wbits)
        return httpx.Response(response.status_code, headers=headers, stream=stream, extensions=response.extensions)

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()


def capped_http_client(limit: int = DEFAULT_MAX_RESPONSE_BYTES, proxy: str | None = None, **kwargs: Any) -> Any:
    """An async HTTP client for ``openai.AsyncOpenAI(http_client=...)`` with the OpenAI defaults and a body cap,
    sending through ``proxy`` when one is given (a client with its own transport ignores the proxy variables)."""
    import openai

    limits = kwargs.pop("limits", None)
    if limits is None:
        try:
            from openai._constants import DEFAULT_CONNECTION_LIMITS as limits  # noqa: N811
        except ImportError:  # pragma: no cover
            limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
    transport = CappedTransport(httpx.AsyncHTTPTransport(limits=limits, proxy=proxy), limit)
    factory = getattr(openai, "DefaultAsyncHttpxClient", httpx.AsyncClient)
    return factory(transport=transport, **kwargs)
