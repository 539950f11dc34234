"""Child-process entry points of ``gguf_convert`` (run as ``python -m envsim.training.gguf_driver``):

``convert CONVERTER_DIR MODEL_DIR [converter options]`` runs llama.cpp's ``convert_hf_to_gguf.py`` with two
additions: a BPE tokenizer whose pre-tokenizer hash the converter does not know (every locally trained
tokenizer, since the hash covers the token ids) gets the llama.cpp pre-tokenizer type that its
``tokenizer.json`` describes exactly (``pre_tokenizer_type``; anything else still fails as before), and a
byte-level BPE is never read as a SentencePiece-style vocabulary (``is_byte_level_bpe``).

``quantize SOURCE OUTFILE TYPE`` quantises a GGUF file with ``llama_model_quantize`` (TYPE: a
``LLAMA_FTYPE_MOSTLY_*`` suffix such as ``Q4_0``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: The split regexes of tokenizers whose llama.cpp pre-tokenizer reproduces them (``tokenizer.json`` spelling).
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPLIT_TYPES = {QWEN2_REGEX: "qwen2", LLAMA3_REGEX: "llama-bpe"}


def _byte_level(step: Any, *, regex: bool) -> bool:
    """Whether ``step`` is a ByteLevel pre-tokenizer without a prefix space, splitting with the GPT-2 regex
    (``regex``) or not."""
    return (isinstance(step, dict) and step.get("type") == "ByteLevel" and not step.get("add_prefix_space", True)
            and bool(step.get("use_regex", True)) == regex)


def _steps(part: dict[str, Any] | None, key: str) -> list[Any]:
    """The steps of a ``Sequence`` pre-tokenizer / decoder (``key``: its list's name), or the part itself."""
    part = part or {}
    return list(part.get(key) or []) if part.get("type") == "Sequence" else [part]


def is_byte_level_bpe(tokenizer: dict[str, Any]) -> bool:
    """Whether this ``tokenizer.json`` is a byte-level BPE (GPT-2 family: a ByteLevel pre-tokenizer), which
    llama.cpp must read as a ``gpt2`` vocabulary, never as a SentencePiece-style ``llama`` one."""
    return (tokenizer.get("model") or {}).get("type") == "BPE" and any(
        isinstance(step, dict) and step.get("type") == "ByteLevel"
        for step in _steps(tokenizer.get("pre_tokenizer"), "pretokenizers"))


def pre_tokenizer_type(tokenizer: dict[str, Any]) -> str | None:
    """The llama.cpp pre-tokenizer (``tokenizer.ggml.pre``) that splits text exactly like this ``tokenizer.json``
    does, or None when none is known to: a byte-level BPE (its decoder ending in ByteLevel) with no normaliser
    (or an empty Sequence of them) and

    * ByteLevel (GPT-2 regex, no prefix space): ``gpt-2`` (the tiny test models' tokenizer);
    * Digits (one by one), then that ByteLevel: ``smollm``;
    * a Split with Qwen2's or Llama 3's regex, then ByteLevel without its regex: ``qwen2`` / ``llama-bpe``
      (Qwen2's NFC normaliser is allowed, as the converter allows it for Qwen2 itself)."""
    decoders = _steps(tokenizer.get("decoder"), "decoders")
    if (tokenizer.get("model") or {}).get("type") != "BPE" or not decoders or decoders[-1].get("type") != "ByteLevel":
        return None
    normalizers = _steps(tokenizer.get("normalizer"), "normalizers")
    normalizer = None if normalizers in ([], [{}]) else (normalizers[0].get("type") if len(normalizers) == 1 else "?")
    steps = _steps(tokenizer.get("pre_tokenizer"), "pretokenizers")
    if normalizer is None and len(steps) == 1 and _byte_level(steps[0], regex=True):
        return "gpt-2"
    if len(steps) != 2:
        return None
    first, second = steps
    if (normalizer is None and first.get("type") == "Digits" and first.get("individual_digits")
            and _byte_level(second, regex=True)):
        return "smollm"
    if first.get("type") == "Split" and _byte_level(second, regex=False) and first.get("behavior") == "Isolated":
        found = SPLIT_TYPES.get((first.get("pattern") or {}).get("Regex", ""))
        if found and (normalizer is None or (found == "qwen2" and normalizer == "NFC")):
            return found
    return None


def convert(converter: Path, arguments: list[str]) -> None:
    """Run ``convert_hf_to_gguf.py`` with ``arguments``, its pre-tokenizer check extended by ``pre_tokenizer_type``."""
    import runpy

    sys.path[:0] = [str(converter / "gguf-py"), str(converter)]
    from conversion import base  # type: ignore[import-not-found]  # the converter's package, on sys.path now

    known = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self: Any, tokenizer: Any) -> str:
        try:
            return known(self, tokenizer)
        except NotImplementedError:
            path = Path(self.dir_model) / "tokenizer.json"
            found = pre_tokenizer_type(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None
            if found is None:
                raise
            base.logger.warning(f"pre-tokenizer hash not in the converter's list; {path} describes {found!r}: using it")
            return found

    spm_style = base.TextModel._set_vocab_llama_hf

    def _set_vocab_llama_hf(self: Any) -> Any:
        path = Path(self.dir_model) / "tokenizer.json"
        if path.is_file() and is_byte_level_bpe(json.loads(path.read_text(encoding="utf-8"))):
            # e.g. a tokenizer transformers rebuilt from a GGUF file: byte_fallback and a Sequence decoder make
            # the converter take it for a SentencePiece-style vocabulary, which llama.cpp then fails to load
            base.logger.warning(f"{path} is a byte-level BPE: converting it as a gpt2 vocabulary")
            raise FileNotFoundError("byte-level BPE: not a llama (SentencePiece-style) vocabulary")
        return spm_style(self)

    base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    base.TextModel._set_vocab_llama_hf = _set_vocab_llama_hf
    script = converter / "convert_hf_to_gguf.py"
    sys.argv = [str(script), *arguments]
    runpy.run_path(str(script), run_name="__main__")


def quantize(source: Path, outfile: Path, ftype: str) -> int:
    """Quantise ``source`` to ``outfile`` as ``LLAMA_FTYPE_MOSTLY_<ftype>``; returns the library's status (0: done)."""
    import ctypes
    import os

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.nthread = os.cpu_count() or 1
    return int(llama_cpp.llama_model_quantize(str(source).encode(), str(outfile).encode(), ctypes.byref(params)))


def main(argv: list[str]) -> int:
    """Dispatch ``convert`` / ``quantize`` (see the module docstring)."""
    if len(argv) >= 3 and argv[0] == "convert":
        convert(Path(argv[1]), [argv[2], *argv[3:]])
        return 0
    if len(argv) == 4 and argv[0] == "quantize":
        return quantize(Path(argv[1]), Path(argv[2]), argv[3])
    print("usage: gguf_driver convert CONVERTER_DIR MODEL_DIR [options] | quantize SOURCE OUTFILE TYPE",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
