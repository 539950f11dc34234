"""GRPO on a CPU: a plain torch loop whose completions come from llama.cpp (or torch ``generate``).

TRL's ``GRPOTrainer`` (``training.rl``) decodes with torch, about 80 CPU ms per token for SmolLM2-135M, which
makes a GRPO step on 1.3k-token prompts take many minutes on two cores. This loop keeps the same prompts
(``rl_rows``), the same reward (``training.rewards``: format, FM and CM, weighted) and the same group-relative
advantages, and changes where the completions come from and what trains:

* **Generation.** ``generator="llama.cpp"``: ``training.serve.start_server(backend="llama.cpp")`` serves a GGUF
  conversion of the policy on its own thread; the server is restarted on the current weights every
  ``sync_every`` steps (the policy is saved to ``OUT/sync`` and converted). Completions of step ``s`` therefore
  come from the policy as of the last sync, at most ``sync_every - 1`` updates old; ``rewards.jsonl`` records
  that staleness per step. ``generator="torch"`` samples with ``generate`` on the current weights (staleness 0).
* **Overlap.** With llama.cpp, the next step's completions are generated (by the server, on its own thread
  and core) while this step trains, unless the next step starts a fresh server (it needs this step's update).
  The samples are the same either way (the server's weights change only at a sync); a step then costs about
  the larger of generation and training instead of their sum (``generation_overlapped``,
  ``generation_wait_seconds`` in the log; ``overlap=False`` turns it off).
* **Importance weights.** One optimizer step per generation batch: with an on-policy generator the ratio
  ``pi/pi_old`` is 1 and the GRPO loss is ``-A * log pi`` per completion token. On a stale step (staleness
  >= 1) the llama.cpp generator asks for per-token log-probs (``logprobs: true, top_logprobs: 1``;
  llama-cpp-python's chat completions return them as ``logprobs.content`` when its server keeps all logits,
  its default ``logits_all``); where their pieces map back to our token ids, each token's term is weighted by
  the truncated importance weight ``min(1, exp(logp_policy - logp_behaviour))`` (detached), which corrects for
  the updates since the sync (and for the f16 copy). Right after a sync no log-probs are asked (the server
  holds the current weights: the weight would be 1 up to f16 rounding), because llama-cpp-python computes them
  slowly (it sorts the whole vocabulary per generated token). Where the endpoint reports none (an error to the
  request, ``behaviour_logprobs=False``, pieces that do not map) or the temperature is not 1 (the server
  reports log-probs of the untempered logits), the weight is 1: the approximation that the server's weights are
  the policy's. With ``response_format`` (json-schema) the server samples under a grammar, so completions are
  not the policy's own samples; the weights then compare with the unconstrained log-probs the server reports.
  ``is_weighted_tokens`` / ``is_truncated_tokens`` in the log count the weighted and the down-weighted tokens.
* **What trains.** Only the last ``freeze_layers`` decoder layers and the final norm (and ``lm_head`` when it is
  not tied to the embeddings), the recipe of ``envsim train sft --finetuning freeze``. Every earlier parameter
  has ``requires_grad=False``, so autograd records nothing before the first trainable layer (the frozen prefix
  runs as under ``torch.no_grad``: no activations kept) and the backward pass stops there.
* **Zero-spread groups.** A group whose rewards are all equal has zero advantages; it contributes nothing, so
  it is not even forwarded (``zero_spread_groups`` counts them per step).

Per step, one JSON line in ``OUT/rewards.jsonl`` and one progress line on stderr; every scored completion in
``OUT/completions.jsonl``; the final policy in ``OUT/policy`` (``save_pretrained`` + tokenizer) and
``OUT/summary.json``.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from envsim.evaluation.prompting.prompts import LATEST_PROMPT_VERSION, PROMPT_MODES, check_version
from envsim.safe_files import write_json
from envsim.training.checkpoint_meta import write_training_file
from envsim.training.grpo_generators import (Completion, EndpointGenerator, Generator, TorchGenerator,
                                              llama_cpp_response_format, prompt_ids)
from envsim.training.kv_cache import returned_cache, with_cache
from envsim.training.rewards import COMPONENTS, RewardWeights, component_value, score_completion

GENERATORS: tuple[str, ...] = ("auto", "llama.cpp", "torch")
EPS = 1e-4  # TRL's epsilon in (r - mean) / (std + eps)


@dataclass
class CPUGRPOSettings:
    """One CPU GRPO run. ``batch`` counts completions per step (as TRL's per-device batch): ``batch /
    num_generations`` prompts per step."""

    model: str
    records: Path
    output_dir: Path                       # the run directory: rewards.jsonl, completions.jsonl, policy/, summary.json
    weights: RewardWeights = field(default_factory=RewardWeights)
    prompt_mode: str = "mdp"
    prompt_version: str = LATEST_PROMPT_VERSION
    version: str = "v1"
    learning_rate: float = 1e-6
    num_generations: int = 4
    batch: int = 4
    max_steps: int = 20
    max_completion_length: int = 384
    temperature: float = 1.0
    freeze_layers: int = 4
    sync_every: int = 5
    generator: str = "auto"
    threads: int | None = None
    server_threads: int = 1
    response_format: str = "free"
    behaviour_logprobs: bool = True        # llama.cpp: ask for log-probs on stale steps (truncated IS weights)
    overlap: bool = True                   # llama.cpp: generate the next step's completions while this one trains
    max_grad_norm: float = 1.0
    seed: int = 0

    def check(self) -> None:
        """Raise ``ValueError`` on settings the loop would reject later."""
        if self.prompt_mode not in PROMPT_MODES:
            raise ValueError(f"unknown prompt mode {self.prompt_mode!r}")
        check_version(self.prompt_version)
        if self.generator not in GENERATORS:
            raise ValueError(f"unknown generator {self.generator!r}; choose from {', '.join(GENERATORS)}")
        if self.num_generations < 2:
            raise ValueError("GRPO needs at least 2 generations per prompt (advantages are group-relative)")
        if self.batch < self.num_generations or self.batch % self.num_generations:
            raise ValueError(f"--batch ({self.batch} completions per step) must be a multiple of "
                             f"--num-generations ({self.num_generations})")
        if self.freeze_layers < 1 or self.sync_every < 1 or self.max_steps < 1:
            raise ValueError("--freeze-layers, --sync-every and --max-steps must be at least 1")
        if all(w == 0 for w in self.weights.as_list()):
            raise ValueError("all reward weights are zero")

    def to_json(self) -> dict[str, Any]:
        """JSON form (``OUT/grpo_cpu_config.json``)."""
        data = asdict(self)
        data["records"], data["output_dir"] = str(self.records), str(self.output_dir)
        return data


def default_threads() -> int:
    """Torch threads: 1 on a machine of at most 2 cores (the generator server gets the other), else half."""
    cores = os.cpu_count() or 1
    return 1 if cores <= 2 else max(1, cores // 2)


def group_advantages(rewards: list[float], group_size: int) -> tuple[list[float], int]:
    """Group-relative advantages ``(r - group mean) / (group std + eps)`` (unbiased std, as TRL) and the number
    of groups with zero spread (their advantages are exactly 0)."""
    advantages, zero = [], 0
    for start in range(0, len(rewards), group_size):
        group = rewards[start:start + group_size]
        mean = sum(group) / len(group)
        spread = max(group) - min(group)
        if spread == 0:
            zero += 1
            advantages += [0.0] * len(group)
            continue
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / max(len(group) - 1, 1))
        advantages += [(r - mean) / (std + EPS) for r in group]
    return advantages, zero


def freeze_all_but_last(model: Any, trainable_layers: int) -> list[Any]:
    """Freeze every parameter except the last ``trainable_layers`` decoder layers, the final norm and an untied
    ``lm_head``; returns the trainable parameters."""
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    layers = model.model.layers
    if trainable_layers > len(layers):
        raise ValueError(f"--freeze-layers {trainable_layers}: the model has only {len(layers)} layers")
    modules = [*layers[len(layers) - trainable_layers:], model.model.norm]
    head, embeddings = model.get_output_embeddings(), model.get_input_embeddings()
    if head is not None and head.weight is not embeddings.weight:
        modules.append(head)
    for module in modules:
        for parameter in module.parameters():
            parameter.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def completion_logprobs(model: Any, prompt: list[int], completions: list[list[int]],
                        temperature: float = 1.0, share_prompt: bool = True) -> list[Any]:
    """Per-token log-probs (a 1-D tensor each, with grad) of each completion after ``prompt``; logits only for
    the completion positions.

    ``share_prompt``: the prompt (the same for the whole group) runs once, batch 1, and its KV cache is repeated
    for the completions (right-padded, one batch): with a 1.3k-token prompt and 4 completions of 384 tokens that
    is 2.8k token positions instead of 6.8k. Gradients still flow through the prompt's keys and values in the
    trainable layers (the cache is repeated with a differentiable op), so the result equals the padded batch of
    whole sequences (``share_prompt=False``), which a test checks."""
    import torch

    lengths = [len(c) for c in completions]
    longest = max(lengths)
    ids = torch.zeros((len(completions), longest), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, completion in enumerate(completions):
        ids[row, :len(completion)] = torch.tensor(completion)
        mask[row, :len(completion)] = 1
    if share_prompt:
        first = model.model(input_ids=torch.tensor([prompt]), use_cache=True)
        cache = returned_cache(first)
        cache.batch_repeat_interleave(len(completions))
        full_mask = torch.cat([torch.ones((len(completions), len(prompt)), dtype=torch.long), mask], dim=1)
        rest = model.model(input_ids=ids, attention_mask=full_mask, use_cache=True, **with_cache(model.model, cache))
        last = first.last_hidden_state[:, -1:].expand(len(completions), 1, -1)   # predicts the first token
        hidden = torch.cat([last, rest.last_hidden_state[:, :-1]], dim=1)
    else:
        whole = torch.cat([torch.tensor([prompt]).expand(len(completions), -1), ids], dim=1)
        whole_mask = torch.cat([torch.ones((len(completions), len(prompt)), dtype=torch.long), mask], dim=1)
        out = model.model(input_ids=whole, attention_mask=whole_mask, use_cache=False).last_hidden_state
        hidden = out[:, len(prompt) - 1:len(prompt) - 1 + longest]
    logprobs = torch.log_softmax(model.lm_head(hidden).float() / temperature, dim=-1)
    token_logprobs = logprobs.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    return [token_logprobs[row, :length] for row, length in enumerate(lengths)]


def truncated_weights(current: Any, behaviour: list[float | None] | None) -> Any:
    """``min(1, exp(current - behaviour))`` per token (detached); 1 where the behaviour log-prob is unknown."""
    import torch

    if behaviour is None:
        return torch.ones_like(current)
    known = torch.tensor([b is not None for b in behaviour])
    old = torch.tensor([b if b is not None else 0.0 for b in behaviour], dtype=current.dtype)
    ratio = torch.exp(current.detach() - old).clamp(max=1.0)
    return torch.where(known, ratio, torch.ones_like(ratio))


def grpo_loss(token_logprobs: list[Any], advantages: list[float], weights: list[Any] | None = None) -> Any:
    """GRPO's policy-gradient loss: the mean over completions of ``-mean_t(w_t * A * logp_t)``."""
    import torch

    terms = []
    for index, (logprobs, advantage) in enumerate(zip(token_logprobs, advantages)):
        w = weights[index] if weights is not None else torch.ones_like(logprobs)
        terms.append(-(w * advantage * logprobs).mean())
    return torch.stack(terms).mean()


@dataclass
class StepData:
    """One generation batch: prompts (ids), their records (JSON) and completions, grouped per prompt."""

    prompt_ids: list[list[int]]
    records: list[str]
    completions: list[list[Completion]]


class LlamaCppSync:
    """The llama.cpp generator, restarted on the current policy every ``sync_every`` steps."""

    def __init__(self, settings: CPUGRPOSettings, tokenizer: Any, response_format: dict[str, Any] | None) -> None:
        self.settings, self.tokenizer = settings, tokenizer
        self.response_format = llama_cpp_response_format(response_format)
        self.server: Any = None
        self.generator: EndpointGenerator | None = None
        self.synced_step = -1

    def due(self, step: int) -> bool:
        """Whether ``step`` starts a fresh server (the first step, then every ``sync_every`` steps)."""
        return self.generator is None or step - self.synced_step >= self.settings.sync_every

    def ensure(self, model: Any, step: int) -> EndpointGenerator:
        """The endpoint generator for ``step``: a fresh server on the saved policy when a sync is due."""
        if not self.due(step):
            self.generator.want_logprobs = self.settings.behaviour_logprobs     # stale from here on
            return self.generator
        from envsim.training.serve import free_port, start_server

        refused = self.generator.logprobs_refused if self.generator is not None else False
        self.close()
        sync_dir = self.settings.output_dir / "sync"
        shutil.rmtree(sync_dir, ignore_errors=True)
        save_policy(model, self.tokenizer, sync_dir, self.settings.model)
        self.server = start_server(str(sync_dir), backend="llama.cpp", port=free_port(), ready_timeout=900.0,
                                   log_path=str(self.settings.output_dir / "generator-server.log"),
                                   threads=self.settings.server_threads)
        self.generator = EndpointGenerator(self.server.base_url, getattr(self.server, "model", str(sync_dir)),
                                           self.tokenizer, self.settings.max_completion_length,
                                           self.settings.temperature, self.response_format,
                                           seed=self.settings.seed + 10007 * step)
        self.generator.want_logprobs = False      # fresh weights: the importance weight is 1 (f16 aside)
        self.generator.logprobs_refused = refused  # a server that refused log-probs once is not asked again
        self.synced_step = step
        return self.generator

    def close(self) -> None:
        """Stop the server, if one runs."""
        if self.server is not None:
            self.server.stop()
            self.server = None


def resolve_generator(choice: str) -> str:
    """``auto``: llama.cpp when llama-cpp-python is importable, else torch."""
    from envsim.training.serve import llama_cpp_available

    return choice if choice != "auto" else ("llama.cpp" if llama_cpp_available() else "torch")


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
                   "added_tokens.json", "tokenizer.model", "vocab.json", "merges.txt")


