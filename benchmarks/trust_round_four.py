"""Issue 54's reproductions, re-run: one line per finding, ``held`` or ``FAILED``, with what was seen.

    .venv-train/bin/python benchmarks/trust_round_four.py [--only WORD ...]

Eval (findings 1-3) runs anywhere; serving (10-14) needs llama-cpp-python, transformers and torch (the training
venv) and llama.cpp's converter already extracted (``envsim train fetch-converter``): the tiny model is built
locally (``envsim train tiny-model``), nothing is downloaded. A check whose requirements are missing is printed as
``skipped`` with the reason and makes the exit code 1, as a failure does: no line says held that was not run.
The unit tests (tests/evaluation/test_trust_round_four.py, tests/training/test_trust_round_four_serving.py) hold
scaled-down versions; this is the issue's own sizes (a 190 MB request, kill -9 of a real serve, the real converter).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from reproductions import Reproductions, Skipped  # beside this script

HOSTILE = "boom\x1b]0;pwned\x07\x1b[2J\x1b[5A\rall fine\x9b31m"
RAW = ("\x1b", "\x07", "\r", "\x9b")
WORK = Path(tempfile.mkdtemp(prefix="trust4-"))
CHECKS = Reproductions()
check = CHECKS.check


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Hostile:
    """HTTP 500 with ``HOSTILE`` (model ``esc``), a closed connection (``closer``), 200 without choices
    (``nochoices``), two ``patch`` keys in the answer (``dup``)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                model = body.get("model")
                if model == "closer":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if model == "dup":
                    answer = '{"observation": {"success": true}, "patch": [{"op": "add", "path": "/x", "value": 1}], "patch": []}'
                    status, payload = 200, {"choices": [{"message": {"role": "assistant", "content": answer}}]}
                elif model == "nochoices":
                    status, payload = 200, {"choices": []}
                else:
                    status, payload = 500, {"error": {"message": HOSTILE}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


_SERVER: _Hostile | None = None


def hostile() -> _Hostile:
    global _SERVER
    _SERVER = _SERVER or _Hostile()
    return _SERVER


def benchmark_file() -> Path:
    """A few v1 test records as a benchmark file."""
    path = WORK / "bench.jsonl"
    if not path.exists():
        from envsim.benchmark import BENCHMARK_DIR

        lines = (BENCHMARK_DIR / "v1" / "test.jsonl").read_text().splitlines()[:3]
        path.write_text("\n".join(lines) + "\n")
    return path


def eval_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``envsim eval`` in a child process (what a terminal would show: stdout and stderr)."""
    return subprocess.run([sys.executable, "-m", "envsim.cli.main", "eval", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "ENVSIM_PROGRESS": "off"})


# --- eval -------------------------------------------------------------------------------------------------------


@check("1", "preflight error with OSC/CSI/\\r from the endpoint")
def preflight_escaped() -> tuple[bool, str]:
    run = eval_cli("--model", "esc", "--base-url", hostile().url, "--benchmark", str(benchmark_file()), "--run-dir",
                   str(WORK / "pre"), "--max-retries", "0")
    shown = run.stdout + run.stderr
    raw = [repr(c) for c in RAW if c in shown]
    return run.returncode == 1 and "pwned" in shown and not raw, f"exit {run.returncode}, raw controls {raw or 'none'}"


@check("1", "infrastructure summary and report.md")
def summary_escaped() -> tuple[bool, str]:
    run_dir = WORK / "infra"
    run = eval_cli("--model", "esc", "--base-url", hostile().url, "--benchmark", str(benchmark_file()), "--run-dir",
                   str(run_dir), "--no-preflight", "--max-retries", "0", "--min-scored", "0")
    shown = run.stdout + run.stderr + (run_dir / "report.md").read_text()
    raw = [repr(c) for c in RAW if c in shown]
    return "pwned" in shown and not raw, f"console + report.md: raw controls {raw or 'none'}"


@check("2", "--extra '{\"messages\": [], \"model\": \"other\"}'")
def extra_refused() -> tuple[bool, str]:
    run = eval_cli("--model", "esc", "--base-url", hostile().url, "--benchmark", str(benchmark_file()), "--run-dir",
                   str(WORK / "extra"), "--extra", '{"messages": [], "model": "other"}')
    return run.returncode == 2 and "core request field" in run.stderr, \
        f"exit {run.returncode}: {run.stderr.strip().splitlines()[-1][:110]}"


def _one_reason(model: str) -> str:
    run_dir = WORK / f"reason-{model}"
    eval_cli("--model", model, "--base-url", hostile().url, "--benchmark", str(benchmark_file()), "--run-dir",
             str(run_dir), "--no-preflight", "--max-retries", "0", "--limit", "1", "--min-scored", "0")
    row = json.loads((run_dir / "results.jsonl").read_text().splitlines()[0])
    return str(row.get("reason"))


@check("3", "two \"patch\" keys in an answer")
def duplicate_keys() -> tuple[bool, str]:
    reason = _one_reason("dup")
    return reason.startswith("ambiguous answer"), reason[:110]


@check("3", "error named once (no 'ValueError: ValueError')")
def named_once() -> tuple[bool, str]:
    reason = _one_reason("nochoices")
    return reason.startswith("ValueError from") and "ValueError: ValueError" not in reason, reason[:110]


@check("3", "server closing without answering")
def closed_not_connect() -> tuple[bool, str]:
    reason = _one_reason("closer")
    return "closed the connection" in reason and "cannot connect" not in reason, reason[:110]


# --- serving ------------------------------------------------------------------------------------------------------


def needs_serving() -> None:
    """Skip without the training venv's packages or an extracted converter; on first use, point $ENVSIM_CACHE at a
    cache of this run's own holding a copy of the converter (the user's cache is left as it was)."""
    missing = [m for m in ("llama_cpp", "transformers", "torch") if importlib.util.find_spec(m) is None]
    if missing:
        raise Skipped(f"needs {', '.join(missing)} (the training venv)")
    from envsim.training.gguf_convert import cache_root, llama_cpp_version

    own = WORK / "cache"
    if os.environ.get("ENVSIM_CACHE") == str(own):
        return
    converter = cache_root() / llama_cpp_version() / "converter"
    if not (converter / "convert_hf_to_gguf.py").is_file():
        raise Skipped("no llama.cpp converter extracted (envsim train fetch-converter)")
    import shutil

    shutil.copytree(converter, own / "llama-cpp" / llama_cpp_version() / "converter")
    os.environ["ENVSIM_CACHE"] = str(own)


_TINY: Path | None = None


def tiny() -> Path:
    """The tiny model (``envsim train tiny-model`` on a little SFT data), built once."""
    global _TINY
    if _TINY is None:
        from click.testing import CliRunner

        from envsim.cli import main
        from envsim.construction.splits import training_envs
        from envsim.envs.registry import list_envs
        from envsim.training.data import build_sft_data

        recipe = {"name": "trust4", "prompt_mode": "mdp", "rollout": {"seed": 5, "episodes": 1, "steps": 20},
                  "cells": [{"stratum": "failure", "n": 4}, {"stratum": "no_change", "n": 4},
                            {"stratum": "simple", "n": 4}, {"delta_range": [3, 12], "n": 4}]}
        build_sft_data(recipe, WORK / "data", env_ids=training_envs([e.id for e in list_envs() if e.builtin])[:4])
        built = CliRunner().invoke(main, ["train", "tiny-model", "--data", str(WORK / "data"), "--out",
                                          str(WORK / "tiny")])
        if built.exit_code != 0:
            raise RuntimeError(built.output[-500:])
        _TINY = WORK / "tiny"
    return _TINY


def variant(name: str, change: Callable[[Path], None]) -> Path:
    """A copy of the tiny model under ``name`` with ``change`` applied (its weights made unique: no cache hit)."""
    import shutil

    folder = WORK / name
    shutil.copytree(tiny(), folder)
    with open(folder / "generation_config.json", "a") as handle:
        handle.write(" " * (1 + len(name)))  # a distinct key, same meaning
    change(folder)
    return folder


def serve_cli(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "envsim.cli.main", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


@check("10", "checkpoint with auto_map -> its own tokenizer code, through envsim serve")
def remote_code() -> tuple[bool, str]:
    needs_serving()
    marker = WORK / "marker"

    def evil(folder: Path) -> None:
        config = json.loads((folder / "tokenizer_config.json").read_text())
        config["auto_map"] = {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
        (folder / "tokenization_evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")

    run = subprocess.run([sys.executable, "-m", "envsim.cli.main", "serve", "--model", str(variant("evil", evil)),
                          "--backend", "llama.cpp", "--port", str(_free_port())], capture_output=True, text=True,
                         timeout=600)
    said = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
    return run.returncode == 1 and "auto_map" in said and not marker.exists(), \
        f"exit {run.returncode}, marker {'written' if marker.exists() else 'absent'}: {said[:100]}"


@check("10", "the converter itself on a QWenLMHeadModel checkpoint (trust_remote_code=True inside)")
def converter_remote_code() -> tuple[bool, str]:
    needs_serving()
    import torch
    from safetensors.torch import save_file

    from envsim.training.gguf_convert import cache_root, converter_command, converter_env, llama_cpp_version

    folder = WORK / "qwen-evil"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["QWenLMHeadModel"], "model_type": "qwen", "vocab_size": 16, "hidden_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 1, "intermediate_size": 16, "max_position_embeddings": 64,
        "seq_length": 64, "layer_norm_epsilon": 1e-6, "rotary_emb_base": 10000}))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}}))
    marker = WORK / "marker2"
    (folder / "tokenization_evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    save_file({"transformer.wte.weight": torch.zeros(16, 8)}, str(folder / "model.safetensors"))
    converter = cache_root() / llama_cpp_version() / "converter"
    run = subprocess.run(converter_command(converter, folder, WORK / "q.gguf", "f16"), capture_output=True,
                         text=True, timeout=600, env=converter_env(converter))
    return "RemoteCodeRefused" in run.stderr and not marker.exists(), \
        f"exit {run.returncode}, marker {'written' if marker.exists() else 'absent'}"


@check("11", "a port another OpenAI-compatible server answers")
def port_taken() -> tuple[bool, str]:
    needs_serving()
    port = hostile().httpd.server_address[1]
    run = subprocess.run([sys.executable, "-m", "envsim.cli.main", "serve", "--model", str(tiny()), "--backend",
                          "llama.cpp", "--port", str(port)], capture_output=True, text=True, timeout=600)
    return run.returncode == 1 and "already answers" in run.stderr and "serving" not in run.stdout, \
        f"exit {run.returncode}: {run.stderr.strip().splitlines()[-1][:100]}"


def _answers(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@check("12", "kill -9 of envsim serve (llama.cpp)")
def kill_9() -> tuple[bool, str]:
    needs_serving()
    port = _free_port()
    serving = serve_cli("--model", str(tiny()), "--backend", "llama.cpp", "--port", str(port), "--threads", "1")
    first = serving.stdout.readline()
    if not first.startswith("serving"):
        serving.kill()
        return False, f"did not start: {first!r}"
    serving.send_signal(signal.SIGKILL)
    serving.wait(30)
    started = time.monotonic()
    while _answers(port) and time.monotonic() - started < 30:
        time.sleep(0.2)
    gone = not _answers(port)
    return gone, f"port {'closed' if gone else 'STILL ANSWERING'} {time.monotonic() - started:.1f} s after kill -9"


@check("12", ".part files and copies of a conversion killed by kill -9, pruned by the next")
def stale_parts() -> tuple[bool, str]:
    needs_serving()
    from envsim.training.gguf_convert import cache_root, gguf_for, llama_cpp_version

    model = variant("killed", lambda folder: None)
    child = subprocess.Popen([sys.executable, "-c", "import sys; from envsim.training.gguf_convert import gguf_for; "
                                                    "gguf_for(sys.argv[1])", str(model)])
    root = cache_root() / llama_cpp_version()
    started = time.monotonic()
    while not list((root / "gguf").glob(f".*.{child.pid}.*.part")) and time.monotonic() - started < 120:
        time.sleep(0.05)
    child.kill()
    child.wait()
    left = list((root / "gguf").glob(f".*.{child.pid}.*.part")) + list((root / "work").glob(f"{child.pid}-*"))
    gguf_for(variant("after-kill", lambda folder: None))
    still = [p for p in left if p.exists()]
    return bool(left) and not still, f"{len(left)} left by the killed conversion, {len(still)} after the next one"


@check("12", "a dangling link and a link out in the cache folder")
def cache_links() -> tuple[bool, str]:
    needs_serving()
    from envsim.training.gguf_convert import cache_root, gguf_for, llama_cpp_version

    folder = cache_root() / llama_cpp_version() / "gguf"
    folder.mkdir(parents=True, exist_ok=True)
    dangling, out = folder / "trust4-dangling.gguf", folder / "trust4-out.gguf"
    for link, target in ((dangling, WORK / "nothing"), (out, Path("/etc/hostname"))):
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    try:
        made = gguf_for(variant("links", lambda f: None))
        return made.is_file() and Path("/etc/hostname").exists(), f"converted {made.name}; links left alone"
    finally:
        dangling.unlink(missing_ok=True)
        out.unlink(missing_ok=True)


def _refused(name: str, change: Callable[[Path], None], expect: str) -> tuple[bool, str]:
    from envsim.training.gguf_convert import GgufUnavailable, gguf_for

    model = variant(name, change)
    started = time.monotonic()
    try:
        gguf_for(model)
    except GgufUnavailable as exc:
        said = str(exc).replace(str(model), "CKPT")
        return expect in said, f"refused in {time.monotonic() - started:.2f} s: {said[:100]}"
    return False, "converted"


def _link(name: str, target: str) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(target)
    return change


@check("13", "chat_template.jinja -> /etc/passwd")
def template_link() -> tuple[bool, str]:
    needs_serving()
    return _refused("passwd", _link("chat_template.jinja", "/etc/passwd"), "symbolic link")


@check("13", "tokenizer.json -> /dev/zero")
def zero_link() -> tuple[bool, str]:
    needs_serving()
    return _refused("zero", _link("tokenizer.json", "/dev/zero"), "symbolic link")


@check("13", "tokenizer.json a FIFO")
def fifo() -> tuple[bool, str]:
    needs_serving()

    def change(folder: Path) -> None:
        (folder / "tokenizer.json").unlink()
        os.mkfifo(folder / "tokenizer.json")
    return _refused("fifo", change, "not a regular file")


@check("13", "vocab_size 1e9")
def huge_vocab() -> tuple[bool, str]:
    needs_serving()

    def change(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        config["vocab_size"] = 10**9
        (folder / "config.json").write_text(json.dumps(config))
    return _refused("vocab", change, "vocab_size")


@check("13", "index naming a shard ../outside.safetensors")
def shard_out() -> tuple[bool, str]:
    needs_serving()

    def change(folder: Path) -> None:
        (folder.parent / "outside.safetensors").write_bytes((folder / "model.safetensors").read_bytes())
        (folder / "model.safetensors.index.json").write_text(json.dumps(
            {"weight_map": {"a": "model.safetensors", "b": "../outside.safetensors"}}))
    return _refused("shard", change, "names shard")


@check("13", "cache key: an extra template file and a shard named by the index")
def key_coverage() -> tuple[bool, str]:
    needs_serving()
    from envsim.training.gguf_convert import cache_key

    model = variant("keyed", lambda f: None)
    base = cache_key(model, "f16", "v")
    (model / "additional_chat_templates").mkdir()
    (model / "additional_chat_templates" / "tool_use.jinja").write_text("{{ tools }}")
    templated = cache_key(model, "f16", "v")
    (model / "model-00002-of-00002.safetensors").write_bytes(b"shard")
    (model / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"a": "model.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    sharded = cache_key(model, "f16", "v")
    (model / "model-00002-of-00002.safetensors").write_bytes(b"SHARD")
    changed = cache_key(model, "f16", "v")
    return len({base, templated, sharded, changed}) == 4, "four different keys for four different checkpoints"


@check("13", "weights swapped while the converter runs")
def swap_during_conversion() -> tuple[bool, str]:
    needs_serving()
    from envsim.training import gguf_convert

    model = variant("swap", lambda f: None)
    other = variant("swap-other", lambda f: None)
    real = gguf_convert.run_converter
    read_from: list[Path] = []

    def swapping(converter: Path, model_dir: Path, outfile: Path, outtype: str) -> None:
        read_from.append(model_dir)
        original = (model / "model.safetensors").read_bytes()
        (model / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes()[:-1] + b" ")
        try:
            real(converter, model_dir, outfile, outtype)
        finally:
            (model / "model.safetensors").write_bytes(original)

    gguf_convert.run_converter = swapping
    try:
        made = gguf_convert.gguf_for(model)
    finally:
        gguf_convert.run_converter = real
    expected = gguf_convert.cache_key(model, "f16", gguf_convert.llama_cpp_version())[:32]
    private = bool(read_from) and not str(read_from[0]).startswith(str(model))
    return private and made.name.startswith(expected), \
        f"converter read {'a private copy' if private else 'the checkpoint'}; entry keyed by what it read"


@check("14", "a server that fails to load, without --log")
def failed_start() -> tuple[bool, str]:
    needs_serving()
    from gguf import GGUFWriter

    from envsim.training.tiny_model import CHAT_TEMPLATE

    broken = WORK / "broken.gguf"  # metadata (a chat template that passes the probe) but no weights: fails to load
    writer = GGUFWriter(str(broken), "llama")
    writer.add_chat_template(CHAT_TEMPLATE)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    run = subprocess.run([sys.executable, "-m", "envsim.cli.main", "serve", "--model", str(broken), "--backend",
                          "llama.cpp", "--port", str(_free_port()), "--ready-timeout", "120"],
                         capture_output=True, text=True, timeout=300)
    lines = run.stderr.count("\n")
    return run.returncode == 1 and "its last lines" in run.stderr and lines > 2, \
        f"exit {run.returncode}, {lines} lines of the server's output shown"


@check("14", "--host 0.0.0.0, --api-key, a 190 MB request")
def host_key_size() -> tuple[bool, str]:
    needs_serving()
    from envsim.training.serve import answers

    port = _free_port()
    serving = serve_cli("--model", str(tiny()), "--backend", "llama.cpp", "--host", "0.0.0.0", "--port", str(port),
                        "--threads", "1", env={**os.environ, "ENVSIM_SERVE_API_KEY": "sk-trust4"})
    try:
        lines = [serving.stdout.readline() for _ in range(2)]
        url = f"http://127.0.0.1:{port}/v1"
        keyed, open_ = answers(url, "m", api_key="sk-trust4"), answers(url, "m")
        body = b'{"model": "m", "messages": [{"role": "user", "content": "' + b"x" * (190 << 20) + b'"}]}'
        request = urllib.request.Request(f"{url}/chat/completions", data=body, headers={
            "Content-Type": "application/json", "Authorization": "Bearer sk-trust4"})
        try:
            urllib.request.urlopen(request, timeout=120)
            big = "answered 200"
        except urllib.error.HTTPError as exc:
            big = f"HTTP {exc.code}"
        except OSError as exc:
            big = f"refused ({type(exc).__name__})"
        alive = answers(url, "m", api_key="sk-trust4") and serving.poll() is None
        printed = '--api-key "$ENVSIM_SERVE_API_KEY"' in lines[1] and "sk-trust4" not in "".join(lines)
    finally:
        serving.send_signal(signal.SIGINT)
        warned = "warning: --host 0.0.0.0" in serving.communicate(timeout=60)[1]
    return warned and keyed and not open_ and printed and alive and big != "answered 200", (
        f"warned {warned}; with key {keyed}, without {open_}; command names the key {printed}; 190 MB request "
        f"{big}, server still answering {alive}")


HOSTILE_TEMPLATES = {
    "time": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "memory": "{{ 'x' * 10**10 }}",
    "raised": "{{ raise_exception('no') }}",
    "output": "{% for m in messages %}{% for i in range(1000) %}{{ m['content'] }}{% endfor %}{% endfor %}",
}


def _with_template(template: str) -> Callable[[Path], None]:
    """A ``variant`` change: the checkpoint's chat template (tokenizer_config.json and chat_template.jinja)."""
    def change(folder: Path) -> None:
        config = json.loads((folder / "tokenizer_config.json").read_text())
        if "chat_template" in config or not (folder / "chat_template.jinja").exists():
            config["chat_template"] = template
            (folder / "tokenizer_config.json").write_text(json.dumps(config))
        if (folder / "chat_template.jinja").exists():
            (folder / "chat_template.jinja").write_text(template)
    return change


@check("14", "hostile chat templates (10^10 loop, a 10 GB string, raise_exception, 1000x output)")
def hostile_templates() -> tuple[bool, str]:
    needs_serving()
    seen, held = [], True
    for refusal, template in HOSTILE_TEMPLATES.items():
        started = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "envsim.cli.main", "serve", "--model",
                              str(variant(f"template-{refusal}", _with_template(template))), "--backend", "llama.cpp",
                              "--port", str(_free_port()), "--ready-timeout", "120"], capture_output=True, text=True,
                             timeout=600)
        ok = (run.returncode == 1 and f"refused ({refusal})" in run.stderr and "serving" not in run.stdout
              and "Traceback" not in run.stderr)
        held = held and ok
        seen.append(f"{refusal}: exit {run.returncode}{'' if ok else ' NOT refused as such'} "
                    f"in {time.monotonic() - started:.0f} s")
    return held, "; ".join(seen)


def main() -> int:
    """Run the checks (``--only WORD ...``); exit 1 unless all held."""
    return CHECKS.main(__doc__.splitlines()[0], WORK)


if __name__ == "__main__":
    sys.exit(main())
