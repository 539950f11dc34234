"""SFT on a CPU: the last layers of a causal LM trained on cached activations of the frozen ones.

``envsim train sft --device cpu`` runs this loop instead of LLaMA-Factory. It trains what ``--finetuning freeze``
trains (the last ``trainable_layers`` decoder layers and the final norm, ``training.grpo_cpu.freeze_all_but_last``)
on the same samples (``envsim train data`` output: the chat file named in ``dataset_info.json``), with the same
loss (token-level cross-entropy on the assistant answer and its end-of-turn token, averaged over the answer tokens
of an optimizer step), and changes what a sample costs:

* **Frozen activations cached.** The frozen layers never change, so each sample's input to the first trainable
  layer is computed once (one no-grad forward) and kept in memory (``T x hidden`` floats a sample); every epoch
  then runs only the trainable layers, forward and backward. On SmolLM2-135M with 8 of 30 layers trained, an epoch
  costs about a third of a LLaMA-Factory epoch (which runs all 30 layers and the whole-sequence LM head each step).
* **Logits only where the loss is.** The LM head runs on the answer positions alone (about 30 of 1,100).
* **Optionally, no gradient through the prompt** (``prompt_grad="none"``, ``--prompt-grad none``). The prompt's
  positions run through the trainable layers without grad (their keys and values a constant of the step, from the
  current weights), and only the answer's positions run with grad, attending to them. The loss is the same number;
  the gradient leaves out what flows back through the prompt's keys and values (cosine 0.85-0.91 with the full
  gradient on six 1.3k-1.7k-token in-env samples, SmolLM2-135M, 8 layers), and a step costs about 40 % of the CPU
  time (``benchmarks/prompt_grad_cost.py``: 2.46 s against 6.87 s, fp32, 2 threads, AVX2). What a model learns
  with it is measured in docs/real-model.md ("No gradient through the prompt"); the default stays the full
  gradient.
* **bfloat16 where the CPU has it.** Matrix products run under bfloat16 autocast on a CPU with native bfloat16
  arithmetic (``training/cpu_precision.py``; weights, gradients and optimizer state stay fp32): 2.3x faster per
  step on this project's AMD EPYC. ``precision="fp32"`` (``--no-bf16``) keeps every product in fp32.
* **Exactness for free.** Each step also counts the answers whose every token is the model's argmax under teacher
  forcing: such an answer is exactly what greedy decoding writes, so ``greedy_exact`` in ``train_log.jsonl`` is
  the share of training answers the model already reproduces (the fit check's first signal).

Prompts are rendered with the tokenizer's own chat template (what ``envsim serve`` applies: the GGUF conversion
carries the same template), so training and serving see the same tokens. Checkpoints are written at the sample
counts in ``save_at`` (``OUT/checkpoint-<samples>``, for a learning curve) and at the end (``OUT/checkpoints``,
where ``envsim train sft`` puts LLaMA-Factory's), each an ordinary ``save_pretrained`` directory with the
starting model's tokenizer files and ``envsim_training.json`` (prompt mode and version of the data).
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from envsim.safe_files import write_json
from envsim.training.kv_cache import returned_cache, with_cache


PROMPT_GRADS = ("full", "none")


@dataclass
class CPUSFTSettings:
    """One CPU SFT run. ``batch`` counts samples per optimizer step (gradients accumulated one sample at a time)."""

    model: str
    data_dir: Path
    output_dir: Path                       # OUT: train_log.jsonl, checkpoint-<n>/, checkpoints/, summary.json
    dataset: str | None = None
    learning_rate: float = 3e-4
    epochs: float = 3.0
    batch: int = 8
    trainable_layers: int = 8
    warmup_ratio: float = 0.05
    min_lr_ratio: float = 0.1             # cosine decay down to this share of the learning rate
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_samples: int | None = None         # the first N samples of the file (the fit check's few dozen)
    cutoff: int = 8192                     # longer samples are refused, never truncated
    save_at: tuple[int, ...] = ()          # samples seen at which a checkpoint is written
    threads: int | None = None
    seed: int = 0
    precision: str = "auto"                # training/cpu_precision.py: bf16 autocast where the CPU has it natively
    prompt_grad: str = "full"              # PROMPT_GRADS: "none" runs the prompt's positions without grad

    def check(self) -> None:
        """Raise ``ValueError`` on settings the loop would reject later."""
        from envsim.training.cpu_precision import PRECISIONS

        if self.prompt_grad not in PROMPT_GRADS:
            raise ValueError(f"prompt_grad must be one of {', '.join(PROMPT_GRADS)}, not {self.prompt_grad!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if self.learning_rate <= 0 or self.epochs <= 0 or self.batch < 1 or self.trainable_layers < 1:
            raise ValueError("--lr and --epochs must be positive, --batch and --freeze-layers at least 1")
        if not 0 <= self.warmup_ratio < 1 or not 0 <= self.min_lr_ratio <= 1:
            raise ValueError("warmup_ratio must be in [0, 1) and min_lr_ratio in [0, 1]")
        if any(n < 1 for n in self.save_at):
            raise ValueError("checkpoint points (--save-at) count samples seen: each must be at least 1")

    def to_json(self) -> dict[str, Any]:
        """JSON form (``OUT/sft_cpu_config.json``)."""
        data = asdict(self)
        data.update(data_dir=str(self.data_dir), output_dir=str(self.output_dir), save_at=list(self.save_at))
        return data


@dataclass
class TokenizedSample:
    """One chat sample as token ids: the prompt (chat template with the generation prompt) and the answer."""

    id: str
    prompt_ids: list[int]
    answer_ids: list[int]                  # the answer and the end-of-turn token that stops generation
    stratum: str = ""

    @property
    def length(self) -> int:
        """Tokens of the whole sequence."""
        return len(self.prompt_ids) + len(self.answer_ids)


def dataset_file(data_dir: Path, dataset: str | None = None) -> Path:
    """The chat-format file of ``dataset`` (default: the only entry) in ``data_dir/dataset_info.json``."""
    info_path = data_dir / "dataset_info.json"
    if not info_path.is_file():
        raise FileNotFoundError(f"{data_dir} has no dataset_info.json (run 'envsim train data' first)")
    info = json.loads(info_path.read_text())
    if dataset is None:
        if len(info) != 1:
            raise ValueError(f"choose a dataset among: {', '.join(info)}")
        dataset = next(iter(info))
    if dataset not in info:
        raise ValueError(f"dataset {dataset!r} not in {info_path} ({', '.join(info)})")
    return data_dir / info[dataset]["file_name"]


def read_samples(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Chat samples (``{"messages": [...], "id", ...}``) of a JSONL file, the first ``limit`` when given."""
    samples = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                samples.append(json.loads(line))
            if limit is not None and len(samples) >= limit:
                break
    return samples


