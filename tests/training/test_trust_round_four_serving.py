"""Issue 54, findings 10-14: ``envsim serve --backend llama.cpp`` never runs code shipped in a checkpoint, never
follows its links or blocks on its special files, keys and converts exactly what it hashed, bounds the
conversion, refuses a port another server answers, dies with ``serve`` (``kill -9`` included), prunes only stale
leftovers, shows why a server failed, and offers an API key on a reachable host.

Needs neither llama-cpp-python nor a model: the converter and the server are stand-ins, except where a test
names transformers (skipped without it)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from envsim.cli import main
from envsim.training import gguf_convert, serve
from envsim.training.gguf_convert import GgufUnavailable, cache_key, gguf_for
from tests.training.test_llama_cpp_serve import checkpoint
from tests.training.test_serve_stop import FAKE_TRANSFORMERS, alive

EVIL_CODE = '''import os, pathlib
pathlib.Path(os.environ["EVIL_MARKER"]).write_text("the checkpoint's code ran")
from transformers import PreTrainedTokenizer
class EvilTokenizer(PreTrainedTokenizer):
    pass
'''


@pytest.fixture
def cache(monkeypatch, tmp_path) -> SimpleNamespace:
    """An empty $ENVSIM_CACHE, a pretend llama-cpp-python 0.3.36, and a stand-in converter that copies the weights
    it reads into the GGUF file (``seen`` holds the folders it was run on)."""
    monkeypatch.setenv("ENVSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gguf_convert, "llama_cpp_version", lambda: "0.3.36")
    monkeypatch.setattr(gguf_convert, "converter_dir", lambda version, progress=None: tmp_path / "converter")
    seen: list[Path] = []

    def converter(conv, model_dir, outfile, outtype):
        seen.append(model_dir)
        outfile.write_bytes((model_dir / "model.safetensors").read_bytes())

    monkeypatch.setattr(gguf_convert, "run_converter", converter)
    return SimpleNamespace(root=tmp_path / "cache" / "llama-cpp" / "0.3.36", seen=seen)


def _evil_checkpoint(folder: Path, architecture: str = "QWenLMHeadModel") -> Path:
    """A checkpoint whose tokenizer is its own Python file (``auto_map``), which writes $EVIL_MARKER if imported."""
    checkpoint(folder)
    (folder / "config.json").write_text(json.dumps({"architectures": [architecture], "model_type": "qwen",
                                                    "vocab_size": 16}))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}, "tokenizer_class": "EvilTokenizer"}))
    (folder / "tokenization_evil.py").write_text(EVIL_CODE)
    return folder


# --- 10. code shipped in a checkpoint -------------------------------------------------------------------------


def test_a_checkpoint_declaring_its_own_code_is_refused_naming_the_architecture(cache, tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    monkeypatch.setenv("EVIL_MARKER", str(marker))
    model = _evil_checkpoint(tmp_path / "evil")
    with pytest.raises(GgufUnavailable, match=r"QWenLMHeadModel.*never runs code|auto_map.*QWenLMHeadModel") as info:
        gguf_for(model)
    assert "tokenization_evil" in str(info.value)
    assert cache.seen == [] and not marker.exists()
    assert not (cache.root / "gguf").exists() or not list((cache.root / "gguf").glob("*.gguf"))


def test_the_converters_process_never_imports_checkpoint_code(tmp_path):
    pytest.importorskip("transformers")
    model = _evil_checkpoint(tmp_path / "evil")
    marker = tmp_path / "marker"
    script = ("import sys\nfrom envsim.training.gguf_driver import refuse_remote_code\nrefuse_remote_code()\n"
              "from transformers import AutoTokenizer\n"
              "try:\n    AutoTokenizer.from_pretrained(sys.argv[1], trust_remote_code=True)\n"
              "except Exception as exc:\n    print('refused:', type(exc).__name__, exc)\n")
    result = subprocess.run([sys.executable, "-c", script, str(model)], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "EVIL_MARKER": str(marker), "HF_HUB_OFFLINE": "1"})
    assert "refused: RemoteCodeRefused" in result.stdout, result.stdout + result.stderr
    assert not marker.exists()


def test_the_real_converter_never_imports_checkpoint_code(tmp_path):
    """The reproduction: llama.cpp's converter on a QWenLMHeadModel checkpoint (its tokenizer loaded with
    trust_remote_code=True) through the driver, without the pre-check; needs transformers, torch and a converter
    already extracted into the cache."""
    pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    converters = sorted(gguf_convert.cache_root().glob("*/converter/convert_hf_to_gguf.py"))
    if not converters:
        pytest.skip("no llama.cpp converter extracted in the cache (envsim train fetch-converter)")
    model = _evil_checkpoint(tmp_path / "evil")
    (model / "config.json").write_text(json.dumps({
        "architectures": ["QWenLMHeadModel"], "model_type": "qwen", "vocab_size": 16, "hidden_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 1, "intermediate_size": 16, "max_position_embeddings": 64,
        "seq_length": 64, "layer_norm_epsilon": 1e-6, "rotary_emb_base": 10000}))
    save_file({"transformer.wte.weight": torch.zeros(16, 8)}, str(model / "model.safetensors"))
    marker = tmp_path / "marker"
    converter = converters[-1].parent
    result = subprocess.run(gguf_convert.converter_command(converter, model, tmp_path / "out.gguf", "f16"),
                            capture_output=True, text=True, timeout=600,
                            env={**gguf_convert.converter_env(converter), "EVIL_MARKER": str(marker)})
    assert result.returncode != 0 and "RemoteCodeRefused" in result.stderr, result.stderr[-2000:]
    assert not marker.exists()


# --- 13. links, special files, shards, templates, what is hashed ------------------------------------------------


@pytest.mark.parametrize("name, target", [("chat_template.jinja", "/etc/passwd"), ("tokenizer.json", "/dev/zero"),
                                          ("model.safetensors", "../outside.safetensors")])
def test_links_out_of_the_checkpoint_are_refused(cache, tmp_path, name, target):
    model = checkpoint(tmp_path / "ckpt")
    (tmp_path / "outside.safetensors").write_bytes(b"secret weights")
    (model / name).unlink(missing_ok=True)
    (model / name).symlink_to(target)
    with pytest.raises(GgufUnavailable, match="symbolic link") as info:
        gguf_for(model)
    assert name in str(info.value) and target in str(info.value)
    assert cache.seen == []


def test_a_fifo_in_the_checkpoint_is_refused_without_blocking(cache, tmp_path):
    model = checkpoint(tmp_path / "ckpt")
    (model / "tokenizer.json").unlink()
    os.mkfifo(model / "tokenizer.json")
    previous = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError("blocked on the FIFO")))
    signal.alarm(20)  # a safety net against a hang, not a speed assertion
    try:
        with pytest.raises(GgufUnavailable, match="not a regular file"):
            gguf_for(model)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert cache.seen == []


def _sharded(folder: Path, shards: dict[str, bytes], index_names: list[str] | None = None) -> Path:
    checkpoint(folder)
    (folder / "model.safetensors").unlink()
    for name, data in shards.items():
        (folder / name).write_bytes(data)
    names = index_names or list(shards)
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {f"layer.{i}.weight": name for i, name in enumerate(names)}}))
    return folder


def test_the_key_covers_every_shard_the_index_names_and_refuses_paths_out(tmp_path):
    shards = {"model-00001-of-00002.safetensors": b"one", "model-00002-of-00002.safetensors": b"two"}
    base = cache_key(_sharded(tmp_path / "a", shards), "f16", "0.3.36")
    changed = cache_key(_sharded(tmp_path / "b", {**shards, "model-00002-of-00002.safetensors": b"TWO"}), "f16",
                        "0.3.36")
    assert changed != base
    (tmp_path / "outside.safetensors").write_bytes(b"elsewhere")
    for bad in ("../outside.safetensors", "/etc/passwd", "sub/model.safetensors", "missing.safetensors"):
        folder = _sharded(tmp_path / f"bad{len(bad)}", shards, [*shards, bad])
        with pytest.raises(ValueError, match="names shard"):
            cache_key(folder, "f16", "0.3.36")


def test_the_key_covers_extra_template_files(tmp_path):
    model = checkpoint(tmp_path / "ckpt")
    (model / "chat_template.jinja").write_text("{{ messages }}")
    base = cache_key(model, "f16", "0.3.36")
    (model / "additional_chat_templates").mkdir()
    (model / "additional_chat_templates" / "tool_use.jinja").write_text("{{ tools }}")
    with_tools = cache_key(model, "f16", "0.3.36")
    assert with_tools != base
    (model / "additional_chat_templates" / "tool_use.jinja").write_text("{{ tools | tojson }}")
    assert cache_key(model, "f16", "0.3.36") not in (base, with_tools)


def test_the_converter_reads_a_private_copy_and_the_entry_is_keyed_by_what_it_read(cache, tmp_path, monkeypatch):
    model = checkpoint(tmp_path / "ckpt", weights=b"original weights")

    def swapping_converter(conv, model_dir, outfile, outtype):  # the checkpoint changes while it is converted
        (model / "model.safetensors").write_bytes(b"swapped weights")
        outfile.write_bytes((model_dir / "model.safetensors").read_bytes())
        cache.seen.append(model_dir)

    monkeypatch.setattr(gguf_convert, "run_converter", swapping_converter)
    first = gguf_for(model)
    assert cache.seen[0] != model and not str(cache.seen[0]).startswith(str(model))
    assert first.read_bytes() == b"original weights"
    assert first.name.startswith(cache_key(checkpoint(tmp_path / "orig", weights=b"original weights"), "f16",
                                           "0.3.36")[:32])
    (model / "model.safetensors").write_bytes(b"original weights")
    assert gguf_for(model).read_bytes() == b"original weights"
    assert not any((cache.root / "work").iterdir())  # the private copy is gone


def test_an_absurd_vocabulary_is_refused_before_conversion(cache, tmp_path):
    model = checkpoint(tmp_path / "ckpt")
    (model / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"], "vocab_size": 10**9}))
    with pytest.raises(GgufUnavailable, match="vocab_size"):
        gguf_for(model)
    assert cache.seen == []


def test_the_converter_runs_bounded_and_dies_with_its_parent(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVSIM_GGUF_CONVERT_TIMEOUT", "3")
    converter = tmp_path / "converter"
    converter.mkdir()
    monkeypatch.setattr(gguf_convert, "converter_command", lambda *a: [sys.executable, "-c",
                                                                       "import time; time.sleep(60)"])
    started = time.monotonic()
    with pytest.raises(GgufUnavailable, match="longer than 3 s"):
        gguf_convert.run_converter(converter, tmp_path, tmp_path / "out.gguf", "f16")
    assert time.monotonic() - started < 50
    monkeypatch.setenv("ENVSIM_GGUF_CONVERT_MEMORY_GB", "0.5")
    monkeypatch.setattr(gguf_convert, "converter_command", lambda *a: [sys.executable, "-c",
                                                                       "x = bytearray(2 * 1024**3)"])
    with pytest.raises(GgufUnavailable, match="MemoryError|ENVSIM_GGUF_CONVERT_MEMORY_GB"):
        gguf_convert.run_converter(converter, tmp_path, tmp_path / "out.gguf", "f16")


# --- 12. the cache: stale leftovers, fresh files, links ---------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_part_files_of_dead_conversions_are_pruned_and_live_ones_kept(tmp_path):
    folder = tmp_path / "gguf"
    folder.mkdir()
    dead = folder / f".abc-f16.gguf.{_dead_pid()}.x1y2.part"
    live = folder / f".abc-f16.gguf.{os.getppid()}.z3w4.part"   # our parent: alive
    mine = folder / f".abc-f16.gguf.{os.getpid()}.q5r6.part"
    for path in (dead, live, mine):
        path.write_bytes(b"half")
    keep = folder / "keep.gguf"
    keep.write_bytes(b"x")
    deleted = gguf_convert.prune_cache(folder, keep)
    assert dead in deleted and not dead.exists()
    assert live.exists() and mine.exists()
    work = tmp_path / "work"
    (work / f"{_dead_pid()}-abc").mkdir(parents=True)
    (work / f"{os.getpid()}-def").mkdir()
    assert [p.name.split("-")[1] for p in gguf_convert.prune_work(work)] == ["abc"]


def test_pruning_never_deletes_a_file_just_converted_or_used(tmp_path):
    folder = tmp_path / "gguf"
    folder.mkdir()
    fresh = folder / "fresh.gguf"
    fresh.write_bytes(b"x" * 4000)                     # another process just wrote it (mtime now)
    old = folder / "old.gguf"
    old.write_bytes(b"x" * 4000)
    os.utime(old, (1000, 1000))
    keep = folder / "mine.gguf"
    keep.write_bytes(b"x" * 4000)
    deleted = gguf_convert.prune_cache(folder, keep, limit_gb=1000 / 2**30)
    assert deleted == [old] and fresh.exists()


def test_a_dangling_link_in_the_cache_does_not_crash_a_conversion(cache, tmp_path):
    folder = cache.root / "gguf"
    folder.mkdir(parents=True)
    (folder / "dangling.gguf").symlink_to(tmp_path / "nothing-here")
    (folder / "elsewhere.gguf").symlink_to("/etc/hostname")
    made = gguf_for(checkpoint(tmp_path / "ckpt"))
    assert made.is_file() and (folder / "dangling.gguf").is_symlink() and Path("/etc/hostname").exists()


# --- 11, 12, 14. the server ----------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _launcher(tmp_path: Path, monkeypatch) -> Path:
    """A stand-in ``transformers`` launcher on PATH (test_serve_stop's): answers every POST."""
    launcher = tmp_path / "bin" / "transformers"
    launcher.parent.mkdir(exist_ok=True)
    launcher.write_text(FAKE_TRANSFORMERS.format(python=sys.executable))
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{launcher.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SERVER_PID_FILE", str(tmp_path / "server.pid"))
    return launcher


def test_a_port_another_server_answers_is_refused_before_starting(tmp_path, monkeypatch, small_records):
    from envsim.evaluation.baselines.fake_server import FakeOpenAIServer

    _launcher(tmp_path, monkeypatch)
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a) or pytest.fail("started a server"))
    with FakeOpenAIServer(small_records) as other:
        port = other.httpd.server_address[1]
        with pytest.raises(RuntimeError, match=f"port {port} on 127.0.0.1 already answers"):
            serve.start_server("m", "transformers", port=port, ready_timeout=10)
    assert not started


