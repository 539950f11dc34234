"""Why the ``executor`` baseline missed a sample: every miss is a prompt-sufficiency defect until shown otherwise.

The executor answers from the prompt alone (``evaluation.baselines.executor_baseline``). After a run, each sample it
got wrong is analysed here, **with** the record (the analysis is the scorer's side, not the model's), and
given one cause:

| cause | meaning |
|---|---|
| ``code_not_shown`` | the prompt's code defines nothing for the called tool (or is not Python) |
| ``name_not_defined`` | the code uses a name (a helper, a constant, an import alias, a method) the prompt does not define |
| ``state_rendered_differently`` | the tool read a state other than the one shown: a view that leaves out a path the call reads, or an object the prompt's JSON renders in another form (private attributes, non-string keys, objects) |
| ``outside_prompt`` | the shown code on the shown state gives another answer: the output depends on something the prompt does not show |
| ``sandbox_refusal`` | the sandbox refused the code (a forbidden operation, a time, memory or size limit) |
| ``sandbox_import`` | the code imports a module the sandbox does not load (``envs.sandbox.packages``): the sandbox's miss, not the prompt's |
| ``prompt_unreadable`` | the prompt could not be read back (a bug of the reader or a malformed prompt) |
| ``bad_record`` | the record nests past what EnvSim's own code handles (``RecursionError``): not classified further |

Decision order (first that applies): the executor's own status (unreadable, no code, a module the sandbox does not
load, refusal); an undefined
name (``NameError``, or ``AttributeError`` on a method the code calls on ``self``); the state (a view re-run on
the record's full state gives the truth, the environment's object differs from the JSON state, or the code reads
an attribute the shown state lacks); otherwise ``outside_prompt``.

Chained episodes: every step up to and including the first whose state diverges is analysed as a one-step
sample (the true state before it is replayed with the real environment); later misses are carried over from
that one and counted, not classified.

The accepted misses of a shipped track are listed next to its data card (``accepted_path``); ``unlisted``
names the misses of a run that the list does not hold (the slow-tier guard fails on them).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Sequence

CAUSES = ("code_not_shown", "name_not_defined", "state_rendered_differently", "outside_prompt", "sandbox_refusal",
          "sandbox_import",
          "prompt_unreadable", "bad_record")
MISSES_FILE = "executor_misses.json"
_NAME_ERROR = re.compile(r"NameError: name '([^']+)' is not defined")
_ATTRIBUTE_ERROR = re.compile(r"AttributeError: '[^']+' object has no attribute '([^']+)'")
#: Sandbox errors that are not refusals: the untrusted module itself failed (e.g. a ``NameError`` at class
#: definition), or the executor could not diff the next state it got. Every other ``SandboxError`` is a refusal
#: (a forbidden operation, a time, memory or size limit, a missing confinement layer, a worker that died).
_NOT_REFUSALS = ("untrusted environment failed:", "the next state cannot be diffed")
#: What the sandbox says of a module it does not hold (``worker._RefuseImports``, ``_refuse_module_builder``).
_SANDBOX_IMPORT = re.compile(r"(?:module '[^']+'|building a module) is not available in the sandbox")


def _error_text(execution: Any) -> str:
    """The error text the executed call ended with (its observation's, or why the module failed to load)."""
    if execution.status == "sandbox":
        return execution.detail
    observation = execution.observation
    if isinstance(observation, dict) and observation.get("success") is False:
        return str(observation.get("error", ""))
    return ""


def _is_refusal(detail: str) -> bool:
    return not detail.startswith(_NOT_REFUSALS)


def _matches_truth(record: dict[str, Any], execution: Any) -> bool:
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.evaluation.scoring.scoring import score_prediction

    if execution.status != "ran":
        return False
    score = score_prediction(record, parse_answer(json.dumps(execution.answer())))
    return bool(score.fm and score.cm)


def _python_equal(a: Any, b: Any) -> bool:
    """Equal as Python values of JSON types (a dict with ``int`` keys, a set or a tuple is not its JSON form)."""
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                       and not isinstance(a, bool) and not isinstance(b, bool)):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_python_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_python_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def object_differs(env_id: str, state: dict[str, Any]) -> str | None:
    """How the real environment's object, loaded with ``state``, differs from the JSON ``state`` the prompt shows
    (a wrapped foreign class keeps private attributes, objects, sets or non-string keys); ``None`` when it holds
    exactly that JSON or cannot be checked."""
    from envsim.envs.adapters.foreign import ForeignEnvironment
    from envsim.envs.registry import get_env

    try:
        env_class = get_env(env_id)
        if not (isinstance(env_class, type) and issubclass(env_class, ForeignEnvironment)):
            return None
        inner = vars(env_class.from_state(state)._inner)
    except Exception:  # noqa: BLE001 - an environment that cannot be loaded here is simply not checked
        return None
    private = sorted(k for k in inner if k.startswith("_"))
    public = {k: v for k, v in inner.items() if not k.startswith("_")}
    other = sorted(k for k in public if not _python_equal(public[k], state.get(k)))
    if not private and not other and public.keys() == state.keys():
        return None
    parts = []
    if other:
        parts.append(f"attributes held in another form than their JSON ({', '.join(other[:6])})")
    if private:
        parts.append(f"private attributes outside the state ({', '.join(private[:6])})")
    return "the tool's object keeps " + " and ".join(parts)