def tokenize_sample(tokenizer: Any, sample: dict[str, Any]) -> TokenizedSample:
    """Prompt and answer ids of a chat sample whose last message is the assistant's answer.

    The whole chat is rendered with the chat template; the answer ids are what follows the rendered prompt, up to
    and including the end-of-turn token (the template's trailing newline after it is not trained: generation stops
    at the token). Raises ``ValueError`` when the template does not render the prompt as a prefix of the chat."""
    messages = sample["messages"]
    if not messages or messages[-1].get("role") != "assistant":
        raise ValueError(f"sample {sample.get('id')!r}: the last message is not the assistant's answer")
    prompt_text = tokenizer.apply_chat_template(messages[:-1], add_generation_prompt=True, tokenize=False)
    full_text = tokenizer.apply_chat_template(messages, tokenize=False)
    if not full_text.startswith(prompt_text):
        raise ValueError(f"sample {sample.get('id')!r}: the chat template does not render the prompt as a prefix "
                         "of the whole chat")
    prompt_ids = list(tokenizer(prompt_text, add_special_tokens=False)["input_ids"])
    answer_ids = list(tokenizer(full_text[len(prompt_text):], add_special_tokens=False)["input_ids"])
    stop = end_of_turn_ids(tokenizer)
    cut = next((i for i, t in enumerate(answer_ids) if t in stop), None)
    if cut is not None:
        answer_ids = answer_ids[:cut + 1]
    return TokenizedSample(str(sample.get("id", "")), prompt_ids, answer_ids, str(sample.get("stratum", "")))


def end_of_turn_ids(tokenizer: Any) -> set[int]:
    """Token ids that end an assistant turn: the tokenizer's EOS and ChatML's ``<|im_end|>`` when it has one."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tokenizer.unk_token_id:
        ids.add(im_end)
    return ids


@contextlib.contextmanager
def only_last_layers(model: Any, count: int) -> Iterator[None]:
    """Within the block, ``model.model`` runs only its last ``count`` decoder layers (on ``inputs_embeds`` that
    are the cached input of the first of them): the model's own rotary embedding, causal mask and final norm."""
    import torch

    layers = model.model.layers
    model.model.layers = torch.nn.ModuleList(list(layers)[len(layers) - count:])
    try:
        yield
    finally:
        model.model.layers = layers


