"""``envsim serve``: an OpenAI-compatible endpoint for a local model (vLLM on GPU; llama.cpp or transformers
on CPU)."""

from __future__ import annotations

import functools
import signal
import time
from typing import Any

import click

from envsim.cli.serve_commands import usage_lines

# Kept in step with envsim.training.serve / gguf_convert (imported lazily: `envsim --help` stays fast);
# tests/training/test_llama_cpp_serve.py checks they agree.
BACKENDS = ("auto", "vllm", "llama.cpp", "transformers")
QUANTIZE_CHOICES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k_m", "q5_k_m", "q6_k")


def _interrupt(_signum: int, _frame: Any) -> None:
    """Turn SIGTERM (and an inherited ignored SIGINT) into the Ctrl-C path, which stops the server cleanly."""
    raise KeyboardInterrupt


@click.command("serve")
@click.option("--model", required=True,
              help="Local model directory (e.g. an SFT checkpoint); for llama.cpp also a .gguf file.")
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="auto: vLLM when it is installed and a GPU is visible, else llama.cpp when llama-cpp-python is "
                   "installed (the [cpu-serve] extra), else transformers serve.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--ready-timeout", type=float, default=600.0, show_default=True,
              help="Seconds to wait for readiness (after any GGUF conversion).")
@click.option("--log", "log_path", default=None, help="Write the server's output to this file.")
@click.option("--quantize", type=click.Choice(QUANTIZE_CHOICES), default="f16", show_default=True,
              help="llama.cpp: the GGUF type a checkpoint directory is converted to (cached; a .gguf file is "
                   "served as it is).")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="llama.cpp: CPU threads [default: 1 with at most 2 CPUs, else half the CPUs, at most 16].")
@click.option("--ctx", type=click.IntRange(min=256), default=4096, show_default=True,
              help="llama.cpp: context length in tokens (prompt + answer).")
@click.option("--api-key", envvar="ENVSIM_SERVE_API_KEY", show_envvar=True, default=None,
              help="llama.cpp and vLLM: answer only requests that carry this key (Authorization: Bearer KEY). "
                   "Passed to the server through its environment, never its command line; the printed eval "
                   "command reads it from $ENVSIM_SERVE_API_KEY. Use it with a --host other machines can reach.")
@click.option("--copy-tested-values", is_flag=True,
              help="llama.cpp: copy the old value of each tested path the prompt shows into the answer "
                   "(RFC 6902 tests the model writes before using a value; docs/real-model.md).")
def serve_cmd(model: str, backend: str, host: str, port: int, ready_timeout: float, log_path: str | None,
              quantize: str, threads: int | None, ctx: int, api_key: str | None, copy_tested_values: bool) -> None:
    """Start the server, wait until it answers, print the base URL; Ctrl-C (SIGINT) or SIGTERM stops it cleanly,
    and the server dies with this command however it ends (kill -9 included, on Linux).

    With llama.cpp a checkpoint directory is first converted to GGUF (progress lines go to stderr, so the first
    line on stdout is still "serving ..."). A port that already answers is refused; a server that fails to start
    shows its last output lines."""
    from envsim.training.serve import is_loopback, start_server

    if not is_loopback(host):
        click.echo(f"warning: --host {host} makes the server reachable from other machines"
                   + ("" if api_key else ", and without --api-key anyone who reaches it can use it"), err=True)
    start = functools.partial(start_server, threads=threads, quantize=quantize, ctx=ctx, api_key=api_key,
                              copy_tested_values=copy_tested_values, progress=lambda line: click.echo(line, err=True))
    # A server started in the background inherits SIGINT ignored (non-interactive shells do that) and SIGTERM
    # would end this process without stopping the server it started in its own session: both stop it here.
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _serve_until_stopped(start, model, backend, host, port, ready_timeout, log_path, bool(api_key))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve_until_stopped(start_server: Any, model: str, backend: str, host: str, port: int, ready_timeout: float,
                         log_path: str | None, keyed: bool = False) -> None:
    """Start the server, print where it is, keep it until it exits (an error) or this process is interrupted."""
    from envsim.control_chars import escape_lines

    try:
        server = start_server(model, backend, host, port, ready_timeout, log_path)
    except RuntimeError as exc:
        raise click.ClickException(escape_lines(exc)) from None
    except KeyboardInterrupt:
        click.echo("interrupted before the server answered; it was stopped")
        raise SystemExit(130) from None
    try:  # from here on, an interrupt always stops the server
        click.echo(f"serving {model} at {server.base_url}")
        for line in usage_lines(model, server.base_url, keyed):  # with the prompt settings the model was trained with
            click.echo(line)
        while server.process.poll() is None:
            time.sleep(0.5)
        exit_message = getattr(server, "exit_message", None)
        raise click.ClickException(exit_message() if exit_message else
                                   f"server exited with code {server.process.returncode}")
    except KeyboardInterrupt:
        click.echo("stopping server ...")
    finally:
        server.stop()
