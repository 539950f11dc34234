"""Decoding with tested old values copied from the prompt (``training.copied_tests``): which answer ends take a
copied value, and that the decoding loop feeds it to the model (which then goes on from it) where the model
would have written its own."""

from __future__ import annotations

import pytest

from envsim.training.copied_tests import copied_value, shown_scalar

SHOWN = {"precincts": {"PCT-1": {"tally": {"DEM": 5}}}, "voters": {"V-1": {"party": "IND", "tags": ["a"]}},
         "a/b": None, "flag": True}
TEST = '{"observation":{"success":true},"patch":[{"op":"test","path":"'


def test_a_shown_scalar_is_copied_as_compact_json_and_anything_else_is_left_to_the_model() -> None:
    assert copied_value(TEST + '/precincts/PCT-1/tally/DEM","value":', SHOWN) == "5"
    assert copied_value(TEST + '/voters/V-1/party","value":', SHOWN) == '"IND'  # the model closes it
    assert copied_value(TEST + '/a~1b","value":', SHOWN) == "null" and shown_scalar(SHOWN, "/flag") == "true"
    for path in ("/voters/V-1/tags", "/voters/V-1", "/voters/V-2/party", "/voters/V-1/tags/0/x", "bad"):
        assert copied_value(TEST + path + '","value":', SHOWN) is None, path
    replace = '{"op":"replace","path":"/precincts/PCT-1/tally/DEM","value":'
    assert copied_value(replace, SHOWN) is None
    assert copied_value(TEST + '/precincts/PCT-1/tally/DEM","value":5', SHOWN) is None  # already written


def test_a_string_whose_quote_the_model_opened_is_finished_and_a_non_string_is_not_forced() -> None:
    assert copied_value(TEST + '/voters/V-1/party","value":"', SHOWN) == "IND"
    assert copied_value(TEST + '/precincts/PCT-1/tally/DEM","value":"', SHOWN) is None


