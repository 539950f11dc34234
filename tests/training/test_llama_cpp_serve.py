"""``envsim serve --backend llama.cpp`` without llama-cpp-python: the server command, the auto backend, the
thread default, the GGUF cache (keying, atomic entries, errors) and the converter's pre-tokenizer fallback.
The real conversion and server run in test_llama_cpp_tiny.py (slow tier)."""

from __future__ import annotations

import inspect
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from envsim.training import gguf_convert, serve
from envsim.training.gguf_convert import GgufUnavailable, cache_key, gguf_for
from envsim.training.gguf_driver import LLAMA3_REGEX, QWEN2_REGEX, is_byte_level_bpe, pre_tokenizer_type

from envsim.cli import main
from envsim.cli import serve_cmd as serve_cli


def checkpoint(folder: Path, weights: bytes = b"weights", tokenizer: str = "{}") -> Path:
    """A stand-in checkpoint directory: config, safetensors, tokenizer, and a file that does not matter."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"architectures": ["Qwen3ForCausalLM"]}')
    (folder / "model.safetensors").write_bytes(weights)
    (folder / "tokenizer.json").write_text(tokenizer)
    (folder / "trainer_state.json").write_text('{"global_step": 1}')
    return folder


@pytest.fixture
def cache(monkeypatch, tmp_path) -> Path:
    """An empty $ENVSIM_CACHE and a pretend installed llama-cpp-python 0.3.36."""
    monkeypatch.setenv("ENVSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gguf_convert, "llama_cpp_version", lambda: "0.3.36")
    return tmp_path / "cache" / "llama-cpp" / "0.3.36"


# --- the server command -------------------------------------------------------------------------------------

def test_llama_cpp_command_serves_the_gguf_under_the_given_name_with_prompt_cache():
    command = serve.serve_command("/c/m.gguf", "llama.cpp", "127.0.0.1", 8123, "runs/ckpt", threads=3, ctx=2048)
    assert command[:3] == [sys.executable, "-m", "envsim.training.llama_cpp_server"]
    options = dict(zip(command[3::2], command[4::2]))
    assert options == {"--model": "/c/m.gguf", "--model_alias": "runs/ckpt", "--host": "127.0.0.1", "--port": "8123",
                       "--n_threads": "3", "--n_threads_batch": "3", "--n_ctx": "2048", "--cache": "true",
                       "--logits_all": "false"}


def test_llama_cpp_command_defaults(monkeypatch):
    monkeypatch.setattr(serve.os, "cpu_count", lambda: 2)
    options = dict(zip(*[iter(serve.llama_cpp_command("m.gguf", "h", 1, "m")[3:])] * 2))
    assert options["--n_threads"] == options["--n_threads_batch"] == "1" and options["--n_ctx"] == "4096"


@pytest.mark.parametrize(("cpus", "threads"), [(1, 1), (2, 1), (3, 1), (4, 2), (8, 4), (64, 16)])
def test_default_threads_is_one_on_two_cpus_else_about_the_physical_cores(cpus, threads):
    assert serve.default_threads(cpus) == threads


def test_the_other_backends_commands_are_unchanged(monkeypatch):
    monkeypatch.setattr(serve, "cuda_available", lambda: False)
    assert serve.serve_command("ckpt", "vllm", "h", 1) == ["vllm", "serve", "ckpt", "--host", "h", "--port", "1",
                                                          "--served-model-name", "ckpt"]
    assert serve.serve_command("ckpt", "transformers", "h", 1) == ["transformers", "serve", "ckpt", "--host", "h",
                                                                  "--port", "1", "--device", "cpu"]


@pytest.mark.parametrize(("vllm", "gpu", "llama", "expected"), [
    (True, True, True, "vllm"), (True, False, True, "llama.cpp"), (False, True, True, "llama.cpp"),
    (False, False, True, "llama.cpp"), (False, False, False, "transformers"), (True, True, False, "vllm")])
def test_auto_backend(monkeypatch, vllm, gpu, llama, expected):
    monkeypatch.setattr(serve.shutil, "which", lambda name: "/usr/bin/vllm" if vllm and name == "vllm" else None)
    monkeypatch.setattr(serve, "cuda_available", lambda: gpu)
    monkeypatch.setattr(serve, "llama_cpp_available", lambda: llama)
    assert serve.resolve_backend("auto") == expected
    assert serve.resolve_backend("transformers") == "transformers"


def test_the_cli_choices_agree_with_the_library():
    assert serve_cli.BACKENDS == serve.BACKENDS
    assert serve_cli.QUANTIZE_CHOICES == gguf_convert.QUANTIZE_CHOICES


def test_envsim_serve_passes_the_llama_cpp_options_and_prints_progress_on_stderr(monkeypatch):
    seen = {}

    def fake_start(model, backend, host, port, ready_timeout, log_path, **options):
        seen.update(model=model, backend=backend, **options)
        options["progress"]("converting m to GGUF (q8_0) ...")
        raise RuntimeError("stop here")

    monkeypatch.setattr(serve, "start_server", fake_start)
    separate = {"mix_stderr": False} if "mix_stderr" in inspect.signature(CliRunner).parameters else {}  # click 8.1
    result = CliRunner(**separate).invoke(main, ["serve", "--model", "m", "--backend", "llama.cpp", "--quantize",
                                                 "q8_0", "--threads", "2", "--ctx", "8192"])
    assert result.exit_code == 1 and "stop here" in result.stderr
    assert "converting m to GGUF (q8_0)" in result.stderr and result.stdout == ""
    assert {k: seen[k] for k in ("backend", "quantize", "threads", "ctx")} == {
        "backend": "llama.cpp", "quantize": "q8_0", "threads": 2, "ctx": 8192}


def test_start_server_without_llama_cpp_names_the_extra(monkeypatch):
    monkeypatch.setattr(serve, "llama_cpp_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"\[cpu-serve\]"):
        serve.start_server("ckpt", "llama.cpp")


FAKE_LLAMA_SERVER = '''
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

args = sys.argv[1:]
port, alias = int(args[args.index("--port") + 1]), args[args.index("--model_alias") + 1]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):  # llama_cpp_server's identity route
        reply = json.dumps({"nonce": os.environ["ENVSIM_SERVE_NONCE"]})
        self.send_response(200)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply.encode())

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        reply = json.dumps({"model": alias, "asked": body["model"], "choices": [{"message": {"content": "x"}}]})
        self.send_response(200)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply.encode())


HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''


def test_start_server_converts_then_serves_the_gguf_under_the_models_name(monkeypatch, tmp_path):
    script = tmp_path / "fake_llama_server.py"
    script.write_text(FAKE_LLAMA_SERVER)
    converted = []
    monkeypatch.setattr(serve, "llama_cpp_available", lambda: True)
    monkeypatch.setattr(gguf_convert, "gguf_for",
                        lambda model, quantize, progress=None: converted.append((model, quantize)) or Path("/x.gguf"))
    monkeypatch.setattr(serve, "refuse_hostile_template", lambda gguf, progress=None, source_digest=None: None)  # no real GGUF here
    commands = []
    real = serve.llama_cpp_command

    def command(*args, **kwargs):
        commands.append(real(*args, **kwargs))
        return [sys.executable, str(script), *commands[-1][3:]]

    monkeypatch.setattr(serve, "llama_cpp_command", command)
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = serve.start_server("runs/ckpt", "llama.cpp", port=port, ready_timeout=30, quantize="q4_0", threads=1)
    try:
        assert converted == [("runs/ckpt", "q4_0")]
        options = dict(zip(commands[0][3::2], commands[0][4::2]))
        assert options["--model"] == "/x.gguf" and options["--model_alias"] == "runs/ckpt"
        assert server.base_url == f"http://127.0.0.1:{port}/v1" and serve.answers(server.base_url, "runs/ckpt")
    finally:
        server.stop()


# --- the GGUF cache -----------------------------------------------------------------------------------------

def test_a_gguf_file_is_served_as_it_is(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    assert gguf_for(model, "q4_0") == model and gguf_for(str(model)) == model


def test_cache_key_covers_weights_tokenizer_type_and_converter_version_only(tmp_path):
    base = cache_key(checkpoint(tmp_path / "a"), "f16", "0.3.36")
    assert cache_key(checkpoint(tmp_path / "same"), "f16", "0.3.36") == base           # content, not the path
    assert cache_key(checkpoint(tmp_path / "w", weights=b"other"), "f16", "0.3.36") != base
    assert cache_key(checkpoint(tmp_path / "t", tokenizer='{"x": 1}'), "f16", "0.3.36") != base
    assert cache_key(tmp_path / "a", "q8_0", "0.3.36") != base
    assert cache_key(tmp_path / "a", "f16", "0.3.37") != base
    (tmp_path / "a" / "trainer_state.json").write_text('{"global_step": 2}')           # not part of the model
    (tmp_path / "a" / "README.md").write_text("notes")
    assert cache_key(tmp_path / "a", "f16", "0.3.36") == base
    (tmp_path / "a" / "chat_template.jinja").write_text("{{ messages }}")              # changes the served prompt
    assert cache_key(tmp_path / "a", "f16", "0.3.36") != base


def test_conversion_is_cached_and_reused(cache, tmp_path, monkeypatch):
    runs = []

    def fake_converter(converter, model_dir, outfile, outtype):
        runs.append(outtype)
        outfile.write_bytes(b"GGUF" + outtype.encode())

    monkeypatch.setattr(gguf_convert, "converter_dir", lambda version, progress=None: tmp_path / "converter")
    monkeypatch.setattr(gguf_convert, "run_converter", fake_converter)
    model = checkpoint(tmp_path / "ckpt")
    lines: list[str] = []
    first = gguf_for(model, "q8_0", progress=lines.append)
    assert first.parent == cache / "gguf" and first.name.endswith("-q8_0.gguf") and first.read_bytes() == b"GGUFq8_0"
    assert lines == [f"converting {model} to GGUF (q8_0) ...", f"cached: {first}"]
    lines.clear()
    assert gguf_for(model, "q8_0", progress=lines.append) == first and runs == ["q8_0"]
    assert lines == [f"cached: {first}"]
    assert gguf_for(model, "f16") != first and runs == ["q8_0", "f16"]
    assert not list((cache / "gguf").glob("*.part"))


def test_quantized_types_are_made_from_the_cached_f16_file(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(gguf_convert, "converter_dir", lambda version, progress=None: tmp_path / "converter")
    monkeypatch.setattr(gguf_convert, "run_converter", lambda c, m, outfile, t: outfile.write_bytes(b"f16"))
    quantized = []

    def fake_quantize(source, outfile, quantize):
        quantized.append((source.name, quantize))
        outfile.write_bytes(source.read_bytes() + b">" + quantize.encode())

    monkeypatch.setattr(gguf_convert, "quantize_gguf", fake_quantize)
    q4 = gguf_for(checkpoint(tmp_path / "ckpt"), "q4_0")
    assert q4.read_bytes() == b"f16>q4_0" and quantized[0][0].endswith("-f16.gguf")
    assert sorted(p.name.rsplit("-", 1)[1] for p in (cache / "gguf").iterdir()) == ["f16.gguf", "q4_0.gguf"]


def test_a_failed_conversion_leaves_no_cache_entry(cache, tmp_path, monkeypatch):
    def failing(converter, model_dir, outfile, outtype):
        outfile.write_bytes(b"half written")
        raise GgufUnavailable("converting failed:\nTraceback ... boom")

    monkeypatch.setattr(gguf_convert, "converter_dir", lambda version, progress=None: tmp_path / "converter")
    monkeypatch.setattr(gguf_convert, "run_converter", failing)
    with pytest.raises(GgufUnavailable, match="boom"):
        gguf_for(checkpoint(tmp_path / "ckpt"))
    assert list((cache / "gguf").iterdir()) == []


def test_the_converters_error_output_is_in_the_message(cache, tmp_path, monkeypatch):
    converter = tmp_path / "converter"
    converter.mkdir()
    monkeypatch.setattr(gguf_convert, "converter_command", lambda *a: [sys.executable, "-c",
                                                                       "import sys; sys.exit('no such tensor: x')"])
    with pytest.raises(GgufUnavailable, match="no such tensor: x"):
        gguf_convert.run_converter(converter, tmp_path, tmp_path / "out.gguf", "f16")
    monkeypatch.setattr(gguf_convert, "converter_command", lambda *a: [sys.executable, "-c", "import sentencepiece_x"])
    with pytest.raises(GgufUnavailable, match=r"\[cpu-serve\]"):
        gguf_convert.run_converter(converter, tmp_path, tmp_path / "out.gguf", "f16")


def test_errors_say_what_is_wrong(cache, tmp_path):
    with pytest.raises(GgufUnavailable, match="unknown GGUF type 'q3'"):
        gguf_for(checkpoint(tmp_path / "ckpt"), "q3")
    with pytest.raises(GgufUnavailable, match="neither a .gguf file nor a checkpoint"):
        gguf_for(tmp_path / "nothing")


def test_missing_llama_cpp_python_names_the_extra(monkeypatch):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(GgufUnavailable, match=r"\[cpu-serve\]"):
        gguf_convert.llama_cpp_version()


def sdist(path: Path) -> Path:
    """A stand-in llama-cpp-python sdist: the converter's files among others."""
    files = {"vendor/llama.cpp/convert_hf_to_gguf.py": "print('convert')",
             "vendor/llama.cpp/conversion/__init__.py": "", "vendor/llama.cpp/conversion/qwen.py": "",
             "vendor/llama.cpp/gguf-py/gguf/__init__.py": "", "vendor/llama.cpp/gguf-py/tests/test_x.py": "",
             "vendor/llama.cpp/src/llama.cpp": "", "vendor/llama.cpp/convert_lora_to_gguf.py": "",
             "llama_cpp/__init__.py": "", "../escape.py": ""}
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            info = tarfile.TarInfo(f"llama_cpp_python-0.3.36/{name}")
            info.size = len(text)
            archive.addfile(info, io.BytesIO(text.encode()))
    return path


