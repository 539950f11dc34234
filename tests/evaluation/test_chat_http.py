"""The hot-path HTTP transport (``evaluation.endpoints.chat_http.ChatTransport``: asyncio streams + h11) against a tiny
scripted server: keep-alive reuse, a connection the server closed while idle, error statuses as the SDK's
exceptions, and gzip bodies decoded under the cap."""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest

from envsim.evaluation.endpoints.chat_http import ChatTransport
from envsim.evaluation.endpoints.http_limits import ResponseTooLarge


def _response(status: int, body: bytes, *, close: bool = False, encoding: str | None = None) -> bytes:
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Content-Type: application/json"]
    if close:
        head.append("Connection: close")
    if encoding:
        head.append(f"Content-Encoding: {encoding}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _serve(answers: list[bytes], connections: list[int], close_after_each: bool) -> asyncio.AbstractServer:
    """Answers requests in order; counts connections; optionally closes each connection after its answer."""
    queue = list(answers)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            await reader.readexactly(length)
            writer.write(queue.pop(0))
            await writer.drain()
            if close_after_each:
                break
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def _run(answers: list[bytes], bodies: int, close_after_each: bool = False, limit: int = 1 << 20) -> tuple[list, int]:
    async def main() -> tuple[list, int]:
        connections: list[int] = []
        server = await _serve(answers, connections, close_after_each)
        port = server.sockets[0].getsockname()[1]
        transport = ChatTransport(f"http://127.0.0.1:{port}/v1", "key", 10, limit)
        results: list = []
        for _ in range(bodies):
            try:
                results.append(await transport.post(b'{"messages": []}'))
            except Exception as exc:  # noqa: BLE001 - the test inspects it
                results.append(exc)
            await asyncio.sleep(0.05)  # the server's close (if any) reaches the idle connection
        await transport.aclose()
        server.close()
        await server.wait_closed()
        return results, len(connections)

    return asyncio.run(main())


def test_one_connection_is_kept_alive_for_requests_in_turn():
    answer = _response(200, json.dumps({"ok": 1}).encode())
    results, connections = _run([answer] * 3, 3)
    assert results == [{"ok": 1}] * 3
    assert connections == 1


def test_a_connection_the_server_closed_while_idle_is_not_reused():
    answer = _response(200, json.dumps({"ok": 1}).encode())
    results, connections = _run([answer] * 3, 3, close_after_each=True)
    assert results == [{"ok": 1}] * 3          # no request failed on a dead connection
    assert connections == 3


def test_an_error_status_is_the_sdks_exception_with_its_message():
    openai = pytest.importorskip("openai")
    error = _response(429, json.dumps({"error": {"message": "slow down"}}).encode())
    (result,), _ = _run([error], 1)
    assert isinstance(result, openai.RateLimitError)
    assert str(result).startswith("Error code: 429 - slow down")


def test_a_gzip_body_is_decoded_and_still_capped():
    body = json.dumps({"text": "a" * 5000}).encode()
    packed = _response(200, gzip.compress(body), encoding="gzip")
    (result,), _ = _run([packed], 1)
    assert result == {"text": "a" * 5000}
    (too_large,), _ = _run([packed], 1, limit=1000)   # small on the wire, past the cap once decoded
    assert isinstance(too_large, ResponseTooLarge)


def test_a_proxy_named_in_the_environment_is_used_as_the_sdk_would(monkeypatch):
    from envsim.evaluation.endpoints.providers import OpenAICompatibleProvider

    answer = json.dumps({"choices": [{"message": {"role": "assistant", "content": "via proxy"}}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()
    seen: list[bytes] = []

    async def run() -> object:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            seen.append(head.split(b"\r\n")[0])
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            await reader.readexactly(length)
            writer.write(_response(200, answer, close=True))
            await writer.drain()
            writer.close()

        proxy = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = proxy.sockets[0].getsockname()[1]
        for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        provider = OpenAICompatibleProvider("m", base_url="http://simulator.invalid/v1", timeout=10)
        try:
            return await provider.generate([{"role": "user", "content": "hi"}], {})
        finally:
            await provider.aclose()
            proxy.close()

    generation = asyncio.run(run())
    assert generation.text == "via proxy" and generation.prompt_tokens == 3
    assert seen == [b"POST http://simulator.invalid/v1/chat/completions HTTP/1.1"]
    monkeypatch.setenv("NO_PROXY", "simulator.invalid")
    from envsim.evaluation.endpoints.providers import OpenAICompatibleProvider as Provider
    assert Provider("m", base_url="http://simulator.invalid/v1").proxy is None


def test_a_successful_request_imports_neither_the_sdk_nor_its_http_client() -> None:
    """The run's path (provider, transport, a 200 answer) never imports ``openai`` or ``httpx``: their ~0.1-0.7 s
    of imports would come before a run's first progress line. Checked in a fresh interpreter."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import asyncio, json, sys
        from envsim.evaluation.endpoints.providers import make_provider

        async def handle(reader, writer):
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            length = int(next(l.split(b":")[1] for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length")))
            await reader.readexactly(length)
            body = json.dumps({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()
            writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
            await writer.drain()
            writer.close()

        async def main():
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            provider = make_provider("m", base_url=f"http://127.0.0.1:{port}/v1")
            generation = await provider.generate([{"role": "user", "content": "x"}], {"id": "a"})
            await provider.aclose()
            server.close()
            print(generation.text, sorted(m for m in ("openai", "httpx", "httpx2") if m in sys.modules))

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["hi", "[]"]
