"""A chat-completions server for overhead benchmarks that is never the bottleneck: one asyncio process that
answers each request from a table (prompt -> answer text, built before it starts), after an optional latency
that costs no thread (``loop.call_later``).

It speaks just enough HTTP/1.1 for an OpenAI-compatible client (keep-alive, ``Content-Length`` bodies): per
request it decodes the JSON body, hashes its messages (every ``content``, in order: ``prompt_key``) and writes a
pre-built response. An unknown prompt
gets the answer "I do not know this prompt." (a parse failure for the client, never an error status).

    with table_server({prompt_key(messages): answer, ...}, latency=0.05) as base_url:
        ...  # envsim eval --model table --base-url BASE_URL
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
from contextlib import contextmanager
from typing import Any, Iterator

UNKNOWN = "I do not know this prompt."


def prompt_key(messages: list[dict[str, Any]]) -> str:
    """What the table is keyed by: every message's content, in order (one prompt of any client, e.g. a system
    message that differs per sample and a user message that does not)."""
    return "\x00".join(str(m.get("content")) for m in messages)


def _key(prompt: str) -> bytes:
    return hashlib.sha1(prompt.encode("utf-8", "surrogatepass")).digest()


def _response(text: str) -> bytes:
    """A whole HTTP/1.1 response carrying one chat completion whose content is ``text`` (no usage figures:
    the client counts its own tokens)."""
    body = json.dumps({"id": "chatcmpl-table", "object": "chat.completion", "created": 0, "model": "table",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}]}).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed from the byte stream, answered in order."""

    def __init__(self, responses: dict[bytes, bytes], unknown: bytes, latency: float) -> None:
        self.responses, self.unknown, self.latency = responses, unknown, latency
        self.buffer = bytearray()
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in bytes(self.buffer[:end]).split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4:end + 4 + length])
            del self.buffer[:end + 4 + length]
            self._answer(body)

    def _answer(self, body: bytes) -> None:
        try:
            prompt = prompt_key(json.loads(body)["messages"])
            response = self.responses.get(_key(prompt), self.unknown)
        except (ValueError, KeyError, IndexError, TypeError):
            response = self.unknown
        if self.latency:
            asyncio.get_running_loop().call_later(self.latency, self._write, response)
        else:
            self._write(response)

    def _write(self, response: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(response)


def _serve(answers: dict[str, str], latency: float, ready: Any) -> None:
    responses = {_key(prompt): _response(text) for prompt, text in answers.items()}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Connection(responses, _response(UNKNOWN), latency),
                                          "127.0.0.1", 0, backlog=1024)
        ready.put(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1")
        await server.serve_forever()

    asyncio.run(main())


@contextmanager
def table_server(answers: dict[str, str], latency: float = 0.0) -> Iterator[str]:
    """Serve ``answers`` (``prompt_key`` of the messages -> answer text) from a child process; yields its base URL."""
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    process = context.Process(target=_serve, args=(answers, latency, ready), daemon=True)
    process.start()
    try:
        yield ready.get(timeout=60)
    finally:
        process.terminate()
        process.join(10)
