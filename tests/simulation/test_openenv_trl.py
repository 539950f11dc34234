"""Real TRL GRPO steps (``environment_factory``) on CPU against a real EnvSim environment and its simulated twin.

Needs the [openenv] extra plus TRL >= 1.x (``environment_factory``), which the [train] extra's TRL 0.24
(pinned by LLaMA-Factory 0.9.5) lacks: it runs in its own environment (docs/simulation.md, "Agent RL through OpenEnv").
A tiny Qwen3 model is built locally and taught the tool-call format with a few supervised steps
(a random quantity 1..8); then two GRPO steps run through TRL's own multi-turn tool loop.
"""

from __future__ import annotations

import inspect
import json
import os
import random
from pathlib import Path

import pytest

pytest.importorskip("openenv.core", reason="needs the [openenv] extra")
trl = pytest.importorskip("trl", reason="needs TRL >= 1.x in the [openenv] environment")
if "environment_factory" not in inspect.signature(trl.GRPOTrainer.__init__).parameters:
    pytest.skip("this TRL has no GRPOTrainer(environment_factory=...)", allow_module_level=True)
pytestmark = pytest.mark.slow

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from envsim.envs.registry import get_env  # noqa: E402
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer  # noqa: E402
from envsim.simulation.openenv_env import trl_environment_factory  # noqa: E402
from envsim.simulation.rl_env import Task  # noqa: E402
from envsim.training.tiny_model import build_tiny_model  # noqa: E402

ENV_ID = "online_store-v1"
START = get_env(ENV_ID).sample_state(0)
PRODUCT = next(iter(START["products"]))
TASK = Task(f"Restock {PRODUCT} by 5 units.",
            checks=[lambda s: s["products"][PRODUCT]["stock"] == START["products"][PRODUCT]["stock"] + 5])


@pytest.fixture(scope="module")
def warm_policy(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny Qwen3 (TRL's Qwen3 chat template) that emits ``restock_product`` calls with a random quantity."""
    work = tmp_path_factory.mktemp("trl-openenv")
    calls = [json.dumps({"name": "restock_product", "arguments": {"product_id": PRODUCT, "quantity": q}})
             for q in range(1, 9)]
    build_tiny_model(work / "tiny", [TASK.instruction, *[f"<tool_call>\n{c}\n</tool_call>" for c in calls]] * 20,
                     vocab_size=600, hidden_size=32, layers=1, heads=2, kv_heads=1)
    tokenizer = AutoTokenizer.from_pretrained(work / "tiny")
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    model = AutoModelForCausalLM.from_pretrained(work / "tiny")
    probe = trl_environment_factory(ENV_ID, task=TASK, tools=["restock_product"])()
    tools = [probe.restock_product]
    prompt = [{"role": "user", "content": TASK.instruction}]
    prompt_text = tokenizer.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=False)
    prompt_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]

    def completion_ids(quantity: int) -> list[int]:
        call = {"type": "function", "function": {"name": "restock_product",
                                                 "arguments": {"product_id": PRODUCT, "quantity": quantity}}}
        full = tokenizer.apply_chat_template(prompt + [{"role": "assistant", "content": "", "tool_calls": [call]}],
                                             tools=tools, tokenize=False)
        assert full.startswith(prompt_text)
        return tokenizer(full[len(prompt_text):], add_special_tokens=False)["input_ids"]

    torch.manual_seed(0)
    rng = random.Random(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(int(os.environ.get("ENVSIM_TRL_WARMUP_STEPS", "250"))):
        batch = [completion_ids(rng.randint(1, 8)) for _ in range(4)]
        width = max(map(len, batch))
        ids = torch.tensor([prompt_ids + b + [tokenizer.pad_token_id] * (width - len(b)) for b in batch])
        labels = torch.tensor([[-100] * len(prompt_ids) + b + [-100] * (width - len(b)) for b in batch])
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(loss) < 0.2
    model.save_pretrained(work / "warm")
    tokenizer.save_pretrained(work / "warm")
    return work, work / "warm"


def _grpo(policy: Path, out: Path, **env_kwargs) -> list[dict]:
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    factory = trl_environment_factory(ENV_ID, task=TASK, max_steps=4, tools=["restock_product"], **env_kwargs)
    # reset() appends the task instruction to the (empty) user turn, so the prompt is the one warmed up on
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": ""}], "seed": 0}] * 8)
    args = GRPOConfig(output_dir=str(out), use_cpu=True, max_steps=2, num_generations=4, per_device_train_batch_size=4,
                      max_completion_length=48, temperature=0.8, learning_rate=1e-3, logging_steps=1,
                      report_to="none", save_strategy="no", bf16=False, seed=0)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(policy),
                          processing_class=AutoTokenizer.from_pretrained(policy), train_dataset=data,
                          environment_factory=factory, args=args)
    trainer.train()
    return [entry for entry in trainer.state.log_history if "reward" in entry]


def test_trl_grpo_against_real_env_and_simulated_twin(warm_policy):
    work, policy = warm_policy
    real = _grpo(policy, work / "real")
    with FakeOpenAIServer([]) as server:
        twin = _grpo(policy, work / "twin", simulated="oracle", base_url=server.base_url)
        assert sum(server.calls.values()) > 0                    # the twin's tool calls went to the simulator
    for steps in (real, twin):
        assert len(steps) == 2
        assert all(step["tools/call_frequency"] > 0.5 for step in steps), steps      # the env was really stepped
        assert any(step["reward"] > 0 for step in steps), steps                        # the task's checks passed
        assert any(step["reward_std"] > 0 for step in steps), steps                    # a non-zero GRPO signal
    # a perfect simulator: the same seeded rollouts earn the same rewards
    assert [s["reward"] for s in twin] == [s["reward"] for s in real]
