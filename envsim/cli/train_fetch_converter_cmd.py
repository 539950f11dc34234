"""``envsim train fetch-converter``: llama.cpp's GGUF converter fetched at install time, with its progress shown,
instead of in the middle of the first ``envsim serve --backend llama.cpp`` of a checkpoint."""

from __future__ import annotations

import time

import click


@click.command("fetch-converter")
def fetch_converter_cmd() -> None:
    """Download the installed llama-cpp-python's sdist from the package index and extract its GGUF converter into
    the cache, as the first 'envsim serve --backend llama.cpp' of a checkpoint would otherwise do (needs the
    [cpu-serve] extra; $ENVSIM_LLAMA_CPP_SDIST names an already downloaded sdist). A second run finds it cached."""
    from envsim.training.gguf_convert import GgufUnavailable, converter_dir, llama_cpp_version

    steps: list[str] = []

    def say(line: str) -> None:
        steps.append(line)
        click.echo(line, err=True)

    started = time.monotonic()
    try:
        version = llama_cpp_version()
        folder = converter_dir(version, say)
    except (GgufUnavailable, OSError) as exc:
        raise click.ClickException(f"no GGUF converter: {exc}") from None
    how = f"fetched in {time.monotonic() - started:.0f} s" if steps else "already in the cache"
    click.echo(f"GGUF converter of llama-cpp-python {version}: {folder} ({how})")
