"""Child-process entry points of ``gguf_convert`` (run as ``python -m envsim.training.gguf_driver``):

``convert CONVERTER_DIR MODEL_DIR [converter options]`` runs llama.cpp's ``convert_hf_to_gguf.py`` with two
additions: a BPE tokenizer whose pre-tokenizer hash the converter does not know (every locally trained
tokenizer, since the hash covers the token ids) gets the llama.cpp pre-tokenizer type that its
``tokenizer.json`` describes exactly (``pre_tokenizer_type``; anything else still fails as before), and a
byte-level BPE is never read as a SentencePiece-style vocabulary (``is_byte_level_bpe``).

The converter never runs code shipped in a checkpoint: several of its model classes load the tokenizer with
``trust_remote_code=True``, which makes transformers import Python files of the checkpoint named by its
``auto_map``. ``refuse_remote_code`` replaces the functions of ``transformers.dynamic_module_utils`` that fetch
and import such code (and the decision to trust it) before the converter starts, so a checkpoint that needs its
own code fails to convert, naming it (``gguf_snapshot`` refuses one declaring ``auto_map`` before this process
starts; this is the second wall).

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


class RemoteCodeRefused(RuntimeError):
    """The checkpoint asked transformers to import code it ships (``auto_map``); EnvSim never runs it."""


#: The functions of ``transformers.dynamic_module_utils`` through which code of a checkpoint is imported.
_CODE_PATHS = ("get_class_from_dynamic_module", "get_class_in_module", "get_cached_module_file")


def refuse_remote_code() -> None:
    """Make transformers refuse to import code of a model (``trust_remote_code`` decided ``False`` whatever the
    caller passed; the functions that would import it raise ``RemoteCodeRefused``), in this process, also in the
    modules that imported those functions by name before this call."""
    import transformers.dynamic_module_utils as dynamic

    def refused(*args: Any, **kwargs: Any) -> Any:
        named = next((str(a) for a in args if isinstance(a, (str, Path))), "")
        raise RemoteCodeRefused(f"the checkpoint asks to run its own code ({named[:200]}); EnvSim never runs code "
                                "shipped in a checkpoint (trust_remote_code is off)")

    def never_trust(trust_remote_code: Any, model_name: Any, has_local_code: Any, has_remote_code: Any,
                    *args: Any, **kwargs: Any) -> bool:
        if has_remote_code and not has_local_code:
            raise RemoteCodeRefused(f"{model_name} needs its own code to load; EnvSim never runs code shipped in a "
                                    "checkpoint (trust_remote_code is off)")
        return False

    originals = {name: getattr(dynamic, name) for name in _CODE_PATHS if hasattr(dynamic, name)}
    original_resolve = getattr(dynamic, "resolve_trust_remote_code", None)
    for name in originals:
        setattr(dynamic, name, refused)
    if original_resolve is not None:
        dynamic.resolve_trust_remote_code = never_trust
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("transformers") or module is None or module is dynamic:
            continue
        names = getattr(module, "__dict__", {})  # never getattr: transformers' lazy modules would import on it
        for name, original in originals.items():
            if names.get(name) is original:
                setattr(module, name, refused)
        if original_resolve is not None and names.get("resolve_trust_remote_code") is original_resolve:
            module.resolve_trust_remote_code = never_trust


def convert(converter: Path, arguments: list[str]) -> None:
    """Run ``convert_hf_to_gguf.py`` with ``arguments``, its pre-tokenizer check extended by ``pre_tokenizer_type``
    and no code of the checkpoint ever imported (``refuse_remote_code``)."""
    import runpy

    refuse_remote_code()

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
