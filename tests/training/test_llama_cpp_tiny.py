"""The llama.cpp serving path for real (slow tier): the tiny Qwen3 model with its locally trained tokenizer ->
``gguf_for`` (llama.cpp's converter from the llama-cpp-python sdist) -> ``start_server(backend="llama.cpp")``
-> chat completions; ``envsim serve --backend llama.cpp`` end to end.

Needs the [cpu-serve] extra and the tiny model's [train] dependencies (torch, transformers, tokenizers), and the
llama-cpp-python sdist (the package index, or ``ENVSIM_LLAMA_CPP_SDIST`` = a downloaded one). Without them it is
skipped with the reason, except under ``CI=true``, where a skip would hide a broken path.

``llama_cpp_server`` (module scope) yields the running server's base URL for further tests; the model name to
send is ``str(tiny_checkpoint)`` (any name is answered)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
NEEDED = ("llama_cpp", "torch", "transformers", "tokenizers", "sentencepiece", "fastapi", "uvicorn", "sse_starlette",
          "starlette_context", "pydantic_settings")
RECIPE = {"name": "llama_cpp_tiny", "prompt_mode": "mdp", "rollout": {"seed": 5, "episodes": 1, "steps": 20},
          "cells": [{"stratum": "failure", "n": 4}, {"stratum": "no_change", "n": 4}, {"stratum": "simple", "n": 4},
                    {"delta_range": [3, 12], "n": 4}]}
#: Texts whose tokens must be the same under transformers and llama.cpp (spaces, digits, unicode, JSON, special
#: tokens).
PROBES = ['{"cart": {"items": [{"sku": "A-1", "qty": 3}], "total": 129.99}}',
          "  two  spaces\n\n\tand a tab  ",
          "I've been told he's there; 12345 6.7 ????!!! ünïcödé 日本語 🦙", "<|im_start|>user\nping<|im_end|>\n"]


def unavailable(reason: str) -> None:
    """Skip with ``reason``, or fail under CI=true."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and the llama.cpp serving path cannot run: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def gguf_cache(tmp_path_factory) -> Iterator[Path]:
    """A fresh $ENVSIM_CACHE for this module (the converter is extracted into it once)."""
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        unavailable(f"needs the [cpu-serve] and [train] extras (missing {', '.join(missing)})")
    cache = tmp_path_factory.mktemp("envsim-cache")
    previous = os.environ.get("ENVSIM_CACHE")
    os.environ["ENVSIM_CACHE"] = str(cache)
    yield cache
    if previous is None:
        os.environ.pop("ENVSIM_CACHE", None)
    else:
        os.environ["ENVSIM_CACHE"] = previous


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory, gguf_cache) -> Path:
    """The tiny Qwen3 model with a BPE tokenizer trained on a little SFT data (what `envsim train tiny-model` makes)."""
    from click.testing import CliRunner
    from envsim.construction.splits import training_envs
    from envsim.envs.registry import list_envs
    from envsim.training.data import build_sft_data

    from envsim.cli import main

    root = tmp_path_factory.mktemp("tiny")
    build_sft_data(RECIPE, root / "data", env_ids=training_envs([e.id for e in list_envs() if e.builtin])[:4])
    built = CliRunner().invoke(main, ["train", "tiny-model", "--data", str(root / "data"), "--out", str(root / "tiny")])
    assert built.exit_code == 0, built.output
    return root / "tiny"


@pytest.fixture(scope="module")
def tiny_gguf(tiny_checkpoint) -> Path:
    """``tiny_checkpoint`` converted to an f16 GGUF file (skipped or failed when the sdist cannot be had)."""
    from envsim.training.gguf_convert import GgufUnavailable, gguf_for

    try:
        return gguf_for(tiny_checkpoint, "f16")
    except GgufUnavailable as exc:
        if "pip download" in str(exc):
            unavailable(f"the llama-cpp-python sdist cannot be downloaded here: {str(exc)[-300:]}")
        raise