def test_only_the_converter_is_extracted_from_the_sdist(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("ENVSIM_LLAMA_CPP_SDIST", str(sdist(tmp_path / "llama_cpp_python-0.3.36.tar.gz")))
    lines: list[str] = []
    folder = gguf_convert.converter_dir("0.3.36", lines.append)
    assert folder == cache / "converter"
    found = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert found == ["conversion/__init__.py", "conversion/qwen.py", "convert_hf_to_gguf.py",
                     "gguf-py/gguf/__init__.py"]
    assert [p.name for p in cache.iterdir()] == ["converter"]   # no temporary folder left
    assert gguf_convert.converter_dir("0.3.36") == folder and len(lines) == 1
    env = gguf_convert.converter_env(folder)
    assert env["PYTHONPATH"].split(":")[:2] == [str(folder / "gguf-py"), str(folder)]


def test_an_sdist_of_another_version_is_refused(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("ENVSIM_LLAMA_CPP_SDIST", str(tmp_path / "llama_cpp_python-0.3.35.tar.gz"))
    with pytest.raises(GgufUnavailable, match="not the sdist of the installed 0.3.36"):
        gguf_convert.converter_dir("0.3.36")


def test_converter_command_runs_the_driver_with_this_python(tmp_path):
    command = gguf_convert.converter_command(tmp_path / "conv", tmp_path / "ckpt", tmp_path / "o.gguf", "q8_0")
    assert command == [sys.executable, "-m", "envsim.training.gguf_driver", "convert", str(tmp_path / "conv"),
                       str(tmp_path / "ckpt"), "--outfile", str(tmp_path / "o.gguf"), "--outtype", "q8_0"]


# --- the pre-tokenizer of tokenizers the converter's hash list does not know -------------------------------

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


def tokenizer_json(pre: dict, normalizer: dict | None = None, model: str = "BPE") -> dict:
    return {"normalizer": normalizer, "pre_tokenizer": pre, "model": {"type": model},
            "decoder": {"type": "ByteLevel"}}


def split(regex: str) -> dict:
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


#: What `envsim train fetch-model smollm2` writes (transformers rebuilds the tokenizer from the GGUF file):
#: byte_fallback and a Sequence decoder around ByteLevel, an empty normaliser Sequence.
FETCHED_SMOLLM2 = {"normalizer": {"type": "Sequence", "normalizers": []},
                   "pre_tokenizer": {**BYTE_LEVEL, "trim_offsets": False},
                   "model": {"type": "BPE", "byte_fallback": True},
                   "decoder": {"type": "Sequence", "decoders": [
                       {"type": "ByteFallback"}, {"type": "Fuse"},
                       {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                       {**BYTE_LEVEL, "add_prefix_space": True}]}}


@pytest.mark.parametrize(("tokenizer", "expected"), [
    (tokenizer_json(BYTE_LEVEL), "gpt-2"),
    (tokenizer_json({"type": "Sequence", "pretokenizers": [BYTE_LEVEL]}), "gpt-2"),
    (tokenizer_json({"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                            BYTE_LEVEL]}), "smollm"),
    (tokenizer_json({"type": "Sequence", "pretokenizers": [split(QWEN2_REGEX), {**BYTE_LEVEL, "use_regex": False}]},
                    {"type": "NFC"}), "qwen2"),
    (tokenizer_json({"type": "Sequence", "pretokenizers": [split(LLAMA3_REGEX), {**BYTE_LEVEL, "use_regex": False}]}),
     "llama-bpe"),
    (tokenizer_json({**BYTE_LEVEL, "add_prefix_space": True}), None),        # llama.cpp adds no prefix space
    (tokenizer_json(BYTE_LEVEL, {"type": "Lowercase"}), None),                # a normaliser llama.cpp lacks
    (tokenizer_json({"type": "Sequence", "pretokenizers": [split(LLAMA3_REGEX), {**BYTE_LEVEL, "use_regex": False}]},
                    {"type": "NFC"}), None),
    (tokenizer_json({"type": "Sequence", "pretokenizers": [split(r"\s+"), {**BYTE_LEVEL, "use_regex": False}]}), None),
    (tokenizer_json({"type": "Metaspace"}), None),
    (FETCHED_SMOLLM2, "gpt-2"),
    (tokenizer_json(BYTE_LEVEL, model="Unigram"), None),
])
def test_pre_tokenizer_type(tokenizer, expected):
    assert pre_tokenizer_type(tokenizer) == expected


def test_the_tiny_models_tokenizer_is_gpt2_pre_tokenized():
    """tiny_model.build_tiny_model's pre-tokenizer, as the tokenizers library writes it."""
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = tokenizers.decoders.ByteLevel()
    assert pre_tokenizer_type(json.loads(tokenizer.to_str())) == "gpt-2"


def test_the_cache_drops_the_least_recently_used_files_beyond_its_limit(tmp_path):
    import os

    folder = tmp_path / "gguf"
    folder.mkdir()
    for age, name in enumerate(["new", "mid", "old"]):
        (folder / f"{name}.gguf").write_bytes(b"x" * 400)
        os.utime(folder / f"{name}.gguf", (1000 - age, 1000 - age))
    keep = folder / "just-written.gguf"
    keep.write_bytes(b"x" * 400)
    deleted = gguf_convert.prune_cache(folder, keep, limit_gb=1000 / 2**30)   # room for two of the four
    assert [p.name for p in deleted] == ["mid.gguf", "old.gguf"]
    assert sorted(p.name for p in folder.iterdir()) == ["just-written.gguf", "new.gguf"]


def test_the_sdist_is_downloaded_from_the_package_index_and_dropped_after_extraction(cache, tmp_path, monkeypatch):
    monkeypatch.delenv("ENVSIM_LLAMA_CPP_SDIST", raising=False)
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        sdist(Path(command[command.index("-d") + 1]) / "llama_cpp_python-0.3.36.tar.gz")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(gguf_convert.subprocess, "run", fake_run)
    folder = gguf_convert.converter_dir("0.3.36")
    assert calls == [[sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                      "llama-cpp-python==0.3.36", "-d", str(cache / "sdist")]]
    assert (folder / "convert_hf_to_gguf.py").is_file() and [p.name for p in cache.iterdir()] == ["converter"]


def test_a_failed_sdist_download_says_how_to_give_one(cache, monkeypatch):
    monkeypatch.delenv("ENVSIM_LLAMA_CPP_SDIST", raising=False)
    failed = "No matching distribution"
    monkeypatch.setattr(gguf_convert.subprocess, "run",
                        lambda command, **kwargs: subprocess.CompletedProcess(command, 1, "", failed))
    with pytest.raises(GgufUnavailable, match="ENVSIM_LLAMA_CPP_SDIST.*\n.*No matching distribution"):
        gguf_convert.converter_dir("0.3.36")


def test_a_byte_level_bpe_is_never_converted_as_a_sentencepiece_style_vocabulary():
    assert is_byte_level_bpe(FETCHED_SMOLLM2) and is_byte_level_bpe(tokenizer_json(BYTE_LEVEL))
    llama2_style = {"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"}]},
                    "pre_tokenizer": None, "model": {"type": "BPE", "byte_fallback": True},
                    "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}]}}
    assert not is_byte_level_bpe(llama2_style) and pre_tokenizer_type(llama2_style) is None
    assert not is_byte_level_bpe(tokenizer_json({"type": "Metaspace"}))
