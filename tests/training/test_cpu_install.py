"""``envsim train fetch-converter``: the GGUF converter fetched at install time (not in the middle of the first
``serve``), its progress on stderr, a second run served from the cache, and failures that say what to do."""

from __future__ import annotations

import subprocess
from importlib import metadata

from click.testing import CliRunner
from envsim.training import gguf_convert

from envsim.cli import main
from tests.training.test_llama_cpp_serve import sdist


def test_fetch_converter_extracts_the_converter_once_and_then_finds_it_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gguf_convert, "llama_cpp_version", lambda: "0.3.36")
    monkeypatch.delenv("ENVSIM_LLAMA_CPP_SDIST", raising=False)
    downloads = []

    def fake_pip(command, **kwargs):
        downloads.append(command)
        sdist(tmp_path / "cache" / "llama-cpp" / "0.3.36" / "sdist" / "llama_cpp_python-0.3.36.tar.gz")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(gguf_convert.subprocess, "run", fake_pip)
    first = CliRunner().invoke(main, ["train", "fetch-converter"])
    folder = tmp_path / "cache" / "llama-cpp" / "0.3.36" / "converter"
    assert first.exit_code == 0, first.output
    assert (folder / "convert_hf_to_gguf.py").is_file() and len(downloads) == 1
    assert "downloading the llama-cpp-python 0.3.36 sdist" in first.stderr
    assert first.stdout.startswith(f"GGUF converter of llama-cpp-python 0.3.36: {folder} (fetched in ")
    again = CliRunner().invoke(main, ["train", "fetch-converter"])
    assert again.exit_code == 0 and len(downloads) == 1 and again.stderr == ""
    assert again.stdout == f"GGUF converter of llama-cpp-python 0.3.36: {folder} (already in the cache)\n"


def test_fetch_converter_without_llama_cpp_python_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVSIM_CACHE", str(tmp_path / "cache"))

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    result = CliRunner().invoke(main, ["train", "fetch-converter"])
    assert result.exit_code == 1 and '[cpu-serve]' in result.output
    assert not (tmp_path / "cache").exists()


def test_a_failed_download_exits_1_and_says_how_to_give_the_sdist(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(gguf_convert, "llama_cpp_version", lambda: "0.3.36")
    monkeypatch.delenv("ENVSIM_LLAMA_CPP_SDIST", raising=False)
    monkeypatch.setattr(gguf_convert.subprocess, "run",
                        lambda command, **kwargs: subprocess.CompletedProcess(command, 1, "", "No route to host"))
    result = CliRunner().invoke(main, ["train", "fetch-converter"])
    assert result.exit_code == 1
    assert "ENVSIM_LLAMA_CPP_SDIST" in result.stderr and "No route to host" in result.stderr
    assert "GGUF converter of" not in result.stdout