def test_llama_cpp_readiness_needs_its_own_nonce(tmp_path, monkeypatch, small_records):
    """Another server that takes the port after the check passes the chat probe but not the nonce: the start
    fails (ours could not bind) instead of reporting that server ready."""
    from envsim.evaluation.baselines.fake_server import FakeOpenAIServer

    monkeypatch.setattr(serve, "llama_cpp_available", lambda: True)
    monkeypatch.setattr(gguf_convert, "gguf_for", lambda model, quantize, progress=None: Path("/x.gguf"))
    monkeypatch.setattr(serve, "refuse_hostile_template", lambda gguf, progress=None, source_digest=None: None)  # no real GGUF here
    monkeypatch.setattr(serve, "refuse_taken_port", lambda host, port: None)  # the other server came in between
    script = tmp_path / "server.py"
    script.write_text("import socket, sys\nargs = sys.argv\nport = int(args[args.index('--port') + 1])\n"
                      "socket.socket().bind(('127.0.0.1', port))\n")
    monkeypatch.setattr(serve, "llama_cpp_command", lambda gguf, host, port, name, **k: [
        sys.executable, str(script), "--port", str(port)])
    with FakeOpenAIServer(small_records) as other:
        port = other.httpd.server_address[1]
        with pytest.raises(RuntimeError, match="exited with code 1"):
            serve.start_server("oracle", "llama.cpp", port=port, ready_timeout=20)


