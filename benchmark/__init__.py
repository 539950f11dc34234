"""The shipped benchmark files and their loader.

``load("v1", split="test")`` returns the records of ``benchmark/v1/test.jsonl``; a path to any
JSONL file of records works too. ``to_dataset`` gives a ``datasets.Dataset``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

BENCHMARK_DIR = Path(__file__).resolve().parent


def benchmark_path(name: str, split: str = "test") -> Path:
    """Path of a shipped benchmark split, or ``name`` itself when it is a file."""
    candidate = Path(name)
    if candidate.suffix == ".jsonl" or candidate.is_file():
        if not candidate.is_file():
            raise FileNotFoundError(f"benchmark file {name} does not exist")
        return candidate
    path = BENCHMARK_DIR / name / f"{split}.jsonl"
    if not path.is_file():
        shipped = sorted(p.name for p in BENCHMARK_DIR.iterdir()  # a benchmark holds split files (not subsets/)
                         if p.is_dir() and not p.name.startswith("_") and any(p.glob("*.jsonl")))
        raise FileNotFoundError(f"no benchmark {name!r} split {split!r}; shipped: {', '.join(shipped) or 'none'}")
    return path


def load(name: str = "v1", split: str = "test", *, check: Callable[[dict[str, Any]], str | None] | None = None
         ) -> list[dict[str, Any]]:
    """Records of a benchmark split (one dict per sample, in file order); a file in the original
    EnvSimBench format (a JSON list of ``step_detail`` samples) is read through the importer. ``check``
    adds what a run needs of each record (its problem or ``None``), reported at ``file:line`` like the
    schema's own problems (``BenchmarkFileError``)."""
    path = benchmark_path(name, split)
    from envsim.construction.interop import is_envsimbench_file, read_envsimbench

    from envsim.benchmark.validation import BenchmarkFileError, read_jsonl_records, validate_records

    try:
        original = is_envsimbench_file(path)
    except (UnicodeDecodeError, OSError):  # not text: our reader names the line and byte
        original = False
    if original:
        try:
            records = read_envsimbench(path, split=split)
        except UnicodeDecodeError as exc:
            raise BenchmarkFileError(f"{path}: not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
        except RecursionError:
            raise BenchmarkFileError(f"{path}: JSON nested too deep") from None
        return validate_records(_number_repeats(records), (f"{path}: record {i + 1}" for i in range(len(records))),
                                check)
    return read_jsonl_records(path, check)  # every line checked against the record schema, errors as file:line


def _number_repeats(records: list[Any]) -> list[Any]:
    """Original files repeat a step (alone and inside its trajectory) under one content-derived id;
    each repeat gets ``~2``, ``~3``... so that every record is scored (ids key the results)."""
    seen: dict[str, int] = {}
    for record in records:
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            count = seen[record["id"]] = seen.get(record["id"], 0) + 1
            if count > 1:
                record["id"] = f"{record['id']}~{count}"
    return records


def file_digest(name: str = "v1", split: str = "test") -> str:
    """sha256 of a benchmark split file (the identity recorded in run configs)."""
    return hashlib.sha256(benchmark_path(name, split).read_bytes()).hexdigest()


def to_dataset(name: str = "v1", split: str = "test") -> Any:
    """The split as a ``datasets.Dataset`` (nested JSON fields serialised as strings for a stable schema)."""
    import datasets

    rows = []
    for record in load(name, split):
        rows.append({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v
                     for k, v in record.items()})
    return datasets.Dataset.from_list(rows)
