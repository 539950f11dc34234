"""A real OpenAI-compatible HTTP server for offline tests and benchmarks: answers per model name with
oracle, null, malformed, truncated, slow, 429 and 500 behaviours. Bound to 127.0.0.1 on a free port."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from contextlib import contextmanager
from typing import Any, Iterator

from envsim.evaluation.prompting.prompts import PROMPT_VERSIONS, build_messages
from envsim.tokens import count_tokens


class LocalHTTPServer:
    """A threading HTTP server on 127.0.0.1 (a free port), served from a daemon thread; a context manager."""

    httpd: ThreadingHTTPServer
    thread: threading.Thread

    def _bind(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Any:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeOpenAIServer(LocalHTTPServer):
    """Serves ``/v1/chat/completions``; the ``model`` field picks the behaviour.

    * ``oracle`` - the record's true answer (found by its prompt), after prose, in a fence;
    * ``null`` - no change; ``malformed`` - not JSON; ``truncated`` - JSON cut in half;
    * ``slow`` - sleeps ``slow_seconds`` then answers the oracle;
    * ``flaky`` - 429 then 500 on the first two tries of every prompt, then the oracle;
    * ``down`` - always 500; ``nochoices`` - a 200 response without choices;
    * ``missing`` - 404 "model does not exist"; ``locked`` - 401 "incorrect API key";
    * ``agent`` - a tool-calling agent (three calls of argument-free tools, then a plain answer);
    * ``corrupt`` - always a patch that does not apply; ``corrupt-once`` - that on the first try of
      every prompt, then the oracle;
    * ``no-schema`` - HTTP 400 to any request with a ``response_format`` (an endpoint without structured
      output), else the oracle.

    Every request's ``response_format`` (``None`` when absent) is kept in ``response_formats`` (its ``max_tokens`` in
    ``max_tokens``); with one, answers
    are the bare JSON (as decoding under a schema gives), without prose or fence.

    Prompts of records it was not given (simulated episodes) are parsed back into state and action.
    """

    def __init__(self, records: list[dict[str, Any]], slow_seconds: float = 2.0, latency: float = 0.0,
                 mode: str = "mdp") -> None:
        self.by_prompt = {build_messages(r, mode, version=v)[-1]["content"]: r
                          for r in records for v in PROMPT_VERSIONS}
        self.slow_seconds = slow_seconds
        self.latency = latency
        self.calls: dict[str, int] = defaultdict(int)
        self.auth_headers: set[str] = set()  # every Authorization header received
        self.system_prompts: set[str] = set()  # every system message received (which prompt version was sent)
        self.response_formats: list[Any] = []  # every request's response_format (None: the field was absent)
        self.max_tokens: list[Any] = []  # every request's max_tokens (None: the field was absent)
        self.oracle_cache: dict[str, str] = {}
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def setup(self) -> None:
                super().setup()
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle + delayed-ACK stalls

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.auth_headers.add(self.headers.get("Authorization") or "")
                status, payload = server.answer(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._bind(Handler)

    def oracle(self, prompt: str, record: dict[str, Any]) -> str:
        """The true answer for a record (executed once per prompt, then cached)."""
        from envsim.evaluation.endpoints.providers import oracle_answer

        if prompt not in self.oracle_cache:
            self.oracle_cache[prompt] = oracle_answer(record)
        return self.oracle_cache[prompt]

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Status and JSON body for one chat-completions request."""
        model = body.get("model", "")
        prompt = body["messages"][-1]["content"]
        self.system_prompts.update(m["content"] for m in body["messages"] if m.get("role") == "system")
        record = self.by_prompt.get(prompt) or record_from_prompt(prompt)
        structured = body.get("response_format")
        with self.lock:
            self.calls[prompt] += 1
            attempt = self.calls[prompt]
            self.response_formats.append(structured)
            self.max_tokens.append(body.get("max_tokens"))
        if self.latency:
            time.sleep(self.latency)
        if model == "down":
            return 500, {"error": {"message": "internal error"}}
        if model == "missing":
            return 404, {"error": {"message": f"The model `{model}` does not exist.", "type": "NotFoundError"}}
        if model == "locked":
            return 401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error"}}
        if model == "no-schema" and structured is not None:
            return 400, {"error": {"message": "response_format json_schema is not supported by this server",
                                   "type": "BadRequestError"}}
        if model == "flaky" and attempt <= 2:
            return (429, {"error": {"message": "slow down"}}) if attempt == 1 else (500, {"error": {"message": "oops"}})
        if model == "slow":
            time.sleep(self.slow_seconds)
        if model == "corrupt" or (model == "corrupt-once" and attempt == 1):
            text = "```json\n{\"observation\": {\"success\": true}, \"patch\": [{\"op\": \"remove\", \"path\": \"/nope/0\"}]}\n```"
            return 200, self._completion(model, prompt, text)
        if model == "agent":
            return 200, self._agent_turn(body)
        if model == "nochoices":
            return 200, {"id": "x", "object": "chat.completion", "created": 0, "model": model, "choices": []}
        if record is None:
            text = "I do not know this prompt."
        elif model == "null":
            text = json.dumps({"observation": {"success": True}, "patch": []})
        elif model == "malformed":
            text = "Sure! The observation is success and the state changes a bit."
        elif model == "truncated":
            full = self.oracle(prompt, record)
            text = full[: len(full) // 2]
        elif structured is not None:
            text = self.oracle(prompt, record)
        else:
            text = "Let me trace the code first.\n```json\n" + self.oracle(prompt, record) + "\n```"
        return 200, self._completion(model, prompt, text)

    @staticmethod
    def _agent_turn(body: dict[str, Any]) -> dict[str, Any]:
        """A tool-calling agent: calls the tools without required arguments in turn, stops after three calls."""
        done = sum(1 for m in body["messages"] if m.get("role") == "tool")
        free = [t["function"]["name"] for t in body.get("tools", [])
                if not t["function"].get("parameters", {}).get("required")]
        message: dict[str, Any] = {"role": "assistant", "content": "All done."}
        if done < 3 and free:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{done}", "type": "function",
                "function": {"name": free[done % len(free)], "arguments": "{}"}}]}
        return {"id": "chatcmpl-agent", "object": "chat.completion", "created": 0, "model": "agent",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}

    @staticmethod
    def _completion(model: str, prompt: str, text: str) -> dict[str, Any]:
        prompt_tokens, completion_tokens = count_tokens(prompt), count_tokens(text)  # counted (Qwen BPE), not guessed
        return {
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }


