"""Verifiable rewards for RL on simulator outputs, computed by the evaluator's own scorer.

Four components, each a TRL reward function (``fn(completions, record, **kwargs) -> list[float]``)
so TRL logs them separately and combines them with the user's weights:

* ``format``: the answer parses into an observation and a valid patch (or next state);
* ``fm``: Feedback Match, the observation equals the true one;
* ``cm``: Config Match, the predicted next state equals the true one;
* ``partial``: partial credit in [0, 1], the mean of the patch-op F1 against the true patch and the observation's
  leaf F1 (``training.partial_credit``). It is what gives a GRPO group variance on a state-changing call that no
  completion gets exactly right.

Default weights (the shipped recipe on CPU and GPU alike): format 0.2, FM 1, CM 1, partial 1.

The dataset column ``record`` holds the benchmark record as JSON text (Arrow cannot hold states of
every shape in one column type).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.scoring.scoring import SampleScore, score_prediction
from envsim.training.partial_credit import partial_credit

RewardFunction = Callable[..., list[float]]
COMPONENTS: tuple[str, ...] = ("format", "fm", "cm", "partial")


@dataclass(frozen=True)
class RewardWeights:
    """Weights of the reward components; the total reward is their weighted sum."""

    cm: float = 1.0
    fm: float = 1.0
    format: float = 0.2
    partial: float = 1.0

    def as_list(self) -> list[float]:
        """Weights in ``COMPONENTS`` order (TRL's ``reward_weights``)."""
        return [self.format, self.fm, self.cm, self.partial]

    def to_json(self) -> dict[str, float]:
        """Plain dict for run configs."""
        return asdict(self)


def completion_text(completion: Any) -> str:
    """The text of one TRL completion: a string, or a list of chat messages (conversational)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    return ""


@dataclass(frozen=True)
class RewardScore:
    """The evaluator's score of one completion and its partial credit; reads through to the score's fields
    (``parsed``, ``fm``, ``cm``, ``reason``, ...)."""

    score: SampleScore
    partial: float = 0.0

    def __getattr__(self, name: str) -> Any:
        if name == "score":                     # not set yet (copy/unpickle): no recursion
            raise AttributeError(name)
        return getattr(self.score, name)


@lru_cache(maxsize=8192)
def _score(record_json: str, text: str) -> RewardScore:
    record, answer = json.loads(record_json), parse_answer(text)
    score = score_prediction(record, answer)
    return RewardScore(score, partial_credit(record, answer, score.delta_f1))


def score_completion(record: str | dict[str, Any], completion: Any) -> RewardScore:
    """Score one completion against its record with the evaluator's scorer, with its partial credit (never
    raises)."""
    record_json = record if isinstance(record, str) else json.dumps(record, sort_keys=True)
    try:
        return _score(record_json, completion_text(completion))
    except Exception as exc:  # noqa: BLE001 - a reward must not crash training on a hostile answer
        return RewardScore(SampleScore(False, False, False, False, 0.0, 0.0, 0.0,
                                       reason=f"scoring failed: {type(exc).__name__}"))


def component_value(score: RewardScore, component: str) -> float:
    """Value of one reward component for a score: 0/1 for format, FM and CM; [0, 1] for partial."""
    if component == "format":
        return float(score.parsed)
    if component == "fm":
        return float(score.fm)
    if component == "cm":
        return float(score.cm)
    if component == "partial":
        return float(score.partial)
    raise ValueError(f"unknown reward component {component!r}; choose from {', '.join(COMPONENTS)}")


def reward_function(component: str, log_path: Path | None = None) -> RewardFunction:
    """A TRL reward function for one component (its ``__name__`` names the logged metric).

    With ``log_path``, every scored completion is appended there as one JSON line (step, record id,
    text, the three components and the scorer's reason), so a run shows what the policy wrote and why
    it was rewarded so."""
    if component not in COMPONENTS:
        raise ValueError(f"unknown reward component {component!r}; choose from {', '.join(COMPONENTS)}")

    def reward(completions: list[Any], record: list[str], **kwargs: Any) -> list[float]:
        scores = [score_completion(r, c) for r, c in zip(record, completions)]
        if log_path is not None:
            state = kwargs.get("trainer_state")
            step = getattr(state, "global_step", None)
            with log_path.open("a", encoding="utf-8") as handle:
                for r, c, s in zip(record, completions, scores):
                    row = {"step": step, "record_id": json.loads(r).get("id") if isinstance(r, str) else r.get("id"),
                           "text": completion_text(c), "reason": s.reason,
                           **{k: component_value(s, k) for k in COMPONENTS}}
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        return [component_value(s, component) for s in scores]

    reward.__name__ = f"envsim_{component}"
    reward.__doc__ = f"Reward component '{component}' from the envsim scorer."
    return reward


def reward_functions(log_path: Path | None = None) -> list[RewardFunction]:
    """The component reward functions, in ``COMPONENTS`` order (the first one logs completions)."""
    return [reward_function(c, log_path if i == 0 else None) for i, c in enumerate(COMPONENTS)]


def total_reward(record: str | dict[str, Any], completion: Any, weights: RewardWeights) -> float:
    """Weighted reward of one completion (what GRPO optimises)."""
    score = score_completion(record, completion)
    return sum(w * component_value(score, c) for w, c in zip(weights.as_list(), COMPONENTS))