def classify(record: dict[str, Any], execution: Any) -> tuple[str, str]:
    """``(cause, detail)`` of a miss: the executor's ``execution`` of the record's prompt, judged against the record."""
    from envsim.evaluation.baselines.executor_baseline import run_shown

    status = execution.status
    if status == "unreadable":
        return "prompt_unreadable", execution.detail
    if status in ("code_not_shown", "not_python"):
        return "code_not_shown", execution.detail
    if status == "pomdp":
        return "prompt_unreadable", execution.detail
    error = _error_text(execution)
    if _SANDBOX_IMPORT.search(error):
        return "sandbox_import", f"the sandbox does not load what the shown code imports: {error[:200]}"
    if status == "sandbox" and _is_refusal(error):
        return "sandbox_refusal", error
    name = _NAME_ERROR.search(error)
    if name:
        return "name_not_defined", f"{name.group(1)!r} is used but not defined in the shown code"
    attribute = _ATTRIBUTE_ERROR.search(error)
    module = execution.module
    if attribute and module is not None and attribute.group(1) in module.called_attributes:
        return "name_not_defined", f"self.{attribute.group(1)}() is called but not defined in the shown code"
    shown = execution.shown
    if shown is not None and shown.mode == "mdp-view" and "state" in record:
        again = run_shown(shown, state=record["state"])
        if _matches_truth(record, again):
            return "state_rendered_differently", "the view leaves out a path the call reads (the same code on the " \
                                                 "full state gives the true answer)"
    differs = object_differs(record["env"], record["state"]) if "state" in record else None
    if differs:
        return "state_rendered_differently", differs
    if attribute:
        return "state_rendered_differently", f"the code reads self.{attribute.group(1)}, which the shown state does not have"
    if status == "sandbox":
        return "outside_prompt", f"the shown code fails where the real one runs: {error[:200]}"
    parts = [part for part, same in (("observation", _same(execution.observation, record.get("observation"))),
                                     ("patch", _same_state(record, execution))) if not same]
    return "outside_prompt", (f"the shown code on the shown state gives another {' and '.join(parts) or 'answer'}: "
                              "the true output depends on something the prompt does not show")


def _same(a: Any, b: Any) -> bool:
    from envsim.delta import canonical_json

    try:
        return canonical_json(a) == canonical_json(b)
    except (TypeError, ValueError):
        return False


def _same_state(record: dict[str, Any], execution: Any) -> bool:
    from envsim.evaluation.scoring.parsing import parse_answer
    from envsim.evaluation.scoring.scoring import score_prediction

    return bool(score_prediction(record, parse_answer(json.dumps(execution.answer()))).cm)


def miss_entry(record: dict[str, Any], row: dict[str, Any], messages: list[dict[str, str]],
               sample_id: str | None = None) -> dict[str, Any]:
    """One miss: the sample, its scores and its cause (the executor is run again on ``messages``)."""
    from envsim.evaluation.baselines.executor_baseline import execute_prompt

    cause, detail = classify(record, execute_prompt(messages))
    return {"id": sample_id or record["id"], "env": record["env"], "tool": record["action"]["name"],
            "stratum": record.get("stratum"), "fm": bool(row.get("fm")), "cm": bool(row.get("cm")),
            "cause": cause, "detail": detail}