@contextlib.contextmanager
def only_first_layers(model: Any, count: int) -> Iterator[None]:
    """Within the block, ``model.model`` runs only its first ``count`` decoder layers and no final norm: its
    ``last_hidden_state`` is the input of layer ``count``."""
    import torch

    layers, norm = model.model.layers, model.model.norm
    model.model.layers, model.model.norm = torch.nn.ModuleList(list(layers)[:count]), torch.nn.Identity()
    try:
        yield
    finally:
        model.model.layers, model.model.norm = layers, norm


def shared_prefix(sequences: Sequence[Sequence[int]]) -> int:
    """Length of the token prefix every sequence shares (the identical system prompt), leaving each sequence at
    least one token of its own."""
    if not sequences:
        return 0
    first, length = sequences[0], min(len(s) for s in sequences) - 1
    for other in sequences[1:]:
        length = next((i for i in range(length) if other[i] != first[i]), length)
    return max(length, 0)


class FrozenActivations:
    """The input of the first trainable layer for token sequences, computed without grad by the frozen layers.

    The prefix all sequences share (the identical system prompt) runs through the frozen layers once: its hidden
    states and key/value cache serve every sequence, which then runs only its own tokens (causal attention: a
    prefix's states do not depend on what follows it)."""

    def __init__(self, model: Any, trainable_layers: int, prefix: Sequence[int] = (), precision: str = "fp32") -> None:
        import torch

        from envsim.training.cpu_precision import cpu_autocast

        self.model, self.frozen = model, len(model.model.layers) - trainable_layers
        self.prefix, self.precision = list(prefix), precision
        self.prefix_states, self.prefix_cache = None, None
        if self.prefix:
            with torch.no_grad(), only_first_layers(model, self.frozen), cpu_autocast(precision):
                out = model.model(input_ids=torch.tensor([self.prefix]), use_cache=True)
            self.prefix_states, self.prefix_cache = out.last_hidden_state.detach(), returned_cache(out)

    def __call__(self, ids: Sequence[int]) -> Any:
        """Shape ``[1, len(ids), hidden]``; ``ids`` must start with the shared prefix."""
        import copy

        import torch

        from envsim.training.cpu_precision import cpu_autocast

        n = len(self.prefix)
        if n and list(ids[:n]) != self.prefix:
            raise ValueError("sequence does not start with the shared prefix")
        with torch.no_grad(), only_first_layers(self.model, self.frozen), cpu_autocast(self.precision):
            if not n:
                return self.model.model(input_ids=torch.tensor([list(ids)]), use_cache=False).last_hidden_state
            out = self.model.model(input_ids=torch.tensor([list(ids[n:])]), use_cache=True,
                                   **with_cache(self.model.model, copy.deepcopy(self.prefix_cache)))
        return torch.cat([self.prefix_states, out.last_hidden_state], dim=1).detach()


@contextlib.contextmanager
def numbered_from_zero(layers: Sequence[Any]) -> Iterator[None]:
    """Within the block, the attention of ``layers`` files keys and values under indices 0, 1, ... (a key/value
    cache of the last layers alone, which the model's cache counts from its first layer)."""
    before = [layer.self_attn.layer_idx for layer in layers]
    try:
        for index, layer in enumerate(layers):
            layer.self_attn.layer_idx = index
        yield
    finally:
        for index, layer in zip(before, layers):
            layer.self_attn.layer_idx = index


def last_layers_hidden(model: Any, cached: Any, start: int, prompt_grad: str = "full") -> Any:
    """The final hidden states from position ``start`` on, of the last layers run on ``cached`` (call within
    ``only_last_layers``). ``prompt_grad="none"``: positions before ``start`` run without grad into a key/value
    cache, and only the positions from ``start`` on carry grad."""
    import torch
    from transformers import DynamicCache

    if prompt_grad == "full" or start < 1:
        return model.model(inputs_embeds=cached, use_cache=False).last_hidden_state[:, start:]
    kv = DynamicCache()
    positions = torch.arange(cached.shape[1])
    with numbered_from_zero(model.model.layers):
        with torch.no_grad():
            model.model(inputs_embeds=cached[:, :start], use_cache=True, position_ids=positions[None, :start],
                        **with_cache(model.model, kv))
        return model.model(inputs_embeds=cached[:, start:], use_cache=True, position_ids=positions[None, start:],
                           **with_cache(model.model, kv)).last_hidden_state


