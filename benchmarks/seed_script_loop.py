"""The request/score loop of the original EnvSimBench evaluation script (``Evaluation/10.SFT-evaluation.py`` of
cookieApril/EnvSimBench), re-implemented from reading it, for a same-server cost comparison only
(``compare_seed_script.py``). Not used by EnvSim; nothing here is its code.

What each sample costs there, and here, in the same order:

* the samples of an exported file (a JSON list of ``step_detail`` samples, ``envsim`` export) read whole;
* one worker thread per ``--workers`` (a thread pool), each sending through one shared synchronous
  ``openai.OpenAI`` client: a system message with the tool code and the state as indented JSON, a user message
  ``Tool call: name(args)``; ``temperature``, ``max_tokens=4096`` and the vLLM ``extra_body`` it sends;
* the answer's first JSON object found by stripping ``<think>`` blocks, taking a fenced block, then a
  character-by-character brace count (``json.loads`` of the first closed block, trailing commas dropped on a
  failure), else ``json.loads`` / ``ast.literal_eval`` of the whole text;
* the predicted feedback turned back into an object (the same extraction, then ``ast.literal_eval``);
* a deep copy of the state with every predicted change applied (dotted paths, parents created; the script also
  pads lists for numeric parts, which the answers served here never use);
* the true changes as a recursive dictionary diff; every true changed path looked up in the predicted state;
* the counts of the sample's category updated under a lock, **and the whole checkpoint file (every finished
  sample so far, indented) rewritten**; a tqdm bar updated;
* at the end, every sample's result (with its predicted state) written as one indented JSON file.

    python benchmarks/seed_script_loop.py --input EXPORT.json --base-url URL --workers 8 --output OUT.json
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

INSTRUCTIONS = ("Instructions: You are given the environment code and the initial config. A tool call will be "
                "provided; you must predict the environment's textual feedback (exact output string) and any "
                "configuration changes that result from executing the tool. Only report config changes using types: "
                "add, modify, delete. Output ONLY a JSON object with keys: \"feedback\": string, \"config_changes\": "
                "[{\"type\":..., \"path\":..., \"value\": ...}]. If no config change, set \"config_changes\": []. "
                "Do not output other text. Do not repeat the JSON. Output exactly one JSON object and stop.")
EXTRA_BODY = {"repetition_penalty": 1.15, "stop": ["\n\n\n\n", "}{", "{EIF", "NdrFc"]}
FENCE = re.compile(r"```(?:json)?\s*([\s\S]*?)```", re.IGNORECASE)


def seed_messages(step: dict[str, Any], env_code: str) -> list[dict[str, str]]:
    """The two messages the script sends for one step."""
    action = step.get("action") or {}
    call = f"{action.get('name') or 'call'}({json.dumps(action.get('arguments') or {}, ensure_ascii=False)})"
    system = (f"Environment code:\n\n{env_code}\n\nInitial config:\n"
              f"{json.dumps(step.get('config_before') or {}, ensure_ascii=False, indent=2)}\n\n{INSTRUCTIONS}")
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"Tool call: {call}\n\nReturn the JSON as specified."}]


def _first_object(text: str) -> Any:
    """The first closed ``{...}`` of ``text`` that decodes, by counting braces one character at a time."""
    depth, start, quoted, escaped = 0, None, False, False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif char == "{":
            start = index if depth == 0 else start
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0 and start is not None:
                block = text[start:index + 1]
                for candidate in (block, re.sub(r",\s*]", "]", re.sub(r",\s*}", "}", block))):
                    try:
                        return json.loads(candidate)
                    except ValueError:
                        pass
                start = None
    return None


def extract_object(text: Any) -> Any:
    """The answer's JSON object, as the script finds it (``None`` when there is none)."""
    if not isinstance(text, str):
        return None
    text = re.sub(r"<think>[\s\S]*?</think>", "", text, flags=re.IGNORECASE)
    text = re.sub(r"<think>[\s\S]*$", "", text, flags=re.IGNORECASE)
    fenced = FENCE.search(text)
    if fenced:
        found = _first_object(fenced.group(1).strip())
        if found is not None:
            return found
    found = _first_object(text)
    if found is not None:
        return found
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return None


def as_object(value: Any) -> Any:
    """A feedback string turned back into a value (extraction first, then a Python literal)."""
    if not isinstance(value, str):
        return value
    found = extract_object(value)
    if found is not None:
        return found
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value