def single_misses(records: Iterable[dict[str, Any]], rows: dict[str, dict[str, Any]], mode: str, version: str,
                  class_sources: Any = None) -> list[dict[str, Any]]:
    """The misses of a one-step run: every scored row without FM and CM, classified (in record order); ``records``
    is read once (a ``benchmark.stream.RecordStream`` is fine), ``class_sources`` answers ``.get(env_id)``."""
    from envsim.evaluation.prompting.prompts import build_messages

    misses = []
    for record in records:
        row = rows.get(record["id"])
        if not row or row.get("status") != "scored" or (row.get("fm") and row.get("cm")):
            continue
        try:
            record = record.materialised() if hasattr(record, "materialised") else record
            messages = build_messages(record, mode, class_source=(class_sources or {}).get(record["env"]),
                                      version=version)
            misses.append(miss_entry(record, row, messages))
        except RecursionError as exc:  # one record too deep for our code: named, the others still classified
            misses.append(bad_record_entry(record, row, exc))
    return misses


def bad_record_entry(record: dict[str, Any], row: dict[str, Any], exc: BaseException,
                     sample_id: str | None = None) -> dict[str, Any]:
    """The miss entry of a record EnvSim's own code could not handle (cause ``bad_record``, the error as detail)."""
    action = record.get("action")
    return {"id": sample_id or record.get("id"), "env": record.get("env"),
            "tool": action.get("name") if isinstance(action, dict) else None,
            "stratum": record.get("stratum"), "fm": bool(row.get("fm")), "cm": bool(row.get("cm")),
            "cause": "bad_record", "detail": f"{type(exc).__name__}: {str(exc)[:200]}"}


def chained_misses(episodes: Sequence[dict[str, Any]], rows: dict[str, dict[str, Any]], mode: str,
                   version: str) -> list[dict[str, Any]]:
    """The misses of a chained run: each step up to the first divergence, classified (``id`` is
    ``episode#step``); a step after it counts as ``carried`` in its episode's first entry."""
    from envsim.envs.sandbox import execute
    from envsim.envs.registry import get_env
    from envsim.envs.shown import class_source
    from envsim.evaluation.prompting.prompts import build_messages

    misses = []
    for episode in episodes:
        row = rows.get(episode["id"])
        if not row or row.get("status") != "scored":
            continue
        steps = row.get("steps") or []
        first = row.get("first_divergence")
        last = first if first is not None else len(steps) - 1
        wrong = [s for s in steps if s["index"] <= last and not (s.get("fm") and s.get("cm"))]
        if not wrong:
            continue
        env_class = get_env(episode["env"])
        source = class_source(env_class) if mode == "full-class" else None
        state, entries = episode["state"], []
        for index, step in enumerate(episode["steps"][: last + 1]):
            transition = execute(env_class, state, step["action"])
            scored = next((s for s in wrong if s["index"] == index), None)
            if scored is not None:
                record = {"id": episode["id"], "env": episode["env"], "state": state, "action": step["action"],
                          "code": step["code"], "tools": episode["tools"], "observation": transition.observation,
                          "next_state": transition.next_state, "patch": transition.patch, "stratum": step["stratum"]}
                try:
                    messages = build_messages(record, mode, class_source=source, version=version)
                    entries.append(miss_entry(record, scored, messages, f"{episode['id']}#{index}"))
                except RecursionError as exc:
                    entries.append(bad_record_entry(record, scored, exc, f"{episode['id']}#{index}"))
            state = transition.next_state
        carried = sum(1 for s in steps if s["index"] > last and not (s.get("fm") and s.get("cm")))
        if entries and carried:
            entries[-1]["carried"] = carried
        misses += entries
    return misses