class ScriptedModel:
    """A stand-in causal LM whose greedy next token follows a script of the answer text so far: it writes a test of
    ``/n`` one character at a time, then its own (wrong) value ``9``, then ``}`` after any digit, then ends."""

    PREFIX = '{"op":"test","path":"/n","value":'

    def __init__(self, tokenizer, prompt_ids: int) -> None:
        self.tokenizer, self.prompt_ids, self.seen = tokenizer, prompt_ids, []

    def forward(self, input_ids=None, use_cache=None, past_key_values=None):  # the signature the loop inspects
        raise NotImplementedError

    def __call__(self, input_ids, use_cache=True, past_key_values=None):
        import torch

        self.seen += input_ids[0].tolist()
        text = self.tokenizer.decode(self.seen[self.prompt_ids:])
        if len(text) < len(self.PREFIX):
            nxt = self.tokenizer.convert_tokens_to_ids(self.PREFIX[len(text)])
        elif text == self.PREFIX:
            nxt = self.tokenizer.convert_tokens_to_ids("9")
        elif text[-1].isdigit():
            nxt = self.tokenizer.convert_tokens_to_ids("}")
        else:
            nxt = self.tokenizer.eos_token_id
        logits = torch.zeros(1, input_ids.shape[1], len(self.tokenizer))
        logits[0, -1, nxt] = 1.0

        class Output(dict):
            pass

        output = Output(past_key_values=len(self.seen))
        output.logits = logits
        return output


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from envsim.training.tiny_model import CHAT_TEMPLATE, SPECIAL_TOKENS

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(["x"], trainers.BpeTrainer(vocab_size=300, special_tokens=SPECIAL_TOKENS,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def test_the_loop_feeds_the_copied_value_and_the_model_goes_on_from_it() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from envsim.training.copied_tests import decode_copying_tests

    tokenizer = _tokenizer()
    messages = [{"role": "user", "content": "simulate"}]
    prompt = len(tokenizer(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
                           add_special_tokens=False)["input_ids"])
    own_model = ScriptedModel(tokenizer, prompt)
    own = decode_copying_tests(own_model, tokenizer, messages, {"n": 5}, copy=False)
    assert own == (ScriptedModel.PREFIX + "9}", 0)
    copied_model = ScriptedModel(tokenizer, prompt)
    answer, copied = decode_copying_tests(copied_model, tokenizer, messages, {"n": 5})
    assert (answer, copied) == (ScriptedModel.PREFIX + "5}", 1)
    assert tokenizer.decode(copied_model.seen[prompt:]) == ScriptedModel.PREFIX + "5}"  # the model read the 5
    assert decode_copying_tests(ScriptedModel(tokenizer, prompt), tokenizer, messages, {"m": 5}) == \
        (ScriptedModel.PREFIX + "9}", 0)  # not shown: the model's own value
    capped = decode_copying_tests(ScriptedModel(tokenizer, prompt), tokenizer, messages, {"n": 5}, max_new_tokens=4)
    assert capped == (ScriptedModel.PREFIX[:4], 0)


class CharTokens:
    """Token ids for a llama.cpp-shaped processor test: one id per character, over a small alphabet."""

    ALPHABET = list('{}[]":,/_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ')

    def ids(self, text: str) -> list[int]:
        return [self.ALPHABET.index(c) for c in text]

    def text(self, ids) -> str:
        return "".join(self.ALPHABET[int(i)] for i in ids)


def test_the_llama_cpp_processor_forces_the_copied_tokens_and_otherwise_passes_scores_through() -> None:
    np = pytest.importorskip("numpy")
    from envsim.training.copied_tests import CopyingLogitsProcessor

    chars = CharTokens()
    processor = CopyingLogitsProcessor(SHOWN, chars.text, chars.ids)
    prompt = chars.ids("simulate ")
    scores = np.linspace(0.0, 1.0, len(chars.ALPHABET), dtype=np.float32)
    assert processor(np.array(prompt), scores) is scores and processor.prompt_length == len(prompt)
    answer = '{"op":"test","path":"/voters/V-1/party","value":'
    written = []
    for _ in range(4):  # the model's own token would be the last of the alphabet (the largest score)
        out = processor(np.array(prompt + chars.ids(answer + "".join(written))), scores.copy())
        assert np.isfinite(out).sum() == 1
        written.append(chars.ALPHABET[int(out.argmax())])
    assert "".join(written) == '"IND' and processor.copied == 1
    after = processor(np.array(prompt + chars.ids(answer + '"IND')), scores)
    assert after is scores  # the model closes the string itself
    other = CopyingLogitsProcessor(SHOWN, chars.text, chars.ids)
    other(np.array(prompt), scores)
    unshown = '{"op":"test","path":"/voters/V-9/party","value":'
    assert other(np.array(prompt + chars.ids(unshown)), scores) is scores and other.copied == 0


def test_only_simulator_prompts_that_show_a_state_get_the_copying_processor(capsys) -> None:
    from envsim.evaluation.prompting.prompts import build_messages
    from envsim.training.copied_tests import CopyingLogitsProcessor
    from envsim.training.llama_cpp_copying import with_copied_tested_values

    seen = []

    class FakeLlama:
        def create_chat_completion(self, messages, **kwargs):
            seen.append(kwargs.get("logits_processor"))
            return {"choices": []}

        def detokenize(self, ids):
            return b""

        def tokenize(self, text, add_bos=False, special=False):
            return []

    pytest.importorskip("llama_cpp")
    FakeLlama.create_chat_completion = with_copied_tested_values(FakeLlama.create_chat_completion)
    record = {"env": "demo-v1", "state": {"n": 5}, "action": {"name": "bump", "arguments": {}}, "tools": [],
              "code": "def bump(self):\n    self.n += 1\n"}
    FakeLlama().create_chat_completion(messages=build_messages(record, "mdp", version="2"), max_tokens=4)
    FakeLlama().create_chat_completion([{"role": "user", "content": "hello"}])
    assert isinstance(seen[0][-1], CopyingLogitsProcessor) and seen[0][-1].shown == {"n": 5}
    assert seen[1] is None
    assert capsys.readouterr().err == "envsim: tested values copied: 0\n"  # once: for the simulator prompt


def test_serve_passes_copy_tested_values_to_llama_cpp_only(monkeypatch) -> None:
    from click.testing import CliRunner

    from envsim.cli import main
    from envsim.training import serve

    command = serve.llama_cpp_command("/m.gguf", "127.0.0.1", 8000, "m", copy_tested_values=True)
    assert command[-1] == "--copy_tested_values"
    assert "--copy_tested_values" not in serve.llama_cpp_command("/m.gguf", "127.0.0.1", 8000, "m")
    assert "--copy_tested_values" in serve.serve_command("/m.gguf", "llama.cpp", "127.0.0.1", 1, "m",
                                                         copy_tested_values=True)
    for backend in ("transformers", "vllm"):
        with pytest.raises(RuntimeError, match="llama.cpp decoding option"):
            serve.start_server("m", backend, copy_tested_values=True)
    seen = {}

    def fake_start(model, backend, host, port, ready_timeout, log_path, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop here")

    monkeypatch.setattr(serve, "start_server", fake_start)
    assert CliRunner().invoke(main, ["serve", "--model", "m", "--copy-tested-values"]).exit_code == 1
    assert seen["copy_tested_values"] is True
    CliRunner().invoke(main, ["serve", "--model", "m"])
    assert seen["copy_tested_values"] is False
