"""A local OpenAI-compatible server that gives hostile responses, for tests and the memory benchmark.

The behaviour is chosen per request from the record the prompt belongs to: ``behaviours`` maps a
record id to one of the names below; every other prompt gets the true answer (oracle).

* ``deep`` - an answer nested ``depth`` levels deep; ``bigint`` - an integer of 5001 digits;
  ``nan`` - ``NaN`` as the observation; ``bare`` - a bare 100,000-op patch (a JSON list);
* ``number`` / ``object`` - ``message.content`` is a JSON number / object instead of text;
* ``huge`` - ``huge_bytes`` of answer sent chunked (no length known in advance);
  ``huge-length`` - the same with a ``Content-Length`` header; ``gzip`` - a gzip body that expands
  to ``huge_bytes``; ``huge-500`` - an HTTP 500 error page of ``huge_bytes``;
* ``error-500`` - an ordinary HTTP 500 JSON error (this sample fails for infrastructure reasons);
* ``surrogate`` - an answer holding a lone surrogate (``\\ud800``: valid JSON, not encodable UTF-8);
  ``bomb`` - a 399 KB parse bomb (``{"a":`` x 400, then a long list of integers).
"""

from __future__ import annotations

import gzip
import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from envsim.evaluation.baselines.fake_server import FakeOpenAIServer, LocalHTTPServer

CHUNK = 1 << 20


def _completion(content: Any) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "hostile",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}]}).encode()


def hostile_text(kind: str, depth: int = 990) -> str:
    """The answer text of a text-valued hostile behaviour."""
    if kind == "deep":
        return '{"observation": ' + "[" * depth + "]" * depth + ', "patch": []}'
    if kind == "bigint":
        return '{"observation": 1' + "0" * 5000 + ', "patch": []}'
    if kind == "nan":
        return '{"observation": NaN, "patch": []}'
    if kind == "surrogate":
        return '{"observation": {"note": "half \ud800 a pair"}, "patch": []} \ud800'
    if kind == "bomb":
        return ('{"a":' * 400 + "[" + "1," * 200_000)[:399_000]
    if kind == "bare":
        return json.dumps([{"op": "add", "path": f"/x{i}", "value": i} for i in range(100_000)])
    raise ValueError(f"unknown hostile behaviour {kind!r}")


class HostileServer(LocalHTTPServer):
    """Serves ``/v1/chat/completions`` on 127.0.0.1 with the behaviours above; a context manager."""

    def __init__(self, records: list[dict[str, Any]], behaviours: dict[str, str], huge_bytes: int = 100 << 20,
                 depth: int = 990) -> None:
        self.fake = FakeOpenAIServer(records)  # prompt lookup and oracle answers; its own server is never started
        self.behaviours = behaviours
        self.huge_bytes = huge_bytes
        self.depth = depth
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                prompt = body["messages"][-1]["content"]
                record = server.fake.by_prompt.get(prompt)
                kind = server.behaviours.get(record["id"], "oracle") if record else "oracle"
                try:
                    server.respond(self, kind, prompt, record)
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: expected
                    self.close_connection = True

        self._bind(Handler)

    def respond(self, handler: BaseHTTPRequestHandler, kind: str, prompt: str, record: dict[str, Any] | None) -> None:
        """Write the response of behaviour ``kind``."""
        if kind in ("huge", "huge-length", "huge-500"):
            self._huge(handler, status=500 if kind == "huge-500" else 200, chunked=kind == "huge")
            return
        if kind == "error-500":  # the endpoint fails this sample (an infrastructure failure, not a wrong answer)
            self._send(handler, 500, json.dumps({"error": {"message": "boom: replica lost its GPU"}}).encode())
            return
        if kind == "gzip":
            inner = _completion("x" * self.huge_bytes)
            self._send(handler, 200, gzip.compress(inner, compresslevel=9), encoding="gzip")
            return
        if kind == "number":
            data = _completion(42)
        elif kind == "object":
            data = _completion({"observation": {"success": True}, "patch": []})
        elif kind == "oracle" and record is not None:
            data = _completion(self.fake.oracle(prompt, record))
        elif kind == "oracle":
            data = _completion("I do not know this prompt.")
        else:
            data = _completion(hostile_text(kind, self.depth))
        self._send(handler, 200, data)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes, encoding: str | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        if encoding:
            handler.send_header("Content-Encoding", encoding)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _huge(self, handler: BaseHTTPRequestHandler, status: int, chunked: bool) -> None:
        head = b'{"id": "x", "object": "chat.completion", "created": 0, "model": "hostile", "choices": [{"index": 0, ' \
               b'"finish_reason": "stop", "message": {"role": "assistant", "content": "'
        tail = b'"}}]}'
        body_len = len(head) + self.huge_bytes + len(tail)
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        if chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Content-Length", str(body_len))
        handler.end_headers()
        filler = b"x" * CHUNK
        parts = [head] + [filler] * (self.huge_bytes // CHUNK) + [b"x" * (self.huge_bytes % CHUNK), tail]
        for part in parts:
            if not part:
                continue
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
        if chunked:
            handler.wfile.write(b"0\r\n\r\n")
        handler.close_connection = True


def _serve(records: list[dict[str, Any]], behaviours: dict[str, str], huge_bytes: int, queue: Any) -> None:
    server = HostileServer(records, behaviours, huge_bytes=huge_bytes)
    queue.put(server.base_url)
    server.httpd.serve_forever()


def hostile_server_process(records: list[dict[str, Any]], behaviours: dict[str, str], huge_bytes: int = 100 << 20) -> Any:
    """Start a ``HostileServer`` in its own process; returns ``(process, base_url)`` (terminate it when done)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_serve, args=(records, behaviours, huge_bytes, queue), daemon=True)
    process.start()
    return process, queue.get(timeout=60)
