"""OpenAI's json_schema response format reaches llama-cpp-python in the form it reads (json_object + schema)."""

from __future__ import annotations

import asyncio
import json

from envsim.evaluation.prompting.answer_schema import answer_schema, response_format
from envsim.evaluation.endpoints.preflight import EndpointCheck, refused_format
from envsim.training.llama_cpp_server import JsonSchemaFormat, translated_body


def test_the_json_schema_form_becomes_json_object_with_the_schema():
    body = {"model": "m", "messages": [], "response_format": response_format("json-schema", "mdp-view", "3")}
    out = json.loads(translated_body(json.dumps(body).encode()))
    assert out["response_format"] == {"type": "json_object", "schema": answer_schema("mdp-view", "3")}
    assert out["messages"] == [] and out["model"] == "m"


def test_other_bodies_pass_unchanged():
    for raw in (b"not json", b"[1, 2]", json.dumps({"response_format": {"type": "json_object"}}).encode(),
                json.dumps({"messages": []}).encode()):
        assert translated_body(raw) == raw


def run_middleware(path: str, chunks: list[bytes]) -> tuple[bytes, dict]:
    """What the wrapped app receives for a request whose body arrives in ``chunks``."""
    seen: dict = {}

    async def app(scope, receive, send):
        message = await receive()
        seen["body"], seen["headers"] = message["body"], dict(scope["headers"])

    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive():
        return messages.pop(0)

    async def send(message):
        pass

    scope = {"type": "http", "method": "POST", "path": path, "headers": [(b"content-length", b"999")]}
    asyncio.run(JsonSchemaFormat(app)(scope, receive, send))
    return seen["body"], seen["headers"]


def test_the_middleware_rewrites_chat_requests_arriving_in_pieces():
    raw = json.dumps({"response_format": response_format("json-schema", "mdp", "2")}).encode()
    body, headers = run_middleware("/v1/chat/completions", [raw[:10], raw[10:]])
    assert json.loads(body)["response_format"]["type"] == "json_object"
    assert headers[b"content-length"] == str(len(body)).encode()
    body, headers = run_middleware("/v1/completions", [raw])
    assert body == raw and headers[b"content-length"] == b"999"


def test_a_server_error_naming_response_format_counts_as_a_refusal():
    assert refused_format(EndpointCheck("u", False, "HTTP 500: 'response_format', 'type' ...", status=500))
    assert not refused_format(EndpointCheck("u", False, "HTTP 500: out of memory", status=500))
    assert refused_format(EndpointCheck("u", False, "HTTP 422", status=422))
