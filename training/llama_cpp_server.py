"""llama-cpp-python's OpenAI-compatible server, accepting OpenAI's ``json_schema`` response format.

llama-cpp-python 0.3.x validates ``response_format.type`` as ``text`` or ``json_object`` (a ``schema`` beside
``json_object`` constrains decoding to that schema) and answers OpenAI's ``{"type": "json_schema",
"json_schema": {"schema": ...}}`` with HTTP 500. ``envsim serve --backend llama.cpp`` runs this module instead
of ``python -m llama_cpp.server``: chat requests are rewritten to llama-cpp-python's form before its app reads
them, so a client sends the one standard field to vLLM, OpenAI and llama.cpp alike.

The rewrite also spells out JSON Schema's empty schema. ``{}`` means "any JSON value", but llama-cpp-python
0.3.36's schema-to-grammar converter (``llama_grammar.SchemaConverter``) turns it into the rule ``object``: under
EnvSim's answer schema every patch operation's ``value`` could only be an object, so ``{"op": "replace", "path":
"/gold", "value": 277}`` came out as ``"value": { }`` and no state-changing answer applied (found on 2026-11-28:
a fitted checkpoint wrote 18 of 24 of its training answers exactly with transformers and 8 through this
server). Each ``{}`` in a schema position becomes ``{"type": [every JSON type]}``, which the converter reads as
any value. Every flag of
``python -m llama_cpp.server`` is accepted (its own argument parser builds the settings).

Four more things happen in front of llama-cpp-python's app, for ``envsim serve``:

* **Request size**: llama-cpp-python's server reads any body whole (a 190 MB request crashed it). A request body
  larger than ``$ENVSIM_MAX_REQUEST_BYTES`` (default ``DEFAULT_MAX_REQUEST_BYTES``, 4 MiB: a prompt of the longest
  context llama.cpp serves here is well under 1 MiB) is answered with HTTP 413 before the app sees it.
* **Identity**: ``GET /envsim/nonce`` answers ``$ENVSIM_SERVE_NONCE``, so ``envsim serve`` knows that the server
  answering on its port is the one it started, not another one already there.
* **Copied tested values** (``--copy_tested_values``, ``envsim serve --copy-tested-values``): chat answers are
  decoded with tested old values copied from the prompt (``envsim.training.llama_cpp_copying``).
* **API key**: ``$ENVSIM_SERVE_API_KEY`` (read once and removed from the environment) becomes the server's
  ``api_key``: every request then needs ``Authorization: Bearer KEY``; it is never on the command line, where
  other users of the machine could read it.

    python -m envsim.training.llama_cpp_server --model M.gguf --n_threads 1 --port 8000
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Awaitable, Callable

Message = dict[str, Any]
ASGIApp = Callable[[Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


#: The largest request body passed on to llama-cpp-python (``$ENVSIM_MAX_REQUEST_BYTES`` overrides it).
DEFAULT_MAX_REQUEST_BYTES = 4 << 20
NONCE_PATH = "/envsim/nonce"
#: JSON Schema's "any value", spelled so that llama-cpp-python's grammar converter reads it as such.
ANY_VALUE: dict[str, Any] = {"type": ["object", "array", "string", "number", "boolean", "null"]}
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains")


def explicit_any(schema: Any) -> Any:
    """``schema`` with every empty schema ``{}`` in a schema position replaced by ``ANY_VALUE`` (a copy; keywords
    that hold data, such as ``enum`` or ``const``, are left as they are)."""
    if not isinstance(schema, dict):
        return schema
    if not schema:
        return dict(ANY_VALUE)
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: explicit_any(value) for name, value in out[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [explicit_any(value) for value in out[key]]
    for key in _SCHEMA_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = explicit_any(out[key])
    return out


def translated_body(raw: bytes) -> bytes:
    """``raw`` with an OpenAI ``json_schema`` response format turned into llama-cpp-python's ``json_object`` +
    ``schema`` (empty schemas spelled out: ``explicit_any``); any other body (not JSON, no such field) unchanged."""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw
    fmt = body.get("response_format") if isinstance(body, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return raw
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    body["response_format"] = {"type": "json_object",
                               **({"schema": explicit_any(schema)} if isinstance(schema, dict) else {})}
    return json.dumps(body).encode()


class JsonSchemaFormat:
    """ASGI middleware: request bodies larger than ``max_request_bytes`` refused (HTTP 413), chat-completion bodies
    passed through ``translated_body``, and ``GET /envsim/nonce`` answered with ``nonce`` (when one is set)."""

    def __init__(self, app: ASGIApp, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES, nonce: str | None = None
                 ) -> None:
        self.app = app
        self.max_request_bytes = max_request_bytes
        self.nonce = nonce

    async def __call__(self, scope: Message, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if self.nonce and scope.get("method") == "GET" and scope.get("path") == NONCE_PATH:
            await _answer(send, 200, {"nonce": self.nonce})
            return
        declared = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.max_request_bytes:
            await _too_large(send, self.max_request_bytes)
            return
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        chunks, more, size = [], True, 0
        while more:
            message = await receive()
            if message.get("type") != "http.request":  # the client went away: nothing to answer
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_request_bytes:
                await _too_large(send, self.max_request_bytes)
                return
            chunks.append(chunk)
            more = bool(message.get("more_body"))
        body = b"".join(chunks)
        if str(scope.get("path", "")).endswith("/chat/completions"):
            body = translated_body(body)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await self.app({**scope, "headers": headers}, replay, send)


async def _answer(send: Callable[[Message], Awaitable[None]], status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": data})


async def _too_large(send: Callable[[Message], Awaitable[None]], limit: int) -> None:
    await _answer(send, 413, {"error": {"message": f"request body larger than {limit} bytes (ENVSIM_MAX_REQUEST_BYTES)",
                                        "type": "invalid_request_error"}})


def main(argv: list[str] | None = None) -> None:
    """Parse ``python -m llama_cpp.server``'s flags, build its app, serve it behind ``JsonSchemaFormat``."""
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_args_from_model(parser, Settings)
    parser.add_argument("--copy_tested_values", action="store_true",
                        help="copy tested old values from each simulator prompt (envsim.training.llama_cpp_copying)")
    args = parser.parse_args(argv)
    if args.copy_tested_values:
        from envsim.training.llama_cpp_copying import install

        install()
    server = parse_model_from_args(ServerSettings, args)
    key = os.environ.pop("ENVSIM_SERVE_API_KEY", None)
    if key:
        server.api_key = key
    app = create_app(server_settings=server, model_settings=[parse_model_from_args(ModelSettings, args)])
    limit = int(os.environ.get("ENVSIM_MAX_REQUEST_BYTES") or DEFAULT_MAX_REQUEST_BYTES)
    uvicorn.run(JsonSchemaFormat(app, limit, os.environ.get("ENVSIM_SERVE_NONCE")), host=server.host,
                port=server.port)


if __name__ == "__main__":
    main()
