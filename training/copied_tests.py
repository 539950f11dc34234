"""Greedy decoding whose tested old values are copied from the prompt, not written by the model.

A model trained on targets with ``replace_tests: shown`` (``training/patch_form.py``) writes, before each
``replace`` of a scalar the prompt shows, ``{"op":"test","path":P,"value":<old>}`` and then the new value it
computes from the old one. At 135 M parameters the path is usually right and the copied old value often wrong (a
tally read from the wrong precinct: 28 of the 65 misses of the 2026-11-30 acceptance run), and the new value
follows the wrong old one. Here the decoder writes the old value itself: when the answer so far ends in
``{"op":"test","path":"P","value":`` and the prompt's shown state holds a scalar at P, the value's JSON (a string
without its closing quote) is fed as the next tokens; the model then goes on from the right old value. The model
still chooses every path, every operation and every new value; what it is given is only a copy of what its own
prompt shows. A path the prompt does not show, or a non-scalar, is left to the model.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

#: The end of an answer at which the decoder writes a tested value (compact JSON, op-first keys, as targets are);
#: a string's opening quote may already be written (BPE vocabularies hold ``":"`` as one token).
TEST_VALUE_AT = re.compile(r'\{"op":"test","path":"((?:[^"\\]|\\.)*)","value":("?)$')


def shown_scalar(shown: Any, pointer: str) -> str | None:
    """The compact JSON text of the scalar at JSON pointer ``pointer`` in ``shown``, or None (not shown, or not a
    scalar)."""
    from envsim.training.patch_form import _scalar_at

    try:
        found, value = _scalar_at(shown, json.loads(f'"{pointer}"'))
    except ValueError:
        return None
    return json.dumps(value, ensure_ascii=False) if found else None


def copied_value(answer_so_far: str, shown: Any) -> str | None:
    """The value text to feed when ``answer_so_far`` ends at a test's value of a shown scalar, else None (also when
    the model opened a string and the shown value is none: its answer is then its own). A string is fed without
    its closing quote: the model writes that as it learned it (BPE vocabularies merge it with what follows, as
    ``"},``), so the answer's tokens after the value stay the ones it was trained on."""
    match = TEST_VALUE_AT.search(answer_so_far)
    value = shown_scalar(shown, match.group(1)) if match else None
    if value is None or not value.startswith('"'):
        return None if value is None or match.group(2) else value
    return value[1:-1] if match.group(2) else value[:-1]


def decode_copying_tests(model: Any, tokenizer: Any, messages: list[dict[str, str]], shown: Any, *,
                         max_new_tokens: int = 384, copy: bool = True) -> tuple[str, int]:
    """The greedy answer to a chat prompt (its template, generation prompt), tested values copied from ``shown``
    when ``copy``; returns the answer and how many values were copied. Same loop either way, so ``copy=False`` is
    the like-for-like baseline."""
    import torch

    from envsim.training.kv_cache import returned_cache, with_cache
    from envsim.training.sft_cpu import end_of_turn_ids

    stop = end_of_turn_ids(tokenizer)
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    feed = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    generated: list[int] = []
    cache, copied = None, 0
    with torch.no_grad():
        while len(generated) < max_new_tokens:
            output = model(input_ids=torch.tensor([feed]), use_cache=True, **with_cache(model, cache))
            cache = returned_cache(output)
            token = int(output.logits[0, -1].argmax())
            if token in stop:
                break
            generated.append(token)
            feed = [token]  # not in the cache yet: the next forward reads it
            value = copied_value(tokenizer.decode(generated, skip_special_tokens=True), shown) if copy else None
            if value is not None:  # the value's tokens follow it in the same forward, as if the model wrote them
                forced = tokenizer(value, add_special_tokens=False)["input_ids"]
                generated += forced
                feed += forced
                copied += 1
    return tokenizer.decode(generated, skip_special_tokens=True), copied


def decode_all(model_dir: str, conversations: Sequence[list[dict[str, str]]], shown: Sequence[Any], *,
               max_new_tokens: int = 384, copy: bool = True) -> list[tuple[str, int]]:
    """``decode_copying_tests`` over many prompts with one model load (fp32, the CPU's threads as set)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.eval()
    return [decode_copying_tests(model, tokenizer, c, s, max_new_tokens=max_new_tokens, copy=copy)
            for c, s in zip(conversations, shown)]


class CopyingLogitsProcessor:
    """A llama-cpp-python logits processor that makes llama.cpp decode as ``decode_copying_tests`` does: when the
    answer so far ends at a test's value of a scalar ``shown`` holds, the value's tokens are forced one by one
    (every other token's logit set to minus infinity); otherwise the scores pass unchanged.

    ``detokenize`` turns token ids into text, ``tokenize`` text into ids (no BOS); the first call's ``input_ids``
    is the prompt, so the answer is what follows it. One processor per request: it keeps the prompt's length,
    the tokens still to force and how many values it copied (``copied``)."""

    def __init__(self, shown: Any, detokenize: Any, tokenize: Any) -> None:
        self.shown, self.detokenize, self.tokenize = shown, detokenize, tokenize
        self.prompt_length: int | None = None
        self.forced: list[int] = []
        self.copied = 0

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """The scores for the next token after ``input_ids`` (prompt and answer so far)."""
        import numpy as np

        if self.prompt_length is None:
            self.prompt_length = len(input_ids)
        if not self.forced:
            value = copied_value(self.detokenize(list(input_ids[self.prompt_length:])), self.shown)
            if value is not None:
                self.forced = list(self.tokenize(value))
                self.copied += 1
        if not self.forced:
            return scores
        token = self.forced.pop(0)
        if not 0 <= token < len(scores):
            self.forced = []
            return scores
        forced = np.full_like(scores, -np.inf)
        forced[token] = 0.0
        return forced