def by_cause(misses: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Misses per cause, in ``CAUSES`` order (causes with none left out)."""
    counts = Counter(m["cause"] for m in misses)
    return {cause: counts[cause] for cause in CAUSES if counts[cause]}


def misses_markdown(misses: Sequence[dict[str, Any]]) -> str:
    """The misses by cause, then one line per miss."""
    if not misses:
        return "### Executor misses\n\nNone: every sample follows from its prompt.\n"
    lines = ["### Executor misses (prompt-sufficiency defects until shown otherwise)", "",
             "| cause | misses |", "|---|---:|"]
    lines += [f"| {cause} | {n} |" for cause, n in by_cause(misses).items()]
    lines += ["", "| id | env | tool | FM | CM | cause | detail |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {m['id']} | {m['env']} | {m['tool']} | {'✓' if m['fm'] else '✗'} | {'✓' if m['cm'] else '✗'} | "
              f"{m['cause']} | {m['detail'].replace('|', '/')} |" for m in misses]
    return "\n".join(lines) + "\n"


def write_misses(run_dir: Path, misses: Sequence[dict[str, Any]]) -> None:
    """``RUN/executor_misses.json`` (the report adds its counts to summary.json) and ``RUN/executor_misses.md``."""
    from envsim.evaluation.reporting.report import write_markdown, write_text_atomic

    payload = {"by_cause": by_cause(misses), "misses": list(misses)}
    write_text_atomic(run_dir / MISSES_FILE, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    write_markdown(run_dir / "executor_misses.md", misses_markdown(misses))


def read_miss_counts(run_dir: Path) -> dict[str, Any] | None:
    """``{"total", "by_cause"}`` of ``RUN/executor_misses.json`` (``None`` when absent or unreadable)."""
    try:
        from envsim.safe_files import read_json

        payload = read_json(run_dir / MISSES_FILE)
        return {"total": len(payload["misses"]), "by_cause": dict(payload["by_cause"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def miss_lines(misses: Sequence[dict[str, Any]]) -> list[str]:
    """Console lines: the misses by cause (nothing when there are none)."""
    if not misses:
        return []
    causes = ", ".join(f"{cause} {n}" for cause, n in by_cause(misses).items())
    return [f"executor misses (prompt-sufficiency defects until shown otherwise): {len(misses)}: {causes} "
            f"(see {MISSES_FILE})"]


def accepted_path(benchmark: str) -> Path:
    """The accepted-miss list of a shipped benchmark version, next to its data card."""
    from envsim.benchmark import BENCHMARK_DIR

    return BENCHMARK_DIR / benchmark / MISSES_FILE


def accepted_misses(benchmark: str, track: str) -> dict[str, dict[str, Any]]:
    """The accepted misses of one track (``id`` -> entry) from the data card's list (``{}`` when none)."""
    path = accepted_path(benchmark)
    if not path.exists():
        return {}
    tracks = json.loads(path.read_text()).get("tracks", {})
    return {m["id"]: m for m in tracks.get(track, {}).get("misses", [])}


def unlisted(misses: Iterable[dict[str, Any]], accepted: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Misses the accepted list does not hold, or holds with another cause."""
    return [m for m in misses if accepted.get(m["id"], {}).get("cause") != m["cause"]]


def record_run_misses(run_dir: Path, records: Iterable[dict[str, Any]], mode: str, version: str,
                      echo: Any = None, *, chained: bool = False) -> list[dict[str, Any]]:
    """Classify the misses of an executor run in ``run_dir`` (one-step records or chained episodes), write
    them (``write_misses``) and print the by-cause line on ``echo``; returns them."""
    from envsim.evaluation.running.runner import read_results

    rows = read_results(run_dir / "results.jsonl")
    if chained:
        misses = chained_misses(records, rows, mode, version)
    else:
        sources: Any = {}
        if mode == "full-class":  # looked up per environment as its records come (records may be a stream)
            from envsim.evaluation.running.single_run import LazyClassSources

            sources = LazyClassSources()
        misses = single_misses(records, rows, mode, version, sources)
    write_misses(run_dir, misses)
    if chained:  # the chained summary is written by the episode runner: the counts are added to it here
        summary_path = run_dir / "summary.json"
        try:
            from envsim.safe_files import read_json

            summary = read_json(summary_path)
            summary["executor_misses"] = read_miss_counts(run_dir)
            from envsim.evaluation.reporting.report import write_text_atomic

            write_text_atomic(summary_path, json.dumps(summary, indent=2) + "\n")
        except (OSError, ValueError):
            pass
    for line in miss_lines(misses):
        (echo or print)(line)
    return misses


def counts_markdown(counts: dict[str, Any]) -> str:
    """The report section of ``summary["executor_misses"]``."""
    causes = ", ".join(f"{cause} {n}" for cause, n in counts.get("by_cause", {}).items()) or "none"
    return (f"### Executor misses\n\n{counts.get('total', 0)} misses, each a prompt-sufficiency defect until shown "
            f"otherwise: {causes}. One line per miss: `{MISSES_FILE}` / `executor_misses.md`.\n")