def save_policy(model: Any, tokenizer: Any, path: Path, tokenizer_source: str | None = None) -> None:
    """``save_pretrained`` of the model, and the tokenizer files of ``tokenizer_source`` (the starting checkpoint:
    training does not change them) copied as they are, else ``tokenizer.save_pretrained``. Copying keeps what
    the GGUF converter reads (transformers 5 re-saves ``tokenizer_class`` as ``TokenizersBackend``, which
    llama.cpp's converter takes for a SentencePiece vocabulary)."""
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    source = Path(tokenizer_source) if tokenizer_source else None
    if source is not None and (source / "tokenizer.json").is_file():
        for name in TOKENIZER_FILES:
            if (source / name).is_file():
                shutil.copyfile(source / name, path / name)
    else:
        tokenizer.save_pretrained(str(path))


def _rates(scores: list[Any]) -> dict[str, float]:
    return {f"{c}_rate": sum(component_value(s, c) for s in scores) / len(scores) for c in COMPONENTS}


def train_step(model: Any, optimizer: Any, data: StepData, settings: CPUGRPOSettings,
               apply_weights: bool) -> dict[str, Any]:
    """Score, compute advantages and take one optimizer step on the groups with spread; returns the step's
    figures (rewards, rates, zero-spread groups, loss, grad norm, tokens, importance-weight figures)."""
    import torch

    scores, rewards = [], []
    for record, group in zip(data.records, data.completions):
        for completion in group:
            score = score_completion(record, completion.text)
            scores.append(score)
            rewards.append(sum(w * component_value(score, c) for w, c in zip(settings.weights.as_list(), COMPONENTS)))
    advantages, zero = group_advantages(rewards, settings.num_generations)
    G = settings.num_generations
    started = time.monotonic()
    optimizer.zero_grad(set_to_none=True)
    loss_value, weighted, truncated, total_tokens = 0.0, 0, 0, 0
    active = [i for i in range(len(data.records)) if any(advantages[i * G:(i + 1) * G])]
    for i in active:
        group = data.completions[i]
        keep = [j for j, c in enumerate(group) if c.token_ids]
        if not keep:
            continue
        logprobs = completion_logprobs(model, data.prompt_ids[i], [group[j].token_ids for j in keep],
                                       settings.temperature)
        weights = []
        for j, lp in zip(keep, logprobs):
            behaviour = group[j].behaviour_logprobs if apply_weights else None
            w = truncated_weights(lp, behaviour)
            if behaviour is not None:
                weighted += sum(b is not None for b in behaviour)
                truncated += int((w < 1).sum())
            total_tokens += len(lp)
            weights.append(w)
        # mean over every completion of the step (zero-spread groups count, with zero terms, as in TRL)
        loss = grpo_loss(logprobs, [advantages[i * G + j] for j in keep], weights) * len(keep) / len(rewards)
        loss.backward()                           # one prompt's group at a time: activations of one group in memory
        loss_value += float(loss.detach())
    grad_norm = 0.0
    if active:
        params = [p for p in model.parameters() if p.requires_grad]
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, settings.max_grad_norm))
        optimizer.step()
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    tokens = [len(c.token_ids) for group in data.completions for c in group]
    return {"reward_mean": mean, "reward_std": std, **_rates(scores), "zero_spread_groups": zero,
            "zero_spread_share": zero / max(len(data.records), 1),
            "groups": len(data.records), "loss": loss_value, "grad_norm": grad_norm,
            "completion_tokens_mean": sum(tokens) / len(tokens),
            "finished_rate": sum(c.finished for g in data.completions for c in g) / len(tokens),
            "is_weighted_tokens": weighted, "is_truncated_tokens": truncated, "trained_tokens": total_tokens,
            "train_seconds": time.monotonic() - started, "_scores": scores, "_rewards": rewards}


