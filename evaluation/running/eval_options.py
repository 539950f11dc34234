"""The settings of one evaluation (what ``envsim eval``'s options and ``envsim.evaluate``'s keywords hold),
checked once, before anything runs."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from envsim.evaluation.errors import InvalidOption

Printer = Callable[[str], None]


def _silent(_text: str) -> None:
    """Print nothing (the API's default)."""


@dataclass(frozen=True)
class MinScored:
    """At least ``count`` samples, or at least ``percent`` % of the run's samples, must be scored."""

    count: int | None = None
    percent: float | None = None

    def required(self, total: int) -> int:
        """Samples that must be scored out of ``total`` (never more than ``total``)."""
        if self.percent is not None:
            return min(total, math.ceil(total * self.percent / 100 - 1e-9))
        return min(total, self.count or 0)

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else str(self.count)

    @classmethod
    def parse(cls, value: "MinScored | int | str") -> "MinScored":
        """``1``, ``"380"`` (a count) or ``"95%"`` (a percentage up to 100); ``ValueError`` otherwise."""
        if isinstance(value, MinScored):
            return value
        text = str(value).strip()
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", text)
        if match and float(match.group(1)) <= 100:
            return cls(percent=float(match.group(1)))
        if text.isdigit():
            return cls(count=int(text))
        raise ValueError(f"{value!r} is not a count (e.g. 380) or a percentage up to 100% (e.g. 95%)")


@dataclass(frozen=True)
class EvalOptions:
    """Everything one ``evaluate`` call needs; ``echo``/``echo_err`` receive its console lines."""

    model: str
    benchmark: str = "v1"
    split: str = "test"
    split_given: bool = False
    tier: str | None = None
    limit: int | None = None
    ids: str | None = None  # an id list file or a shipped subset name (evaluation/running/subsets.py)
    prompt_mode: str = "mdp"
    prompt_version: str | None = None
    tokenizer_dir: str | None = None
    temperature: float = 0.0
    max_tokens: int = 2048
    extra: dict[str, Any] = field(default_factory=dict)
    response_format: str = "free"  # evaluation/prompting/answer_schema.py: RESPONSE_FORMATS
    concurrency: int = 8
    timeout: float = 120.0
    max_retries: int = 4
    max_response_bytes: int = 4 * 1024 * 1024
    base_urls: tuple[str, ...] = ()
    base_url_file: Path | None = None
    api_key: str | None = None
    preflight: bool = True
    min_scored: MinScored = MinScored(count=1)
    runs_root: Path = Path("runs")
    run_dir: Path | None = None
    overwrite: bool = False
    track: str = "single"
    horizon: int = 5
    episodes: int = 2
    env_modules: tuple[str, ...] = ()
    logged_calls: Path | None = None  # an ``envsim train data`` folder whose calls prompts list (logged_calls.py)
    logged_k: int = 3
    echo: Printer = _silent
    echo_err: Printer = _silent

    def check(self) -> None:
        """Raise ``InvalidOption`` for a value no run can use (before anything is loaded or sent)."""
        from envsim.evaluation.endpoints.providers import core_field_problem
        from envsim.evaluation.prompting.answer_schema import RESPONSE_FORMATS
        from envsim.evaluation.prompting.prompts import PROMPT_MODES, PROMPT_VERSIONS

        positive = {"--limit": self.limit, "--concurrency": self.concurrency, "--max-tokens": self.max_tokens,
                    "--horizon": self.horizon, "--episodes": self.episodes}
        for option, value in positive.items():
            if value is not None and value < 1:
                raise InvalidOption(option, f"{value} is not a positive number (a run must have something to score)")
        if self.temperature < 0:
            raise InvalidOption("--temperature", f"{self.temperature} is negative")
        if self.timeout <= 0:
            raise InvalidOption("--timeout", f"{self.timeout} is not a positive number of seconds")
        if self.max_retries < 0:
            raise InvalidOption("--max-retries", f"{self.max_retries} is negative")
        if self.prompt_mode not in PROMPT_MODES:
            raise InvalidOption("--prompt-mode", f"{self.prompt_mode!r} is not one of {', '.join(PROMPT_MODES)}")
        if self.prompt_version is not None and self.prompt_version not in PROMPT_VERSIONS:
            raise InvalidOption("--prompt-version",
                                f"{self.prompt_version!r} is not one of {', '.join(PROMPT_VERSIONS)}")
        if self.model == "executor" and self.prompt_mode == "pomdp" and not self.base_urls:
            from envsim.evaluation.baselines.executor_baseline import POMDP_REFUSAL

            raise InvalidOption("--prompt-mode", POMDP_REFUSAL)
        if self.track not in ("single", "rollout"):
            raise InvalidOption("--track", f"{self.track!r} is not 'single' or 'rollout'")
        if not isinstance(self.extra, dict):
            raise InvalidOption("--extra", "must be a JSON object")
        problem = core_field_problem(self.extra)
        if problem:
            raise InvalidOption("--extra", problem)
        if self.response_format not in RESPONSE_FORMATS:
            raise InvalidOption("--response-format",
                                f"{self.response_format!r} is not one of {', '.join(RESPONSE_FORMATS)}")
        if self.response_format != "free" and "response_format" in self.extra:
            raise InvalidOption("--response-format", "--extra already sets response_format; give only one of them")
        if self.logged_calls is not None and self.prompt_mode == "pomdp":
            raise InvalidOption("--logged-calls", "pomdp prompts show the episode's history, not logged calls")
        if self.logged_calls is not None and self.track != "single":
            raise InvalidOption("--logged-calls", "only the single-step track lists logged calls")
        if self.logged_k < 1:
            raise InvalidOption("--logged-k", f"{self.logged_k} is not a positive number")

    def request_extra(self) -> dict[str, Any]:
        """The extra fields of every request: ``--extra`` plus the ``response_format`` of ``--response-format``."""
        from envsim.evaluation.prompting.answer_schema import request_fields
        from envsim.evaluation.prompting.prompts import default_prompt_version

        version = self.prompt_version or default_prompt_version(self.benchmark, self.prompt_mode)
        return request_fields(self.extra, self.response_format, self.prompt_mode, version)