def answer_loss(model: Any, cached: Any, sample: TokenizedSample, trainable_layers: int,
                precision: str = "fp32", prompt_grad: str = "full") -> tuple[Any, int]:
    """Summed cross-entropy of the answer tokens (with grad through the trainable layers; ``prompt_grad="none"``:
    not through the prompt's positions) and how many of them are not the model's argmax under teacher forcing
    (0: greedy decoding writes this answer exactly)."""
    import torch

    from envsim.training.cpu_precision import cpu_autocast

    start = len(sample.prompt_ids) - 1                  # the position that predicts the first answer token
    with only_last_layers(model, trainable_layers), cpu_autocast(precision):
        hidden = last_layers_hidden(model, cached, start, prompt_grad)
        logits = model.lm_head(hidden[0, :len(sample.answer_ids)])
    logits = logits.float()
    targets = torch.tensor(sample.answer_ids)
    loss = torch.nn.functional.cross_entropy(logits, targets, reduction="sum")
    wrong = int((logits.argmax(-1) != targets).sum())
    return loss, wrong


def learning_rate_at(step: int, total: int, settings: CPUSFTSettings) -> float:
    """Linear warm-up, then cosine decay to ``min_lr_ratio`` of the learning rate."""
    warmup = max(1, math.ceil(total * settings.warmup_ratio)) if settings.warmup_ratio else 0
    if step < warmup:
        return settings.learning_rate * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    floor = settings.min_lr_ratio
    return settings.learning_rate * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


def save_checkpoint(model: Any, tokenizer: Any, path: Path, settings: CPUSFTSettings, samples_seen: int) -> None:
    """An ordinary checkpoint directory (``save_policy``) with ``envsim_training.json`` beside the weights."""
    from envsim.training.checkpoint_meta import data_prompt_settings, write_training_file
    from envsim.training.grpo_cpu import save_policy

    save_policy(model, tokenizer, path, settings.model)
    write_training_file(path, data_prompt_settings(settings.data_dir), trainer="sft-cpu", samples_seen=samples_seen,
                        base_model=settings.model)


def schedule(n_samples: int, settings: CPUSFTSettings) -> list[int]:
    """Sample indices in training order: ``epochs`` passes (the last one partial for a fractional epoch), each
    pass in its own seeded shuffle."""
    rng = random.Random(settings.seed)
    total = max(1, round(n_samples * settings.epochs))
    order: list[int] = []
    while len(order) < total:
        epoch = list(range(n_samples))
        rng.shuffle(epoch)
        order += epoch
    return order[:total]


def cache_with_progress(frozen: Callable[[Sequence[int]], Any], sequences: Sequence[Sequence[int]],
                        echo: Callable[[str], None], every_s: float = 30.0) -> list[Any]:
    """``frozen(ids)`` of every sequence, with a line (done, tokens, ETA) at most every ``every_s`` seconds: caching
    takes minutes on a real model and would otherwise print nothing."""
    total_tokens = sum(len(ids) for ids in sequences) or 1
    started = last = time.monotonic()
    done_tokens, cache = 0, []
    for i, ids in enumerate(sequences):
        cache.append(frozen(ids))
        done_tokens += len(ids)
        now = time.monotonic()
        if now - last >= every_s and i + 1 < len(sequences):
            last = now
            rate = done_tokens / max(now - started, 1e-9)
            echo(f"cached {i + 1}/{len(sequences)} samples ({done_tokens / total_tokens:.0%} of the tokens, "
                 f"{rate:,.0f} tokens/s, ETA {(total_tokens - done_tokens) / rate:.0f} s)")
    return cache