def _progress(step: int, total: int, row: dict[str, Any], elapsed: float) -> str:
    per_step = elapsed / step
    return (f"step {step}/{total}  reward {row['reward_mean']:.3f}±{row['reward_std']:.3f}  "
            f"FM {row['fm_rate']:.2f} CM {row['cm_rate']:.2f} format {row['format_rate']:.2f} "
            f"partial {row['partial_rate']:.2f}  "
            f"zero-spread {row['zero_spread_groups']}/{row['groups']}  {per_step:.1f} s/step  "
            f"ETA {per_step * (total - step):.0f} s")


def train_grpo_cpu(settings: CPUGRPOSettings, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the CPU GRPO loop; writes ``rewards.jsonl``, ``completions.jsonl``, ``policy/`` and ``summary.json``
    under ``output_dir`` and returns the summary."""
    import torch
    from transformers import AutoModelForCausalLM

    from envsim.training.rl import _tokenizer, logged_examples_of, read_records, rl_rows

    settings.check()
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    torch.set_num_threads(settings.threads or default_threads())
    torch.manual_seed(settings.seed)
    rows = rl_rows(read_records(settings.records, settings.version), settings.prompt_mode, settings.prompt_version,
                   logged_examples_of(settings.records))
    generator_kind = resolve_generator(settings.generator)
    out = settings.output_dir
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "grpo_cpu_config.json", {**settings.to_json(), "generator_resolved": generator_kind})
    tokenizer = _tokenizer(settings.model)
    model = AutoModelForCausalLM.from_pretrained(settings.model, dtype=torch.float32)
    model.train()
    trainable = freeze_all_but_last(model, settings.freeze_layers)
    optimizer = torch.optim.AdamW(trainable, lr=settings.learning_rate, weight_decay=0.0)
    response_format = None
    if settings.response_format != "free":
        from envsim.evaluation.prompting.answer_schema import response_format as answer_response_format

        response_format = answer_response_format(settings.response_format, settings.prompt_mode,
                                                 settings.prompt_version)
    sync = LlamaCppSync(settings, tokenizer, response_format) if generator_kind == "llama.cpp" else None
    torch_generator = TorchGenerator(model, tokenizer, settings.max_completion_length, settings.temperature)
    order = list(range(len(rows)))
    random.Random(settings.seed).shuffle(order)
    per_step = settings.batch // settings.num_generations
    for name in ("rewards.jsonl", "completions.jsonl"):
        (out / name).unlink(missing_ok=True)
    history, started = [], time.monotonic()

    def picks(step: int) -> list[dict[str, Any]]:
        return [rows[order[(step * per_step + k) % len(rows)]] for k in range(per_step)]

    def sample(generator: Generator, picked: list[dict[str, Any]]) -> tuple[list[list[Completion]], float]:
        begun = time.monotonic()
        return [generator.sample(r["prompt"], settings.num_generations) for r in picked], time.monotonic() - begun

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grpo-generate")
    pending: tuple[int, int, Future] | None = None           # (step, staleness, completions being generated)
    try:
        for step in range(settings.max_steps):
            picked = picks(step)
            waited_from = time.monotonic()
            if pending is not None and pending[0] == step:
                _, staleness, future = pending
                completions, generation_seconds = future.result()
                overlapped = True
            else:
                generator: Generator = sync.ensure(model, step) if sync else torch_generator
                staleness = step - sync.synced_step if sync else 0
                completions, generation_seconds = sample(generator, picked)
                overlapped = False
            waited = time.monotonic() - waited_from
            pending = None
            if sync and settings.overlap and step + 1 < settings.max_steps and not sync.due(step + 1):
                nxt = sync.ensure(model, step + 1)                 # the same server: its weights are those of the sync
                pending = (step + 1, step + 1 - sync.synced_step, pool.submit(sample, nxt, picks(step + 1)))
            data = StepData([prompt_ids(tokenizer, r["prompt"]) for r in picked], [r["record"] for r in picked],
                            completions)
            figures = train_step(model, optimizer, data, settings,
                                 apply_weights=sync is not None and settings.temperature == 1.0)
            scores, rewards = figures.pop("_scores"), figures.pop("_rewards")
            row = {"step": step + 1, **figures, "generation_seconds": generation_seconds, "staleness": staleness,
                   "generation_overlapped": overlapped, "generation_wait_seconds": waited,
                   "generator": generator_kind,
                   "logprobs_refused": bool(sync and sync.generator and sync.generator.logprobs_refused)}
            history.append(row)
            with (out / "rewards.jsonl").open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row, sort_keys=True) + "\n")
            _log_completions(out / "completions.jsonl", step + 1, data, scores, rewards)
            echo(_progress(step + 1, settings.max_steps, row, time.monotonic() - started))
    finally:
        if sync:
            sync.close()                          # first: a generation still in flight then fails at once
            shutil.rmtree(out / "sync", ignore_errors=True)
        pool.shutdown(wait=True, cancel_futures=True)
    tokenizer.padding_side = "right"
    save_policy(model, tokenizer, out / "policy", settings.model)
    write_training_file(out / "policy", {"prompt_mode": settings.prompt_mode, "prompt_version": settings.prompt_version,
                                         "response_format": settings.response_format},
                        trainer="grpo-cpu", steps=len(history), base_model=settings.model)
    summary = {"steps": len(history), "prompts": len(rows), "generator": generator_kind,
               "policy": str(out / "policy"), "seconds": time.monotonic() - started,
               "reward_by_step": [r["reward_mean"] for r in history],
               "zero_spread_groups": sum(r["zero_spread_groups"] for r in history),
               "zero_spread_share": (sum(r["zero_spread_groups"] for r in history)
                                     / max(sum(r["groups"] for r in history), 1)),
               "trainable_parameters": sum(p.numel() for p in trainable)}
    write_json(out / "summary.json", summary)
    return summary


def _log_completions(path: Path, step: int, data: StepData, scores: list[Any], rewards: list[float]) -> None:
    flat = [(record, c) for record, group in zip(data.records, data.completions) for c in group]
    with path.open("a", encoding="utf-8") as handle:
        for (record, completion), score, reward in zip(flat, scores, rewards):
            row = {"step": step, "record_id": json.loads(record).get("id"), "text": completion.text,
                   "reward": reward, "reason": score.reason, "tokens": len(completion.token_ids),
                   **{c: component_value(score, c) for c in COMPONENTS}}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
