"""``envsim eval`` against the original EnvSimBench script's request/score loop (``seed_script_loop.py``), on the
same local server, the same samples and answers that are right in each client's own format.

    python benchmarks/compare_seed_script.py [--pairs 5] [--concurrency 8] [--samples 400]

The v1 test split is exported in the original's format (``envsim.construction.interop.write_envsimbench``);
both clients read that file. One ``table_server`` answers both: an EnvSim prompt (v1, ``mdp``) with the
oracle's answer, the script's prompt with the same truth in its own format (``feedback`` and dotted
``config_changes``); both clients score 100 % FM and CM (the script's own rule). The two commands run as child
processes in alternating pairs (EnvSim first in odd pairs, the script first in even ones); each figure is the
child's own (``child_usage``: wall, CPU user + system from ``os.wait4``, peak RSS from its own ``VmHWM``), and
the medians and their ratios are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_usage import run_python  # noqa: E402 - sibling modules of this script
from eval_overhead import answer_table  # noqa: E402
from seed_script_loop import seed_messages  # noqa: E402
from table_server import prompt_key, table_server  # noqa: E402


def seed_answer(sample: dict) -> str:
    """The true feedback and changes of one exported sample, in the format the script's prompt asks for."""
    from envsim.evaluation.scoring.original_rule import dotted, original_changes

    step = sample["step_detail"]
    kinds = {"added": "add", "removed": "delete", "modified": "modify"}
    changes = [{"type": kinds[c["type"]], "path": dotted(c["path"]), "value": c["after"]}
               for c in original_changes(step["config_before"], step["config_after"])]
    return json.dumps({"feedback": step["observation"]["content"], "config_changes": changes}, ensure_ascii=False)


def child(args: list[str]) -> dict[str, float]:
    """Run ``python ARGS``; its own wall, CPU and peak memory (``child_usage``)."""
    usage = run_python(args, env={"ENVSIM_PROGRESS": "lines"})
    if usage.exit_code != 0:
        raise SystemExit(f"{' '.join(args[:3])}... exited {usage.exit_code}: {usage.tail[-2000:]}")
    return {"wall": usage.wall, "cpu": usage.cpu, "peak_mb": usage.peak_mb}


def main() -> None:
    """Measure both clients in alternating pairs and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--samples", type=int, default=400, help="the first N samples of the v1 test split")
    args = parser.parse_args()
    from envsim.benchmark import load
    from envsim.construction.interop import write_envsimbench

    records = load("v1", "test")[: args.samples]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        export = tmp / "v1-test-envsimbench.json"
        write_envsimbench(records, export)
        samples = json.loads(export.read_text(encoding="utf-8"))
        table = answer_table(records)
        table.update({prompt_key(seed_messages(s["step_detail"], s.get("env_code") or "")): seed_answer(s)
                      for s in samples})
        figures: dict[str, list[dict[str, float]]] = {"envsim": [], "script": []}
        with table_server(table) as base_url:
            commands = {
                "envsim": ["-c", "from envsim.cli import main; main()", "eval", "--model", "table",
                           "--base-url", base_url, "--benchmark", str(export), "--run-dir", str(tmp / "run"),
                           "--overwrite", "--concurrency", str(args.concurrency)],
                "script": [str(Path(__file__).resolve().parent / "seed_script_loop.py"),
                           "--input", str(export), "--base-url", base_url, "--workers", str(args.concurrency),
                           "--output", str(tmp / "seed" / "results.json")],
            }
            (tmp / "seed").mkdir()
            for pair in range(args.pairs):
                order = ("envsim", "script") if pair % 2 == 0 else ("script", "envsim")
                for who in order:
                    figures[who].append(child(commands[who]))
                print(f"pair {pair + 1}: " + "; ".join(
                    f"{who} {f[-1]['wall']:.2f} s wall, {f[-1]['cpu']:.2f} s CPU, {f[-1]['peak_mb']:.0f} MB"
                    for who, f in figures.items()), flush=True)
            summary = json.loads((tmp / "run" / "summary.json").read_text())
            seed = json.loads((tmp / "seed" / "results.json").read_text())["summary"]["overall"]
        print(f"envsim scored FM {summary['overall']['fm']:.3f} CM {summary['overall']['cm']:.3f} "
              f"of {summary['scored']}; script FM {seed['feedback_matches']}/{seed['count']} "
              f"config {seed['config_correct']}/{seed['count']}")
        median = {who: {k: statistics.median(f[k] for f in runs) for k in ("wall", "cpu", "peak_mb")}
                  for who, runs in figures.items()}
        for who, m in median.items():
            print(f"median {who}: {m['wall']:.2f} s wall, {m['cpu']:.2f} s CPU, peak {m['peak_mb']:.0f} MB")
        e, s = median["envsim"], median["script"]
        print(f"envsim / script: {e['wall'] / s['wall']:.2f}x wall, {e['cpu'] / s['cpu']:.2f}x CPU, "
              f"{e['peak_mb'] / s['peak_mb']:.2f}x peak memory")


if __name__ == "__main__":
    main()