def train_sft_cpu(settings: CPUSFTSettings, echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the CPU SFT loop; writes ``train_log.jsonl``, the checkpoints and ``summary.json`` under
    ``output_dir`` and returns the summary."""
    import torch
    from transformers import AutoModelForCausalLM

    from envsim.training.cpu_precision import resolve_precision
    from envsim.training.grpo_cpu import default_threads, freeze_all_but_last
    from envsim.training.rl import _tokenizer

    settings.check()
    precision = resolve_precision(settings.precision)
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    threads = settings.threads or max(1, default_threads())
    torch.set_num_threads(threads)
    torch.manual_seed(settings.seed)
    out = settings.output_dir
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "sft_cpu_config.json", {**settings.to_json(), "threads_resolved": threads,
                                            "precision_resolved": precision})
    tokenizer = _tokenizer(settings.model)
    raw = read_samples(dataset_file(settings.data_dir, settings.dataset), settings.max_samples)
    if not raw:
        raise ValueError(f"no samples in {settings.data_dir}")
    samples = [tokenize_sample(tokenizer, s) for s in raw]
    over = [s for s in samples if s.length > settings.cutoff]
    if over:
        raise ValueError(f"{len(over)} samples exceed the cutoff of {settings.cutoff:,} tokens (e.g. {over[0].id}, "
                         f"{over[0].length:,}); write the data with the same --cutoff")
    model = AutoModelForCausalLM.from_pretrained(settings.model, dtype=torch.float32, attn_implementation="sdpa")
    model.train()
    trainable = freeze_all_but_last(model, settings.trainable_layers)
    started = time.monotonic()
    echo(f"caching the frozen layers' activations of {len(samples)} samples "
         f"({sum(s.length for s in samples):,} tokens) ...")
    sequences = [s.prompt_ids + s.answer_ids[:-1] for s in samples]
    frozen = FrozenActivations(model, settings.trainable_layers, sequences[0][:shared_prefix(sequences)], precision)
    cache = cache_with_progress(frozen, sequences, echo)
    cache_seconds = time.monotonic() - started
    echo(f"cached in {cache_seconds:.0f} s; training {sum(p.numel() for p in trainable):,} parameters "
         f"(the last {settings.trainable_layers} layers), {threads} thread(s), {precision}"
         + ("" if settings.prompt_grad == "full" else ", no gradient through the prompt"))
    optimizer = torch.optim.AdamW(trainable, lr=settings.learning_rate, weight_decay=settings.weight_decay)
    order = schedule(len(samples), settings)
    steps = math.ceil(len(order) / settings.batch)
    saves = sorted(set(n for n in settings.save_at if n < len(order)))
    (out / "train_log.jsonl").unlink(missing_ok=True)
    seen, history, train_started = 0, [], time.monotonic()
    for step in range(steps):
        picked = order[step * settings.batch:(step + 1) * settings.batch]
        lr = learning_rate_at(step, steps, settings)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        answer_tokens = sum(len(samples[i].answer_ids) for i in picked)
        loss_sum, exact = 0.0, 0
        for i in picked:                                   # one sample at a time: no padding, one graph in memory
            loss, wrong = answer_loss(model, cache[i], samples[i], settings.trainable_layers, precision,
                                      settings.prompt_grad)
            (loss / answer_tokens).backward()
            loss_sum += float(loss.detach())
            exact += wrong == 0
        grad_norm = float(torch.nn.utils.clip_grad_norm_(trainable, settings.max_grad_norm))
        optimizer.step()
        before, seen = seen, seen + len(picked)
        row = {"step": step + 1, "samples_seen": seen, "epoch": round(seen / len(samples), 3), "lr": lr,
               "loss": loss_sum / answer_tokens, "greedy_exact": exact / len(picked), "grad_norm": grad_norm,
               "seconds": round(time.monotonic() - train_started, 1)}
        history.append(row)
        with (out / "train_log.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        elapsed = time.monotonic() - train_started
        echo(f"step {step + 1}/{steps}  samples {seen}  epoch {row['epoch']:.2f}  loss {row['loss']:.4f}  "
             f"greedy-exact {exact}/{len(picked)}  lr {lr:.2e}  {elapsed / (step + 1):.1f} s/step  "
             f"ETA {elapsed / (step + 1) * (steps - step - 1):.0f} s")
        for n in saves:
            if before < n <= seen:
                save_checkpoint(model, tokenizer, out / f"checkpoint-{n}", settings, seen)
                echo(f"checkpoint after {seen} samples: {out / f'checkpoint-{n}'}")
    model.eval()
    save_checkpoint(model, tokenizer, out / "checkpoints", settings, seen)
    last_epoch = [r for r in history if r["samples_seen"] > seen - len(samples)]
    summary = {"samples": len(samples), "samples_seen": seen, "steps": steps, "threads": threads,
               "precision": precision, "prompt_grad": settings.prompt_grad,
               "cache_seconds": round(cache_seconds, 3), "train_seconds": round(time.monotonic() - train_started, 3),
               "seconds_per_sample": round((time.monotonic() - train_started) / max(seen, 1), 2),
               "final_loss": history[-1]["loss"],
               "last_epoch_greedy_exact": sum(r["greedy_exact"] for r in last_epoch) / max(len(last_epoch), 1),
               "checkpoints": [str(out / f"checkpoint-{n}") for n in saves] + [str(out / "checkpoints")],
               "trainable_parameters": sum(p.numel() for p in trainable)}
    write_json(out / "summary.json", summary)
    return summary
