"""llama.cpp serving with tested old values copied from the prompt (``envsim serve --copy-tested-values``).

A model trained on targets that test the old values a call reads (``replace_tests`` in a recipe,
``training/patch_form.py``) writes ``{"op":"test","path":P,"value":<old>}`` before using them. Served with
``--copy-tested-values``, llama.cpp decodes such an answer as ``training/copied_tests.decode_copying_tests``
does with transformers: when the answer so far ends at a test's value and the prompt's state (or view) holds a
scalar at P, that value's tokens are forced; the model chooses every path, operation and new value. The state
is read back from the request's own messages (``evaluation/prompting/shown_prompt.read_prompt``); a request
that is not a simulator prompt, or whose prompt shows no state, is decoded as it would be without the flag.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

#: What the server's log says after each answer decoded with copying (then the number of values copied).
COPIED_LINE = "tested values copied:"


def copying_processor(llama: Any, messages: Any) -> Any:
    """A ``CopyingLogitsProcessor`` for one chat request to ``llama`` (a ``llama_cpp.Llama``), or None when the
    messages are not a simulator prompt that shows a state."""
    from envsim.evaluation.prompting.shown_prompt import PromptUnreadable, read_prompt
    from envsim.training.copied_tests import CopyingLogitsProcessor

    try:
        shown = read_prompt(messages).state
    except PromptUnreadable:
        return None
    if not isinstance(shown, (dict, list)):
        return None
    return CopyingLogitsProcessor(
        shown, lambda ids: llama.detokenize(ids).decode("utf-8", errors="ignore"),
        lambda text: llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def with_copied_tested_values(create_chat_completion: Callable[..., Any]) -> Callable[..., Any]:
    """``Llama.create_chat_completion`` with a ``copying_processor`` appended to the request's logits processors
    (the method itself when the request is not a simulator prompt)."""

    @functools.wraps(create_chat_completion)
    def create(self: Any, messages: Any, *args: Any, **kwargs: Any) -> Any:
        processor = copying_processor(self, messages)
        if processor is not None:
            from llama_cpp import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList([*(kwargs.get("logits_processor") or []), processor])
        result = create_chat_completion(self, messages, *args, **kwargs)
        if processor is not None and isinstance(result, dict):  # a stream is counted by no one
            print(f"envsim: {COPIED_LINE} {processor.copied}", file=sys.stderr, flush=True)
        return result

    return create


def install() -> None:
    """Make every ``llama_cpp.Llama`` of this process decode chat requests with copied tested values."""
    import llama_cpp

    if not getattr(llama_cpp.Llama.create_chat_completion, "envsim_copies_tested_values", False):
        llama_cpp.Llama.create_chat_completion = with_copied_tested_values(llama_cpp.Llama.create_chat_completion)
        llama_cpp.Llama.create_chat_completion.envsim_copies_tested_values = True  # type: ignore[attr-defined]