@pytest.fixture(scope="module")
def llama_cpp_server(tiny_checkpoint, tiny_gguf, tmp_path_factory) -> Iterator[str]:
    """The tiny checkpoint served by llama.cpp (``start_server``); yields the base URL (``.../v1``)."""
    from envsim.training.serve import start_server

    log = tmp_path_factory.mktemp("server") / "server.log"
    server = start_server(str(tiny_checkpoint), backend="llama.cpp", port=free_port(), ready_timeout=120,
                          log_path=str(log), threads=1, ctx=8192)
    try:
        yield server.base_url
    finally:
        server.stop()


def chat(base_url: str, model: str, content: str, max_tokens: int = 8) -> dict:
    """One chat completion (temperature 0)."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens,
                       "temperature": 0}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_the_tiny_checkpoint_converts_with_its_tokenizer_intact(tiny_checkpoint, tiny_gguf):
    import llama_cpp
    from transformers import AutoTokenizer

    llm = llama_cpp.Llama(str(tiny_gguf), vocab_only=True, verbose=False)
    assert llm.metadata["tokenizer.ggml.pre"] == "gpt-2"           # named by gguf_driver: the hash is unknown
    assert llm.metadata["general.architecture"] == "qwen3"
    assert "<|im_start|>" in llm.metadata["tokenizer.chat_template"]
    hf = AutoTokenizer.from_pretrained(str(tiny_checkpoint))
    assert llm.token_eos() == hf.convert_tokens_to_ids("<|im_end|>")
    for text in PROBES:
        expected = hf.encode(text, add_special_tokens=False)
        assert llm.tokenize(text.encode(), add_bos=False, special=True) == expected, text
        assert llm.detokenize(expected, special=True).decode() == text


def test_conversion_is_cached_and_q4_0_is_quantized_from_it(tiny_checkpoint, tiny_gguf):
    import llama_cpp
    from envsim.training.gguf_convert import gguf_for

    lines: list[str] = []
    assert gguf_for(tiny_checkpoint, "f16", progress=lines.append) == tiny_gguf and lines == [f"cached: {tiny_gguf}"]
    q4 = gguf_for(tiny_checkpoint, "q4_0")
    assert q4 != tiny_gguf and q4.stat().st_size < tiny_gguf.stat().st_size
    llm = llama_cpp.Llama(str(q4), vocab_only=True, verbose=False)
    assert llm.metadata["general.file_type"] == str(llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0)
    assert not list(tiny_gguf.parent.glob("*.part"))


def test_the_server_answers_chat_completions_under_any_model_name(llama_cpp_server, tiny_checkpoint):
    for name in (str(tiny_checkpoint), "some-other-name"):
        reply = chat(llama_cpp_server, name, "Return the new state.", max_tokens=8)
        choice = reply["choices"][0]
        assert isinstance(choice["message"]["content"], str) and choice["finish_reason"] in ("stop", "length")
        assert 0 < reply["usage"]["completion_tokens"] <= 8 and reply["usage"]["prompt_tokens"] > 4


def test_envsim_serve_llama_cpp_prints_progress_on_stderr_and_serving_first_on_stdout(tiny_checkpoint, tiny_gguf,
                                                                                      gguf_cache, tmp_path):
    port = free_port()
    envsim = Path(sys.executable).parent / "envsim"
    with (tmp_path / "stderr").open("w") as stderr:
        serve = subprocess.Popen([str(envsim), "serve", "--model", str(tiny_checkpoint), "--backend", "llama.cpp",
                                  "--port", str(port), "--threads", "1", "--ctx", "1024", "--ready-timeout", "120"],
                                 stdout=subprocess.PIPE, stderr=stderr, text=True,
                                 env={**os.environ, "ENVSIM_CACHE": str(gguf_cache)}, start_new_session=True)
    try:
        first = serve.stdout.readline()
        assert first == f"serving {tiny_checkpoint} at http://127.0.0.1:{port}/v1\n", first
        assert chat(f"http://127.0.0.1:{port}/v1", str(tiny_checkpoint), "hi", max_tokens=2)["choices"]
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        assert serve.wait(60) == 0
    assert (tmp_path / "stderr").read_text() == f"cached: {tiny_gguf}\nchecking the chat template of {tiny_gguf} ...\n"


def test_envsim_eval_scores_five_samples_with_json_schema_answers(llama_cpp_server, tiny_checkpoint, tmp_path):
    """``--response-format json-schema`` against llama.cpp: every answer is decoded under the answer's schema, so
    each one is the start of a JSON object (the untrained tiny model writes no such thing unconstrained) and
    parses whenever it ended before the token cap; all five are scored, none is an infrastructure failure."""
    from click.testing import CliRunner

    from envsim.cli import main

    run = tmp_path / "eval"
    result = CliRunner().invoke(main, ["eval", "--model", str(tiny_checkpoint), "--base-url", llama_cpp_server,
                                       "--ids", "v1_test_smollm2_2048", "--limit", "5", "--prompt-mode", "mdp-view",
                                       "--prompt-version", "3", "--max-tokens", "96", "--concurrency", "1",
                                       "--timeout", "300", "--response-format", "json-schema", "--run-dir", str(run)])
    assert result.exit_code == 0, result.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["scored"] == 5 and summary["infra_failures"] == 0
    assert json.loads((run / "config.json").read_text())["response_format"] == "json-schema"
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    for row in rows:
        assert row["answer"].lstrip().startswith("{"), row["answer"][:200]
        assert row["parsed"] or row["completion_tokens"] >= 96, row


def test_llama_cpp_decodes_the_copied_value_under_its_sampler_and_a_json_grammar(tiny_gguf):
    """The copying processor through llama.cpp's own sampler chain (a custom sampler ahead of the grammar): the
    answer so far is made to end at a test's value, so the value's tokens must come out first, and a JSON string
    grammar still accepts them."""
    import llama_cpp
    from envsim.training.copied_tests import CopyingLogitsProcessor

    llm = llama_cpp.Llama(str(tiny_gguf), n_ctx=512, n_threads=1, verbose=False)
    prefix = '{"op":"test","path":"/voters/V-1/name","value":'
    shown = {"voters": {"V-1": {"name": "Priya Moreau", "age": 12345}}}
    for path, grammar, expected in (("name", llama_cpp.LlamaGrammar.from_json_schema('{"type": "string"}'),
                                     '"Priya Moreau'), ("age", None, "12345")):
        processor = CopyingLogitsProcessor(
            shown, lambda ids: prefix.replace("/name", f"/{path}") + llm.detokenize(ids).decode(errors="ignore"),
            lambda text: llm.tokenize(text.encode(), add_bos=False, special=False))
        forced = len(llm.tokenize(expected.encode(), add_bos=False, special=False))
        out = llm.create_completion("Return the new state.", max_tokens=forced + 2, temperature=0,
                                    logits_processor=llama_cpp.LogitsProcessorList([processor]), grammar=grammar)
        assert out["choices"][0]["text"].startswith(expected), out["choices"][0]["text"]
        assert processor.copied == 1 and not processor.forced


def test_a_server_started_copying_tested_values_answers_simulator_and_other_prompts(tiny_checkpoint, tiny_gguf,
                                                                                    tmp_path):
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.training.serve import start_server

    record = {"env": "demo-v1", "state": {"n": 5}, "action": {"name": "bump", "arguments": {}}, "tools": [],
              "code": "def bump(self):\n    self.n += 1\n"}
    server = start_server(str(tiny_checkpoint), backend="llama.cpp", port=free_port(), ready_timeout=120,
                          log_path=str(tmp_path / "server.log"), threads=1, ctx=2048, copy_tested_values=True)
    try:
        for messages in (build_messages(record, "mdp", version="2"), [{"role": "user", "content": "hi"}]):
            body = json.dumps({"model": "m", "messages": messages, "max_tokens": 4, "temperature": 0}).encode()
            request = urllib.request.Request(f"{server.base_url}/chat/completions", data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as response:
                reply = json.loads(response.read())
            assert isinstance(reply["choices"][0]["message"]["content"], str)
    finally:
        server.stop()
    assert "--copy_tested_values" in server.process.args