def apply_dotted(state: dict[str, Any], change: dict[str, Any]) -> None:
    """One predicted change applied to ``state`` in place (parents created; anything else skipped)."""
    path = change.get("path")
    parts = path.split(".") if isinstance(path, str) else list(path) if isinstance(path, list) else []
    if not parts:
        return
    node: Any = state
    for part in parts[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            return
    if not isinstance(node, dict):
        return
    if change.get("type") in ("delete", "removed"):
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = change.get("value", change.get("after"))


def true_changes(before: Any, after: Any, prefix: str = "") -> list[dict[str, Any]]:
    """The recursive dictionary diff the script compares against (dotted paths, lists whole)."""
    out: list[dict[str, Any]] = []
    before, after = before or {}, after or {}
    for key in sorted(set(before) | set(after)):
        path = f"{prefix}.{key}" if prefix else key
        if key not in before or key not in after:
            out.append({"path": path, "after": after.get(key)})
        elif isinstance(before[key], dict) and isinstance(after[key], dict):
            out.extend(true_changes(before[key], after[key], path))
        elif before[key] != after[key]:
            out.append({"path": path, "after": after[key]})
    return out


def score(step: dict[str, Any], text: str | None) -> dict[str, Any]:
    """The script's verdicts on one answer (feedback match, config change correct) and what it keeps."""
    parsed = extract_object(text)
    if not isinstance(parsed, dict):
        return {"error": "failed_parse", "raw": text}
    predicted = copy.deepcopy(step.get("config_before") or {})
    for change in parsed.get("config_changes") or []:
        if isinstance(change, dict):
            apply_dotted(predicted, change)
    actual = true_changes(step.get("config_before"), step.get("config_after"))
    correct = True
    for change in actual:
        node: Any = predicted
        for part in change["path"].split("."):
            if not (isinstance(node, dict) and part in node):
                correct = False
                break
            node = node[part]
        if not correct or node != change["after"]:
            correct = False
            break
    observation = step.get("observation")
    truth = as_object(observation.get("content") if isinstance(observation, dict) else observation)
    feedback = as_object(parsed.get("feedback"))
    return {"feedback_pred": feedback, "feedback_true": truth, "feedback_match": feedback == truth,
            "changes_pred": parsed.get("config_changes"), "changes_true": actual, "config_change_correct": correct,
            "predicted_after": predicted}


def main() -> None:
    """Evaluate every step of ``--input`` against ``--base-url`` the script's way."""
    import openai
    from tqdm import tqdm

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="table")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    samples = json.loads(Path(args.input).read_text(encoding="utf-8"))
    steps = [(i, s["step_detail"], s.get("env_code") or "") for i, s in enumerate(samples)]
    client = openai.OpenAI(base_url=args.base_url, api_key="dummy")
    output = Path(args.output)
    checkpoint = output.with_name(output.stem + ".checkpoint.json")
    lock = threading.Lock()
    done: list[int] = []
    results: list[dict[str, Any]] = []
    counts = {"count": 0, "feedback_matches": 0, "config_correct": 0}
    bar = tqdm(total=len(steps), desc="Evaluating steps", unit="step")

    def one(task: tuple[int, dict[str, Any], str]) -> None:
        index, step, env_code = task
        try:
            reply = client.chat.completions.create(model=args.model, messages=seed_messages(step, env_code),
                                                   temperature=0.0, max_tokens=4096, timeout=300.0,
                                                   extra_body=EXTRA_BODY)
            verdict = score(step, reply.choices[0].message.content)
        except openai.OpenAIError as exc:
            verdict = {"error": str(exc)}
        with lock:
            results.append({"sample_index": index, "change_count": (step.get("config_change") or {}).get(
                "change_count"), "result": verdict})
            counts["count"] += 1
            counts["feedback_matches"] += bool(verdict.get("feedback_match"))
            counts["config_correct"] += bool(verdict.get("config_change_correct"))
            done.append(index)
            checkpoint.write_text(json.dumps({"completed": [[i, 0] for i in done]}, indent=2), encoding="utf-8")
        bar.update(1)

    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for future in [pool.submit(one, task) for task in steps]:
            future.result()
    bar.close()
    output.write_text(json.dumps({"model": args.model, "results": results, "summary": {"overall": counts}},
                                 indent=2, ensure_ascii=False), encoding="utf-8")
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
