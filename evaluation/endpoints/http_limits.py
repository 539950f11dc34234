"""A cap on the size of HTTP response bodies from model endpoints.

An endpoint (or the model behind it) can answer 100 MB; read whole, at concurrency 8 that is a
gigabyte before any parsing starts. ``capped_http_client`` gives the OpenAI client an HTTP client
whose transport counts the body as it arrives and stops at ``limit`` bytes with
``ResponseTooLarge``. The bytes counted are the decoded ones: requests ask for
``Accept-Encoding: identity``; a gzip/deflate body sent anyway is decoded here with the same
budget (so a small compressed bomb cannot expand past it) and any other encoding is refused
(``ResponseEncodingRefused``), since its expansion could not be bounded.

This module holds the rules and the hand-read body (``CappedBody``, what ``chat_http`` uses on every request);
the SDK's HTTP client with the same cap is in ``capped_client`` (it imports ``httpx``, ~0.1 s, which a run
that never builds the SDK client does not pay).
"""

from __future__ import annotations

import zlib
from typing import Any

DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
_ZLIB_ENCODINGS = {"gzip": 47, "x-gzip": 47, "deflate": 47}  # wbits 47: gzip or zlib header, detected


class ResponseTooLarge(Exception):
    """The response body passed the size cap (``status`` is the HTTP status of the response)."""

    def __init__(self, limit: int, status: int = 200) -> None:
        super().__init__(f"response exceeded {limit} bytes")
        self.limit = limit
        self.status = status


class ResponseEncodingRefused(Exception):
    """The endpoint compressed its answer with an encoding whose expansion cannot be bounded."""


class CappedBody:
    """The body of one response read by hand (``chat_http``), under the rules of ``capped_client.CappedTransport``: refused
    before a byte is read when its ``Content-Length`` passes the cap or its encoding cannot be bounded; gzip and
    deflate decoded within the budget; ``ResponseTooLarge`` as soon as the decoded bytes pass ``limit``."""

    def __init__(self, limit: int, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.limit, self.status, self.total = limit, status, 0
        fields = {name.lower(): value for name, value in headers}
        encoding = fields.get(b"content-encoding", b"identity").decode("latin-1").strip().lower() or "identity"
        length = fields.get(b"content-length", b"").decode("latin-1").strip()
        if encoding == "identity" and length.isdigit() and int(length) > limit:
            raise ResponseTooLarge(limit, status)
        if encoding != "identity" and encoding not in _ZLIB_ENCODINGS:
            raise ResponseEncodingRefused(f"endpoint sent Content-Encoding {encoding[:40]!r} although "
                                          "asked for identity; its size cannot be bounded")
        wbits = _ZLIB_ENCODINGS.get(encoding)
        self._decoder = zlib.decompressobj(wbits) if wbits is not None else None

    def take(self, chunk: bytes) -> bytes:
        """``chunk`` decoded; raises ``ResponseTooLarge`` once the body passes the cap."""
        if self._decoder is None:
            self.total += len(chunk)
            if self.total > self.limit:
                raise ResponseTooLarge(self.limit, self.status)
            return chunk
        out = []
        data = chunk
        while True:
            try:  # at most budget + 1 bytes out: enough to know the cap is passed, never more in memory
                decoded = self._decoder.decompress(data, self.limit - self.total + 1)
            except zlib.error as exc:
                raise ResponseEncodingRefused(f"compressed response body is corrupt: {exc}") from None
            self.total += len(decoded)
            if self.total > self.limit:
                raise ResponseTooLarge(self.limit, self.status)
            out.append(decoded)
            data = self._decoder.unconsumed_tail
            if not data:
                return b"".join(out)


def httpx_module() -> Any:
    """The ``httpx`` the installed OpenAI client speaks (``httpx2`` in this environment, ``httpx`` in older ones),
    imported on first use."""
    try:
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - depends on the installed openai
        import httpx  # type: ignore[no-redef]
    return httpx
