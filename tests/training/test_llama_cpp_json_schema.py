"""Requests reach llama-cpp-python with OpenAI's meaning: the json_schema response format in the form it reads
(json_object + schema), and no repeat penalty or top-k/top-p/min-p cut unless the request asks for one."""

from __future__ import annotations

import asyncio
import json

from envsim.evaluation.answer_schema import answer_schema, response_format
from envsim.evaluation.preflight import EndpointCheck, refused_format
from envsim.training.llama_cpp_server import NEUTRAL_SAMPLING, OpenAISemantics, translated_body


def test_the_json_schema_form_becomes_json_object_with_the_schema():
    body = {"model": "m", "messages": [], "response_format": response_format("json-schema", "mdp-view", "3")}
    out = json.loads(translated_body(json.dumps(body).encode()))
    assert out["response_format"] == {"type": "json_object", "schema": answer_schema("mdp-view", "3")}
    assert out["messages"] == [] and out["model"] == "m"


def test_sampling_left_out_is_neutral_and_what_a_request_sets_is_kept():
    out = json.loads(translated_body(json.dumps({"messages": [], "temperature": 0}).encode()))
    assert out == {"messages": [], "temperature": 0, **NEUTRAL_SAMPLING}
    assert NEUTRAL_SAMPLING == {"repeat_penalty": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}
    kept = json.loads(translated_body(json.dumps({"top_p": 0.9, "repeat_penalty": 1.3}).encode()))
    assert kept["top_p"] == 0.9 and kept["repeat_penalty"] == 1.3 and kept["top_k"] == 0
    fmt = {"type": "json_object"}
    assert json.loads(translated_body(json.dumps({"response_format": fmt}).encode()))["response_format"] == fmt


def test_bodies_that_are_not_json_objects_pass_unchanged():
    for raw in (b"not json", b"[1, 2]", b"3"):
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
    asyncio.run(OpenAISemantics(app)(scope, receive, send))
    return seen["body"], seen["headers"]


def test_the_middleware_rewrites_chat_requests_arriving_in_pieces():
    raw = json.dumps({"response_format": response_format("json-schema", "mdp", "2")}).encode()
    body, headers = run_middleware("/v1/chat/completions", [raw[:10], raw[10:]])
    assert json.loads(body)["response_format"]["type"] == "json_object"
    assert headers[b"content-length"] == str(len(body)).encode()
    body, headers = run_middleware("/v1/completions", [raw])
    assert body == raw and headers[b"content-length"] == b"999"  # only chat requests are rewritten


def test_a_server_error_naming_response_format_counts_as_a_refusal():
    assert refused_format(EndpointCheck("u", False, "HTTP 500: 'response_format', 'type' ...", status=500))
    assert not refused_format(EndpointCheck("u", False, "HTTP 500: out of memory", status=500))
    assert refused_format(EndpointCheck("u", False, "HTTP 422", status=422))
