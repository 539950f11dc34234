"""EnvSimBench as an inspect-ai task (the ``[inspect]`` extra).

``inspect eval envsim/envsimbench --model <any inspect provider>`` runs the benchmark with inspect's
model layer; the prompt is ``build_messages`` and the scorer is ``parse_answer`` +
``score_prediction``, the same functions ``envsim eval`` calls, so the per-sample verdicts and the
FM / CM / CM-lenient rates (overall and per stratum) are the same by construction. Task parameters
(``-T name=value``): ``benchmark`` (shipped name or a JSONL path), ``split``, ``prompt_mode`` and
``limit`` (N samples evenly spaced over the split, as ``envsim eval --limit``).

The module is registered through the ``inspect_ai`` entry point group (see ``pyproject.toml``);
``inspect eval path/to/evaluation/inspect_task.py@envsimbench`` works without the entry point.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser
    from inspect_ai.scorer import Score, Scorer, Target, grouped, mean, scorer
    from inspect_ai.solver import TaskState, generate
except ImportError as exc:  # a core install: say which extra brings inspect-ai
    raise ImportError(f"envsim.evaluation.inspect_task needs the [inspect] extra: pip install -e \".[inspect]\" "
                      f"({exc})", name=exc.name) from exc

from envsim.benchmark import load
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.prompting.prompts import PROMPT_MODES, PROMPT_VERSION, build_messages, target_answer
from envsim.evaluation.scoring.scoring import SampleScore, score_prediction

# The rates of ``SampleScore`` that the run summary reports (``cm_original`` where this version has it).
RATE_KEYS: tuple[str, ...] = tuple(k for k in ("fm", "cm", "cm_lenient", "cm_original")
                                   if k in SampleScore.__dataclass_fields__)
GROUP_KEY = "stratum"
_METRICS = {key: [mean(), grouped(mean(), GROUP_KEY, all=False)] for key in (*RATE_KEYS, "parsed")}


def select_records(records: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """``limit`` records evenly spaced over the split (every stratum), exactly as ``envsim eval --limit``."""
    if limit is not None and 0 <= limit < len(records):
        return [records[i * len(records) // limit] for i in range(limit)]
    return records


def _class_sources(records: list[dict[str, Any]]) -> dict[str, str]:
    from envsim.envs.registry import get_env
    from envsim.envs.shown import class_source

    sources = {}
    for env_id in sorted({r["env"] for r in records}):
        try:
            sources[env_id] = class_source(get_env(env_id))
        except Exception:  # noqa: BLE001 - build_messages then names the missing source for that sample
            continue
    return sources


def _chat(messages: list[dict[str, str]]) -> list[ChatMessage]:
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


def record_sample(record: dict[str, Any], prompt_mode: str = "mdp", class_source: str | None = None) -> Sample:
    """One benchmark record as an inspect ``Sample``: our prompt as input, the perfect answer as target."""
    messages = build_messages(record, prompt_mode, class_source=class_source)
    metadata = {"env": record["env"], GROUP_KEY: record["stratum"], "delta_size": record["delta_size"],
                "arg_count": record["arg_count"], "tool": record["action"]["name"]}
    return Sample(id=record["id"], input=_chat(messages), target=target_answer(record), metadata=metadata)


@lru_cache(maxsize=4)
def _records_by_id(benchmark: str, split: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in load(benchmark, split)}


@scorer(metrics=_METRICS, name="envsim_scorer")
def envsim_scorer(benchmark: str = "v1", split: str = "test") -> Scorer:
    """Our parser and scorer as an inspect scorer: value ``{fm, cm, cm_lenient[, cm_original], parsed}`` as 0/1."""

    async def score(state: TaskState, target: Target) -> Score:
        record = _records_by_id(benchmark, split)[str(state.sample_id)]
        text = state.output.completion if state.output else ""
        answer = parse_answer(text)
        result = score_prediction(record, answer)
        verdicts = result.to_json()
        value: dict[str, float] = {key: float(bool(verdicts[key])) for key in (*RATE_KEYS, "parsed")}
        metadata = {GROUP_KEY: record["stratum"], "delta_size": record["delta_size"],
                    "arg_count": record["arg_count"], "answer_format": answer.format,
                    **{k: verdicts[k] for k in ("delta_precision", "delta_recall", "delta_f1")}}
        return Score(value=value, answer=text[:2000], explanation=result.reason, metadata=metadata)

    return score


@task
def envsimbench(benchmark: str = "v1", split: str = "test", prompt_mode: str = "mdp",
                limit: int | None = None) -> Task:
    """EnvSimBench: predict a tool call's observation and state patch; scored FM / CM / CM-lenient per stratum."""
    if prompt_mode not in PROMPT_MODES:
        raise ValueError(f"unknown prompt mode {prompt_mode!r}; choose from {', '.join(PROMPT_MODES)}")
    limit = int(limit) if limit is not None else None
    records = select_records(load(benchmark, split), limit)
    sources = _class_sources(records) if prompt_mode == "full-class" else {}
    samples = [record_sample(r, prompt_mode, sources.get(r["env"])) for r in records]
    return Task(dataset=MemoryDataset(samples, name=f"envsimbench-{benchmark}-{split}"), solver=generate(),
                scorer=envsim_scorer(benchmark, split),
                metadata={"benchmark": benchmark, "split": split, "prompt_mode": prompt_mode,
                          "prompt_version": PROMPT_VERSION, "limit": limit})


def log_rates(log: Any) -> dict[str, Any]:
    """An inspect log's metrics in ``summary.json``'s layout: ``{"overall": {rate: x}, "by_stratum": {s: {rate: x}}}``.

    Strata without samples are absent (``summary.json`` lists them with ``n`` = 0).
    """
    overall: dict[str, float] = {}
    by_stratum: dict[str, dict[str, float]] = {}
    for score in log.results.scores if log.results else []:
        for metric in score.metrics.values():
            if metric.group == "grouped":
                by_stratum.setdefault(metric.name, {})[score.name] = float(metric.value)
            elif metric.name == "mean":
                overall[score.name] = float(metric.value)
    return {"overall": overall, "by_stratum": by_stratum}
