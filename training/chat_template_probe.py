"""A GGUF's chat template rendered once, bounded, before ``envsim serve`` serves it.

llama-cpp-python renders the chat template embedded in the GGUF (``tokenizer.chat_template``, the checkpoint's
own after conversion, or whatever a ``.gguf`` given directly holds) on every request, in jinja2's
``ImmutableSandboxedEnvironment`` (``llama_chat_format.Jinja2ChatFormatter``), with no time or memory bound: a
template that loops 10^10 times hangs every request, one that builds a 10 GB string exhausts the machine. The
sandbox keeps a template from reaching Python; it does not bound what it computes.

So before the server starts, a child process (``python -m envsim.training.chat_template_probe GGUF``) reads the
template from the file's metadata (the ``gguf`` package's reader) and renders it with llama-cpp-python's own
``Jinja2ChatFormatter`` (the same sandbox class, extensions and globals the server uses) on EnvSim-shaped
conversations (``probe_conversations``: a system and a user message of about 2,000 and 30,000 characters, with
and without a prior assistant turn). The child dies with its parent and runs under ``RLIMIT_DATA``
(``process_guard.child_setup``; lowered to what reading took plus ``RENDER_DATA_BYTES`` before rendering); the
rendering has ``RENDER_SECONDS`` in all, the whole child ``PROBE_SECONDS``. ``check_chat_template`` returns a
refusal naming its class: ``time``, ``memory``, ``raised`` (the template raised, ``raise_exception`` included),
``output`` (a prompt larger than ``MAX_OUTPUT_FACTOR`` times the conversation's text plus ``OUTPUT_SLACK_CHARS``)
or ``unreadable`` (the metadata could not be read).

What it cannot see: a template whose cost depends on the request (a loop over a message's characters, a branch
taken only for some content or role) passes here and may still hang or exhaust the server on that request.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Seconds the renderings of all probe conversations may take together (real templates: milliseconds).
RENDER_SECONDS = 10.0
#: Seconds the whole child may take (reading a 150,000-token vocabulary's metadata takes a few seconds).
PROBE_SECONDS = 60.0
#: Data memory the child may use while reading the metadata (a 49,152-token vocabulary: about 260 MB).
READ_DATA_BYTES = 3 << 30
#: Data memory the rendering may add to what reading used.
RENDER_DATA_BYTES = 512 << 20
#: A rendered prompt may be at most this many times the conversation's text, plus ``OUTPUT_SLACK_CHARS``.
MAX_OUTPUT_FACTOR = 50
OUTPUT_SLACK_CHARS = 64 << 10
#: The sizes (characters of system + user text) of the probe conversations: EnvSim's short and long prompts.
PROBE_SIZES = (2_000, 30_000)
TEMPLATE_KEY = "tokenizer.chat_template"


@dataclass
class TemplateVerdict:
    """What the probe found: ``refusal`` (``time``, ``memory``, ``raised``, ``output``, ``unreadable``) and
    ``detail`` when the template is refused, else ``None``; ``rendered`` the prompt sizes in characters."""

    refusal: str | None
    detail: str = ""
    rendered: tuple[int, ...] = ()

    def message(self, gguf: str | Path) -> str:
        """The refusal as one line for the user (empty when the template passed)."""
        if self.refusal is None:
            return ""
        what = {"time": f"did not finish rendering within {RENDER_SECONDS:.0f} s",
                "memory": "exceeded the memory bound while rendering",
                "raised": "raised an error while rendering",
                "output": "rendered a prompt far larger than the conversation",
                "unreadable": "could not be read from the file's metadata"}.get(self.refusal, self.refusal)
        return (f"chat template of {gguf} refused ({self.refusal}): it {what} on an EnvSim-shaped conversation"
                + (f": {self.detail}" if self.detail else "") + ". llama.cpp renders it on every request with no "
                "bound on time or memory; serve a checkpoint or GGUF whose template renders normally")


def _filler(chars: int, seed: str) -> str:
    """EnvSim-like prompt text (instructions and JSON state lines) of exactly ``chars`` characters."""
    lines = [f"You simulate the environment {seed}: given the state and a tool call, answer the observation "
             "and a JSON patch of the state.\nState:"]
    i = 0
    while sum(map(len, lines)) + len(lines) < chars:
        lines.append(json.dumps({"id": f"{seed}-{i}", "name": f"item «{i}»", "qty": i % 17, "tags": ["a", "b"],
                                 "note": "line\twith \"quotes\" and {braces}"}))
        i += 1
    return "\n".join(lines)[:chars]


def probe_conversations() -> list[list[dict[str, str]]]:
    """The conversations rendered: for each of ``PROBE_SIZES``, a system and a user message sharing that many
    characters, alone and after a prior user/assistant exchange."""
    conversations = []
    for size in PROBE_SIZES:
        system = {"role": "system", "content": _filler(size // 2, "system")}
        user = {"role": "user", "content": _filler(size - size // 2, "call")}
        earlier = [{"role": "user", "content": _filler(400, "earlier")},
                   {"role": "assistant", "content": '{"observation": "ok", "patch": []}'}]
        conversations += [[system, user], [system, *earlier, user]]
    return conversations


def read_template(gguf: str | Path) -> tuple[str | None, str, str]:
    """``(template, bos_token, eos_token)`` from the GGUF's metadata, as llama-cpp-python takes them (the token
    texts of ``tokenizer.ggml.bos_token_id`` / ``eos_token_id``; ``""`` when absent); template ``None`` when the
    file holds none (llama-cpp-python then uses a built-in format)."""
    from gguf import GGUFReader

    fields = GGUFReader(str(gguf), "r").fields

    def text(name: str) -> str | None:
        field = fields.get(name)
        return None if field is None else str(field.contents())

    def token(name: str) -> str:
        field, tokens = fields.get(name), fields.get("tokenizer.ggml.tokens")
        if field is None or tokens is None:
            return ""
        index = int(field.contents())
        return str(tokens.contents(index)) if 0 <= index < len(tokens.data) else ""

    return text(TEMPLATE_KEY), token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id")


class _RenderTimeout(BaseException):
    """The rendering budget ran out (a ``BaseException``: nothing on the way catches it)."""


def _data_bytes() -> int:
    """This process's data memory now (``VmData``), in bytes; 0 where ``/proc`` does not say (not Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def render_all(template: str, bos: str, eos: str, seconds: float = RENDER_SECONDS) -> TemplateVerdict:
    """Render ``template`` on every probe conversation as llama-cpp-python's server would, within ``seconds``
    (in this process: the child calls it); the verdict names what went wrong first."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def expire(signum: int, frame: Any) -> None:
        raise _RenderTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    sizes: list[int] = []
    try:
        formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
        for messages in probe_conversations():
            prompt = formatter(messages=messages).prompt  # type: ignore[arg-type]
            given = sum(len(m["content"]) for m in messages)
            if not isinstance(prompt, str) or len(prompt) > MAX_OUTPUT_FACTOR * given + OUTPUT_SLACK_CHARS:
                size = len(prompt) if isinstance(prompt, str) else 0
                return TemplateVerdict("output", f"{size:,} characters from a conversation of {given:,}")
            sizes.append(len(prompt))
    except _RenderTimeout:
        return TemplateVerdict("time")
    except MemoryError:
        return TemplateVerdict("memory", f"over {RENDER_DATA_BYTES >> 20} MiB")
    except RecursionError:
        return TemplateVerdict("raised", "RecursionError: nested too deep")
    except Exception as exc:  # noqa: BLE001 - whatever the template raises is its refusal
        return TemplateVerdict("raised", f"{type(exc).__name__}: {str(exc)[:300]}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return TemplateVerdict(None, rendered=tuple(sizes))


def _probe(gguf: str) -> TemplateVerdict:
    """The child's work: read the template, lower the data bound, render."""
    try:
        template, bos, eos = read_template(gguf)
    except MemoryError:
        return TemplateVerdict("unreadable", f"reading the metadata exceeded {READ_DATA_BYTES >> 30} GiB")
    except Exception as exc:  # noqa: BLE001 - a file the reader cannot parse
        return TemplateVerdict("unreadable", f"{type(exc).__name__}: {str(exc)[:300]}")
    if template is None:
        return TemplateVerdict(None)
    used = _data_bytes()
    if used:  # else the bound child_setup set stays
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        limit = used + RENDER_DATA_BYTES
        resource.setrlimit(resource.RLIMIT_DATA, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    return render_all(template, bos, eos)


def check_chat_template(gguf: str | Path, timeout: float = PROBE_SECONDS) -> TemplateVerdict:
    """Probe the chat template of ``gguf`` in a bounded child process (see the module's docstring); a child
    killed by the time bound or dying without a verdict is a refusal too, never an exception."""
    from envsim.process_guard import child_setup

    command = [sys.executable, "-m", "envsim.training.chat_template_probe", str(gguf)]
    started = time.monotonic()
    try:
        run = subprocess.run(command, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
                             preexec_fn=child_setup(signal.SIGKILL, READ_DATA_BYTES),
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except subprocess.TimeoutExpired:
        return TemplateVerdict("time", f"the probe was killed after {time.monotonic() - started:.0f} s")
    try:
        found = json.loads(run.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        return TemplateVerdict(found["refusal"], str(found.get("detail", "")), tuple(found.get("rendered", ())))
    except (ValueError, IndexError, KeyError, TypeError):
        from envsim.control_chars import escape_lines

        last = escape_lines(run.stderr.decode("utf-8", "replace").strip()[-500:])
        refusal = "memory" if "MemoryError" in last else "raised"
        return TemplateVerdict(refusal, f"the probe ended with code {run.returncode} without a verdict"
                               + (f": {last}" if last else ""))


def main(argv: list[str] | None = None) -> None:
    """The child: print the verdict on ``argv[0]``'s template as one JSON line."""
    args = sys.argv[1:] if argv is None else argv
    verdict = _probe(args[0])
    print(json.dumps({"refusal": verdict.refusal, "detail": verdict.detail, "rendered": list(verdict.rendered)}))


if __name__ == "__main__":
    main()
