"""Score a local model directory in-process (greedy decoding with transformers) on benchmark records.

For quick checks without a server: the learning check after a few CPU training steps, or a sanity
look at a checkpoint. Prompts, parsing and scoring are the evaluator's own."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.prompting.prompts import PROMPT_VERSION, build_messages
from envsim.evaluation.scoring.scoring import score_prediction


def generate_answers(model_dir: str | Path, conversations: Sequence[list[dict[str, str]]], *,
                     max_new_tokens: int = 256, batch_size: int = 8) -> list[str]:
    """Greedy answers of a local causal LM to chat conversations (its chat template, generation prompt)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    model.eval()
    answers: list[str] = []
    for start in range(0, len(conversations), batch_size):
        texts = [tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                 for c in conversations[start:start + batch_size]]
        batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False,
                          return_token_type_ids=False)
        with torch.no_grad():
            output = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False,
                                    pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
        answers += tokenizer.batch_decode(output[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
    return answers


def score_answers(records: Sequence[dict[str, Any]], answers: Sequence[str]) -> dict[str, Any]:
    """Parse-valid rate, FM, CM overall and CM per stratum of answers to ``records``."""
    scores = [score_prediction(r, parse_answer(a)) for r, a in zip(records, answers, strict=True)]
    by_stratum: dict[str, list[bool]] = defaultdict(list)
    for record, score in zip(records, scores):
        by_stratum[record["stratum"]].append(score.cm)
    n = max(len(scores), 1)
    return {"samples": len(scores), "parse_valid": sum(s.parsed for s in scores) / n,
            "fm": sum(s.fm for s in scores) / n, "cm": sum(s.cm for s in scores) / n,
            "cm_by_stratum": {k: sum(v) / len(v) for k, v in sorted(by_stratum.items())}}


def evaluate_local(model_dir: str | Path, records: Sequence[dict[str, Any]], *, prompt_mode: str = "mdp",
                   prompt_version: str = PROMPT_VERSION, max_new_tokens: int = 256,
                   batch_size: int = 8) -> dict[str, Any]:
    """Generate answers for ``records`` with a local model and score them (see ``score_answers``).

    ``prompt_version`` must be the version the model was trained on (``write_sft_files``'s default is 1)."""
    answers = generate_answers(model_dir, [build_messages(r, prompt_mode, version=prompt_version) for r in records],
                               max_new_tokens=max_new_tokens, batch_size=batch_size)
    return {**score_answers(records, answers), "answers": answers}
