"""The CPU GRPO loop (``training.grpo_cpu``) on a tiny local model: zero-spread groups give no gradient,
only the last K layers (and the final norm) train, the shared-prompt forward equals the whole-sequence one,
the per-step log, the saved policy; the llama.cpp generator path against a fake OpenAI-compatible endpoint
(``start_server`` replaced): behaviour log-probs (or their refusal), syncs, staleness and overlap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

STEP_FIELDS = ("step", "reward_mean", "reward_std", "fm_rate", "cm_rate", "format_rate", "zero_spread_groups",
               "completion_tokens_mean", "generation_seconds", "train_seconds", "staleness")


torch = pytest.importorskip("torch", reason="needs the [train] extra")
pytest.importorskip("transformers", reason="needs the [train] extra")
pytestmark = pytest.mark.train

from click.testing import CliRunner  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from envsim.cli import main  # noqa: E402
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer  # noqa: E402
from envsim.evaluation.endpoints.providers import oracle_answer  # noqa: E402
from envsim.training import grpo_cpu  # noqa: E402
from envsim.training.grpo_cpu import CPUGRPOSettings, StepData, freeze_all_but_last, train_step  # noqa: E402
from envsim.training.grpo_generators import Completion, byte_level_table, prompt_ids  # noqa: E402
from envsim.training.rewards import RewardWeights  # noqa: E402
from envsim.training.rl import _tokenizer, rl_rows  # noqa: E402
from envsim.training.tiny_model import build_tiny_model  # noqa: E402

LAYERS = 3


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    """Training-split records, a 3-layer tiny model built on their prompts and answers."""
    from envsim.construction.pipeline import build_pool, write_jsonl
    from envsim.construction.splits import training_envs
    from envsim.envs.registry import list_envs

    root = tmp_path_factory.mktemp("grpo-cpu")
    envs = training_envs([e.id for e in list_envs() if e.builtin])[:1]
    records = build_pool(envs, 0, 1, 6, "train")[:4]
    write_jsonl(records, root / "records.jsonl")
    rows = rl_rows(records, "mdp", "2")
    texts = [m["content"] for row in rows for m in row["prompt"]] + [oracle_answer(r) for r in records]
    build_tiny_model(root / "tiny", texts * 3, vocab_size=800, hidden_size=32, layers=LAYERS, heads=2, kv_heads=1)
    return {"root": root, "records": records, "rows": rows, "model": root / "tiny"}


def _step_data(tiny: dict, tokenizer, texts: list[str]) -> StepData:
    row = tiny["rows"][0]
    completions = [Completion(t, list(tokenizer(t, add_special_tokens=False)["input_ids"]) + [tokenizer.eos_token_id],
                              True) for t in texts]
    return StepData([prompt_ids(tokenizer, row["prompt"])], [row["record"]], [completions])


def _train_once(tiny: dict, texts: list[str]) -> tuple[dict, dict, dict]:
    torch.manual_seed(0)
    tokenizer = _tokenizer(str(tiny["model"]))
    model = AutoModelForCausalLM.from_pretrained(tiny["model"], dtype=torch.float32)
    trainable = freeze_all_but_last(model, 1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    settings = CPUGRPOSettings(model=str(tiny["model"]), records=Path("x"), output_dir=Path("x"), num_generations=4,
                               batch=4, learning_rate=1e-2, prompt_version="2")
    figures = train_step(model, torch.optim.AdamW(trainable, lr=1e-2), _step_data(tiny, tokenizer, texts),
                         settings, apply_weights=False)
    return before, model.state_dict(), figures


def test_only_the_last_k_layers_and_the_final_norm_change(tiny):
    right = oracle_answer(tiny["records"][0])
    before, after, figures = _train_once(tiny, [right, "nonsense", right, "more nonsense"])
    assert figures["zero_spread_groups"] == 0 and figures["grad_norm"] > 0
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    last = f"model.layers.{LAYERS - 1}."
    assert changed and all(k.startswith(last) or k == "model.norm.weight" for k in changed), changed
    assert any(k.startswith(last) for k in changed)
    assert torch.equal(before["model.embed_tokens.weight"], after["model.embed_tokens.weight"])  # tied, frozen


def test_a_zero_spread_group_gives_zero_gradient(tiny):
    before, after, figures = _train_once(tiny, ["nonsense", "other nonsense", "x", "{}"])   # all rewarded 0
    assert figures["zero_spread_groups"] == 1 and figures["reward_std"] == 0
    assert figures["grad_norm"] == 0.0 and figures["trained_tokens"] == 0
    assert all(torch.equal(before[k], after[k]) for k in before)
    loss = grpo_cpu.grpo_loss([torch.randn(5, requires_grad=True)], [0.0])
    loss.backward()
    assert float(loss.detach()) == 0.0


def test_cli_torch_generator_writes_the_log_and_a_loadable_policy(tiny, tmp_path):
    run = tmp_path / "rl"
    result = CliRunner().invoke(main, ["train", "rl", "--model", str(tiny["model"]), "--records",
                                       str(tiny["root"] / "records.jsonl"), "--out", str(run), "--device", "cpu",
                                       "--generator", "torch", "--num-generations", "4", "--batch", "4",
                                       "--max-steps", "2", "--max-completion-length", "12", "--freeze-layers", "1",
                                       "--lr", "1e-3"])
    assert result.exit_code == 0, result.output
    steps = [json.loads(line) for line in (run / "rewards.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2]
    for step in steps:
        assert all(name in step for name in STEP_FIELDS), step
        assert step["staleness"] == 0 and step["generator"] == "torch" and step["groups"] == 1
    assert "step 2/2" in result.output and "s/step" in result.output and "ETA" in result.output
    logged = [json.loads(line) for line in (run / "completions.jsonl").read_text().splitlines()]
    assert len(logged) == 8
    policy = AutoModelForCausalLM.from_pretrained(run / "policy")
    assert policy.config.num_hidden_layers == LAYERS and (run / "policy" / "tokenizer.json").exists()
    assert json.loads((run / "summary.json").read_text())["steps"] == 2
    meta = json.loads((run / "policy" / "envsim_training.json").read_text())   # what serve prints commands with
    assert meta["trainer"] == "grpo-cpu" and meta["steps"] == 2 and meta["prompt_mode"] == "mdp"


class MixedServer(FakeOpenAIServer):
    """Answers the oracle on every other request and nonsense otherwise, with per-token log-probs spelled as
    llama-cpp-python's chat completions do (``logprobs.content``: token text, logprob, ``bytes`` None); with
    ``refuse_logprobs`` a log-prob request gets a 500, as from a server without ``logits_all``."""

    def __init__(self, records: list[dict], tokenizer, refuse_logprobs: bool = False) -> None:
        super().__init__(records, mode="mdp")
        self.tokenizer, self.served, self.bodies, self.refuse = tokenizer, 0, [], refuse_logprobs

    def answer(self, body: dict) -> tuple[int, dict]:
        self.bodies.append(body)
        if self.refuse and body.get("logprobs"):
            return 500, {"error": {"message": "logprobs is not supported for models created with logits_all=False"}}
        self.served += 1
        prompt = body["messages"][-1]["content"]
        record = self.by_prompt[prompt]
        text = self.oracle(prompt, record) if self.served % 2 else "no idea"
        back = {v: k for k, v in byte_level_table().items()}
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        pieces = [bytes(back[ch] for ch in self.tokenizer.convert_ids_to_tokens(i)) for i in ids]
        content = [{"token": p.decode("utf-8", "ignore"), "logprob": -1.0, "bytes": None} for p in pieces]
        payload = self._completion(body["model"], prompt, text)
        if body.get("logprobs"):
            payload["choices"][0]["logprobs"] = {"content": content}
        return 200, payload


@pytest.mark.parametrize("refuse", [False, True], ids=["logprobs", "logprobs-refused"])
def test_llama_cpp_generator_path_syncs_records_staleness_and_weights(tiny, tmp_path, monkeypatch, refuse):
    from envsim.training import serve

    tokenizer = _tokenizer(str(tiny["model"]))
    starts = []
    with MixedServer(tiny["records"], tokenizer, refuse_logprobs=refuse) as fake:
        class Running:
            base_url, model = fake.base_url, "policy"

            def stop(self) -> None:
                starts[-1]["stopped"] = True

        def start_server(model, backend="auto", **kwargs):
            assert AutoModelForCausalLM.from_pretrained(model).config.num_hidden_layers == LAYERS   # a saved policy
            starts.append({"model": model, "backend": backend, "threads": kwargs.get("threads"), "stopped": False})
            return Running()

        monkeypatch.setattr(serve, "start_server", start_server)
        settings = CPUGRPOSettings(model=str(tiny["model"]), records=tiny["root"] / "records.jsonl",
                                   output_dir=tmp_path / "rl", weights=RewardWeights(), prompt_version="2",
                                   num_generations=4, batch=4, max_steps=3, max_completion_length=64,
                                   freeze_layers=1, sync_every=2, generator="llama.cpp", learning_rate=1e-3,
                                   response_format="json-schema")
        summary = grpo_cpu.train_grpo_cpu(settings, echo=lambda line: None)
    assert [s["backend"] for s in starts] == ["llama.cpp", "llama.cpp"] and all(s["stopped"] for s in starts)
    assert all(s["threads"] == 1 for s in starts)
    steps = [json.loads(line) for line in (tmp_path / "rl" / "rewards.jsonl").read_text().splitlines()]
    assert [s["staleness"] for s in steps] == [0, 1, 0]
    assert [s["generation_overlapped"] for s in steps] == [False, True, False]   # not across a sync
    assert all(s["zero_spread_groups"] == 0 for s in steps)
    first, stale = fake.bodies[0], fake.bodies[4]
    assert "logprobs" not in first and stale["logprobs"] is True and stale["top_logprobs"] == 1   # only when stale
    if refuse:                  # one refused request, then no more log-prob requests, also after the next sync
        assert [s["is_weighted_tokens"] for s in steps] == [0, 0, 0] and steps[1]["logprobs_refused"]
        assert sum(1 for b in fake.bodies if b.get("logprobs")) == 1 and len(fake.bodies) == 13
    else:
        assert [s["is_weighted_tokens"] > 0 for s in steps] == [False, True, False]
    assert first["top_p"] == 1.0 and first["top_k"] == 0 and first["temperature"] == 1.0
    assert first["response_format"]["type"] == "json_object"            # llama-cpp-python's spelling
    assert first["response_format"]["schema"]["required"] == ["observation", "patch"]
    assert first["response_format"]["schema"]["properties"]["observation"]["type"][0] == "object"   # {} spelled out
    assert summary["generator"] == "llama.cpp" and summary["steps"] == 3
    assert not (tmp_path / "rl" / "sync").exists()
    AutoModelForCausalLM.from_pretrained(tmp_path / "rl" / "policy")


def test_shared_prompt_logprobs_and_gradients_equal_the_whole_sequence_batch(tiny):
    tokenizer = _tokenizer(str(tiny["model"]))
    model = AutoModelForCausalLM.from_pretrained(tiny["model"], dtype=torch.float32)
    freeze_all_but_last(model, 2)
    prompt = prompt_ids(tokenizer, tiny["rows"][0]["prompt"])
    completions = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in ("a b c d e", "{}", "xyz 12")]
    results = []
    for share in (True, False):
        model.zero_grad()
        logprobs = grpo_cpu.completion_logprobs(model, prompt, completions, 1.0, share_prompt=share)
        grpo_cpu.grpo_loss(logprobs, [1.0, -0.5, -0.5]).backward()
        results.append(([lp.detach() for lp in logprobs],
                        {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}))
    (shared, shared_grads), (whole, whole_grads) = results
    assert [len(x) for x in shared] == [len(c) for c in completions]
    for a, b in zip(shared, whole):
        assert torch.allclose(a, b, atol=1e-4)
    assert any(name.startswith(f"model.layers.{LAYERS - 2}.") for name in shared_grads)
    for name in whole_grads:
        assert torch.allclose(shared_grads[name], whole_grads[name], atol=1e-4, rtol=1e-3), name
