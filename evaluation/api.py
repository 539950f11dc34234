"""``envsim.evaluate``: score a model on a benchmark from Python, with the same result as ``envsim eval``.

    import envsim
    summary = envsim.evaluate("my-sim", base_url="http://localhost:8000/v1", limit=40)
    print(summary.overall.cm, summary.run_dir)

The command line is a thin shell over this function. It raises a subclass of ``EvalStopped`` when it
stops before the run (bad option, missing benchmark or extra, failed preflight, busy run directory) and
returns an ``EvalSummary`` otherwise; whether enough samples were scored is ``summary.enough_scored``
(the command exits 3 when it is false). A tiered benchmark (v2) with ``tier=None`` runs every tier whose
requirements are met here; ``summary.not_run`` maps the tiers left out to what they need and how to install
it (``tier="all"`` or a tier's name raises ``MissingRequirement`` instead)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Sequence

from envsim.evaluation.errors import InvalidOption
from envsim.evaluation.running.eval_options import EvalOptions, MinScored, Printer
from envsim.evaluation.running.eval_summary import EvalSummary


def evaluate(model: str, *, benchmark: str = "v1", split: str | None = None, tier: str | None = None,
             limit: int | None = None, ids: str | Path | None = None, prompt_mode: str = "mdp",
             prompt_version: str | None = None,
             tokenizer: str | None = None, temperature: float = 0.0, max_tokens: int = 2048,
             extra: dict[str, Any] | None = None, response_format: str = "free", concurrency: int = 8,
             timeout: float = 120.0, max_retries: int = 4,
             max_response_bytes: int = 4 * 1024 * 1024, base_url: str | Sequence[str] | None = None,
             base_url_file: str | Path | None = None, api_key: str | None = None, preflight: bool = True,
             min_scored: MinScored | int | str = 1, runs_root: str | Path = "runs", run_dir: str | Path | None = None,
             overwrite: bool = False, track: str = "single", horizon: int = 5, episodes: int = 2,
             env_modules: Sequence[str] = (), logged_calls: str | Path | None = None, logged_k: int = 3,
             echo: Printer | None = None, echo_err: Printer | None = None) -> EvalSummary:
    """Evaluate ``model`` (an endpoint's model name, or the baselines ``"null"`` / ``"oracle"``) and return
    its summary; keywords mirror ``envsim eval``'s options (``tokenizer`` = ``--tokenizer``, ``extra`` =
    ``--extra`` as a dict, ``response_format`` = ``--response-format``: ``"free"``, ``"json-schema"`` or ``"json-schema-path-first"``;
    ``logged_calls`` / ``logged_k`` = ``--logged-calls`` / ``--logged-k``).
    ``echo``/``echo_err`` receive the console lines (default: silent); progress follows ``ENVSIM_PROGRESS``.
    Raises ``EvalStopped`` (and subclasses) when nothing was run."""
    from envsim.evaluation.running.single_run import run_split
    from envsim.evaluation.running.tiers import check_requirements, tier_plan, tiers_of_split

    urls = (base_url,) if isinstance(base_url, str) else tuple(base_url or ())
    try:
        threshold = MinScored.parse(min_scored)
    except ValueError as exc:
        raise InvalidOption("--min-scored", str(exc)) from None
    options = EvalOptions(model=model, benchmark=benchmark, split=split or "test", split_given=split is not None,
                          tier=tier, limit=limit, ids=str(ids) if ids is not None else None,
                          prompt_mode=prompt_mode, prompt_version=prompt_version,
                          tokenizer_dir=tokenizer, temperature=temperature, max_tokens=max_tokens, extra=extra or {},
                          response_format=response_format,
                          concurrency=concurrency, timeout=timeout, max_retries=max_retries,
                          max_response_bytes=max_response_bytes, base_urls=urls,
                          base_url_file=Path(base_url_file) if base_url_file else None, api_key=api_key,
                          preflight=preflight, min_scored=threshold, runs_root=Path(runs_root),
                          run_dir=Path(run_dir) if run_dir else None, overwrite=overwrite, track=track,
                          horizon=horizon, episodes=episodes, env_modules=tuple(env_modules),
                          logged_calls=Path(logged_calls) if logged_calls is not None else None, logged_k=logged_k,
                          echo=escaped(echo or _silent), echo_err=escaped(echo_err or _silent))
    options.check()
    import_env_modules(options.env_modules)
    plan = tier_plan(benchmark, tier, options.split_given, options.split)
    if plan is not None:
        from envsim.evaluation.running.tiers import run_tiers

        if options.ids is not None:
            raise InvalidOption("--ids", "an id list selects samples of one split; give --split or one --tier")
        return run_tiers(plan, options)
    check_requirements(tiers_of_split(benchmark, options.split), options)
    return run_split(options)


def import_env_modules(modules: Sequence[str]) -> None:
    """Import the modules the user trusts to define environments (``--env-module``); ``InvalidOption`` on failure."""
    from envsim.envs.sandbox import trust_module

    for name in modules:
        try:
            trust_module(name)  # the user's own code: records may name its environments (envsim.envs.sandbox.trust)
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure of the user's module stops the run
            raise InvalidOption("--env-module", f"cannot import {name!r}: {type(exc).__name__}: {exc}") from None


def escaped(printer: Printer) -> Printer:
    """``printer`` that receives every console line with its control characters escaped (an endpoint's error
    text, a record's id, a reason: none of them can move the cursor, clear the screen or retitle the window)."""
    from envsim.control_chars import escape_lines

    def show(text: str) -> Any:
        return printer(escape_lines(text))

    return show


def _silent(_text: str) -> None:
    """Print nothing."""