def test_a_failed_start_shows_the_servers_last_lines_without_a_log(tmp_path, monkeypatch):
    launcher = tmp_path / "bin" / "transformers"
    launcher.parent.mkdir()
    launcher.write_text(f"#!{sys.executable}\nimport sys\nprint('loading weights')\n"
                        "print('error: tensor blk.0 has wrong shape \\x1b[2J', file=sys.stderr)\nsys.exit(1)\n")
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{launcher.parent}{os.pathsep}{os.environ['PATH']}")
    result = CliRunner().invoke(main, ["serve", "--model", "m", "--backend", "transformers", "--port",
                                       str(_free_port()), "--ready-timeout", "30"])
    assert result.exit_code == 1
    assert "exited with code 1" in result.output and "tensor blk.0 has wrong shape" in result.output
    assert "loading weights" in result.output and "\x1b" not in result.output


def test_serve_kill_9_takes_the_server_with_it(tmp_path, monkeypatch):
    _launcher(tmp_path, monkeypatch)
    port = _free_port()
    envsim = Path(sys.executable).parent / "envsim"
    command = [str(envsim)] if envsim.exists() else [sys.executable, "-m", "envsim.cli.main"]
    serving = subprocess.Popen([*command, "serve", "--model", "m", "--backend", "transformers", "--port", str(port),
                                "--ready-timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = serving.stdout.readline()
        assert first.startswith("serving m at"), first + serving.stdout.read()
        server_pid = int((tmp_path / "server.pid").read_text())
        assert alive(server_pid)
        serving.kill()                                           # kill -9: no handler of serve runs
        serving.wait(30)
        for _ in range(100):
            if not alive(server_pid):
                break
            time.sleep(0.1)
        assert not alive(server_pid), "the server outlived envsim serve"
    finally:
        serving.kill()
        if (tmp_path / "server.pid").exists() and alive(int((tmp_path / "server.pid").read_text())):
            os.kill(int((tmp_path / "server.pid").read_text()), signal.SIGKILL)


def test_a_reachable_host_warns_and_the_api_key_reaches_the_server_and_the_printed_command(monkeypatch):
    from envsim.cli import serve_cmd as serve_cli

    seen = {}

    class Started:
        base_url = "http://0.0.0.0:8000/v1"

        class process:
            returncode = 0

            @staticmethod
            def poll():
                raise KeyboardInterrupt

        def stop(self):
            seen["stopped"] = True

    def fake_start(model, backend, host, port, ready_timeout, log_path, **kwargs):
        seen.update(kwargs)
        return Started()

    monkeypatch.setattr(serve, "start_server", fake_start)
    result = CliRunner().invoke(main, ["serve", "--model", "m", "--host", "0.0.0.0"])
    assert "warning: --host 0.0.0.0" in result.stderr and "--api-key" in result.stderr
    result = CliRunner().invoke(main, ["serve", "--model", "m", "--host", "0.0.0.0"],
                                env={"ENVSIM_SERVE_API_KEY": "sk-local-123"})
    assert seen["api_key"] == "sk-local-123" and "anyone who reaches it" not in result.stderr
    assert '--api-key "$ENVSIM_SERVE_API_KEY"' in result.stdout and "sk-local-123" not in result.output
    result = CliRunner().invoke(main, ["serve", "--model", "m"])
    assert "warning" not in result.stderr and "--api-key" not in result.stdout
    assert serve_cli is not None


def test_the_key_goes_through_the_environment_never_the_command_line():
    env = serve.backend_environment("llama.cpp", "sk-1", "nonce")
    assert env["ENVSIM_SERVE_API_KEY"] == "sk-1" and env["ENVSIM_SERVE_NONCE"] == "nonce"
    assert serve.backend_environment("vllm", "sk-1", "n")["VLLM_API_KEY"] == "sk-1"
    assert "sk-1" not in serve.llama_cpp_command("/m.gguf", "127.0.0.1", 8000, "m")
    with pytest.raises(RuntimeError, match="transformers serve takes no API key"):
        serve.start_server("m", "transformers", api_key="sk-1")


def test_the_llama_cpp_server_refuses_oversized_requests_and_shows_its_nonce():
    import asyncio

    from envsim.training.llama_cpp_server import JsonSchemaFormat

    reached = []

    async def app(scope, receive, send):
        reached.append((await receive())["body"])

    def call(method, path, chunks, headers=()):
        sent = []
        messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

        async def receive():
            return messages.pop(0)

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": method, "path": path, "headers": list(headers)}
        asyncio.run(JsonSchemaFormat(app, max_request_bytes=1000, nonce="n-123")(scope, receive, send))
        return sent

    sent = call("POST", "/v1/chat/completions", [b"x" * 600, b"x" * 600])        # no length given, streamed
    assert sent[0]["status"] == 413 and not reached
    sent = call("POST", "/v1/completions", [b"{}"], [(b"content-length", b"190000000")])
    assert sent[0]["status"] == 413 and not reached
    call("POST", "/v1/chat/completions", [b'{"messages": []}'])
    assert reached == [b'{"messages": []}']
    sent = call("GET", "/envsim/nonce", [b""])
    assert sent[0]["status"] == 200 and json.loads(sent[1]["body"]) == {"nonce": "n-123"}