_PROMPT = re.compile(r"^Environment: (?P<env>\S+)\n\nCurrent state:\n(?P<state>.*?)\n\n.*\nCall:\n(?P<name>\w+)\((?P<args>.*)\)$",
                     re.DOTALL)


def record_from_prompt(prompt: str) -> dict[str, Any] | None:
    """Recover ``env``, ``state`` and ``action`` from an ``mdp``/``full-class`` prompt (for unseen prompts)."""
    match = _PROMPT.match(prompt)
    if not match:
        return None
    try:
        return {"env": match["env"], "state": json.loads(match["state"]),
                "action": {"name": match["name"], "arguments": json.loads(match["args"])}}
    except json.JSONDecodeError:
        return None


def _serve_forever(records: list[dict[str, Any]], latency: float, port_queue: Any) -> None:
    server = FakeOpenAIServer(records, latency=latency)
    port_queue.put(server.base_url)
    server.httpd.serve_forever()


@contextmanager
def server_process(records: list[dict[str, Any]], latency: float = 0.0) -> Iterator[str]:
    """Run a ``FakeOpenAIServer`` in its own process (no GIL shared with the client); yields its base URL."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_serve_forever, args=(records, latency, queue), daemon=True)
    process.start()
    try:
        yield queue.get(timeout=60)
    finally:
        process.terminate()
        process.join(10)
