"""Benchmark records one at a time: an evaluation holds the record being scored, not the whole split.

``open_stream(name, split, limit, check=, select=)`` checks every line of the split before a run starts
(``check_file``: the checks and ``file:line`` messages of ``load``, the run's own ``check`` included, keeping only
the ids) and returns a ``RecordStream``: its ``total``, the samples ``select`` keeps (``--ids``), the ``--limit``
cut (evenly spaced, as ``load`` + ``evenly_spaced`` gives) and an iterator that reads,
decodes with the strict rules (``jsonsafe.loads``), resolves stored states and compacts
(``compact.share_unchanged``) each record when its turn comes. Only what the strict decoder alone refuses
(NaN, an integer too long, nesting deeper than 200) is found then, and stops the run at that line (what was
scored before it is kept). Files in the original EnvSimBench format (one JSON list) are read whole through
``load``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

CHUNK = 1 << 20


def count_lines(path: Path) -> int:
    """Non-blank lines of a file, read in chunks (never whole)."""
    count = 0
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                count += 1
    return count


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in chunks (``benchmark.file_digest`` without holding the file)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def limit_positions(total: int, limit: int | None) -> range | list[int]:
    """Positions of the samples a ``--limit`` keeps (``evaluation.running.single_run.evenly_spaced``'s choice)."""
    return cut_positions(range(total), limit)


def cut_positions(positions: Sequence[int], limit: int | None) -> Sequence[int]:
    """``limit`` of ``positions`` evenly spaced (``evaluation.running.single_run.evenly_spaced``'s choice), else all."""
    if limit is not None and 0 <= limit < len(positions):
        return [positions[i * len(positions) // limit] for i in range(limit)]
    return positions


#: What a run needs of every record beyond the schema (``validation.RecordCheck``): its problem, or ``None``.
RecordCheck = Callable[[dict[str, Any]], "str | None"]
#: The positions a run keeps, given the split's ids in file order (``evaluation.running.subsets.select_positions``).
Selection = Callable[[list[str]], Sequence[int]]
#: Told how many more bytes of the file the check has read (a progress display: ``progress.DelayedProgress``).
BytesRead = Callable[[int], None]


@dataclass
class RecordStream:
    """The samples of one run: how many, and an iterator that yields each when its turn comes."""

    path: Path
    total: int
    positions: Sequence[int]
    records: list[dict[str, Any]] | None = None   # a file in the original format, read whole
    ids: Sequence[str] = ()                        # the ids of the split, in file order

    @property
    def sample_ids(self) -> list[str]:
        """The ids of this run's samples, in the order they are yielded."""
        return [self.ids[i] for i in self.positions]

    def __len__(self) -> int:
        return len(self.positions)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self.records is not None:
            return (self.records[i] for i in self.positions)
        return _read_jsonl(self.path, self.positions)


def open_stream(name: str, split: str = "test", limit: int | None = None, *, check: RecordCheck | None = None,
                select: Selection | None = None, on_bytes: BytesRead | None = None) -> RecordStream:
    """The samples of a benchmark split: those ``select`` keeps (all without it), cut by ``limit``. Every record is
    checked now (the schema, repeated ids and ``check``), so a bad file is refused before a run starts; ``on_bytes``
    follows the check through a JSONL file. Raises ``FileNotFoundError`` / ``ValueError`` (``BenchmarkFileError``,
    or what ``select`` raises)."""
    from envsim.benchmark import benchmark_path, load
    from envsim.construction.interop import is_envsimbench_file

    path = benchmark_path(name, split)
    try:
        original = is_envsimbench_file(path)
    except (UnicodeDecodeError, OSError):
        original = False
    if original:
        records = load(name, split, check=check)
        from envsim.benchmark.compact import compact_records

        compact_records(records)
        ids = [str(r["id"]) for r in records]
    else:
        try:
            ids = check_file(path, check, on_bytes)
        except OSError as exc:
            from envsim.benchmark.validation import BenchmarkFileError

            raise BenchmarkFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
        records = None
    chosen = select(ids) if select is not None else range(len(ids))
    return RecordStream(path, len(ids), cut_positions(chosen, limit), records, ids)


def check_file(path: Path, check: RecordCheck | None = None, on_bytes: BytesRead | None = None) -> list[str]:
    """Check every line of a JSONL benchmark before a run starts, as ``load`` does (UTF-8, JSON, the record
    schema, repeated ids, ``check``; ``BenchmarkFileError`` at ``file:line``), keeping nothing but the ids;
    returns them in file order; ``on_bytes`` is told the size of each line as it is checked. Lines are decoded by
    orjson where it gives json's values (``jsonsafe.decoded_by_orjson``), else by the C decoder; the strict number
    and depth rules of ``jsonsafe.loads`` are applied when each record is read for its turn."""
    import json

    from envsim.benchmark.state_store import has_refs, resolve, state_folder
    from envsim.benchmark.validation import BenchmarkFileError, _short, checked_problem, parse_line
    from envsim.jsonsafe import NOT_DECODED, decoded_by_orjson

    folder = state_folder(path)
    seen: dict[str, int] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if on_bytes is not None:
                on_bytes(len(raw))
            raw = raw[:-1] if raw.endswith(b"\n") else raw
            if not raw.strip():
                continue
            place = f"{path}:{number}"
            record = decoded_by_orjson(raw)
            if record is NOT_DECODED:
                try:
                    record = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, ValueError, RecursionError):
                    record = parse_line(raw, place)  # raises with the precise reason
            if has_refs(record):
                record = resolve(record, folder)
            problem = checked_problem(record, check)
            if problem is None and record["id"] in seen:
                problem = f"duplicate id {_short(record['id'])} (first at {path}:{seen[record['id']]})"
            if problem is not None:
                raise BenchmarkFileError(f"{place}: {problem}")
            seen[record["id"]] = number
    return [str(sample_id) for sample_id in seen]


def _read_jsonl(path: Path, positions: Sequence[int]) -> Iterator[dict[str, Any]]:
    """The records at ``positions`` (among the non-blank lines), each checked, resolved and compacted."""
    from envsim.benchmark.compact import share_unchanged
    from envsim.benchmark.state_store import has_refs, resolve, state_folder
    from envsim.benchmark.validation import BenchmarkFileError, _short, parse_line, record_problem

    wanted = iter(positions)
    target = next(wanted, None)
    folder = state_folder(path)
    seen: dict[str, int] = {}
    index = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if target is None:
                return
            raw = raw[:-1] if raw.endswith(b"\n") else raw
            if not raw.strip():
                continue
            position, index = index, index + 1
            if position != target:
                continue
            target = next(wanted, None)
            place = f"{path}:{number}"
            record = parse_line(raw, place)
            if has_refs(record):
                record = resolve(record, folder)
            problem = record_problem(record)
            if problem is None and record["id"] in seen:
                problem = f"duplicate id {_short(record['id'])} (first at {path}:{seen[record['id']]})"
            if problem is not None:
                raise BenchmarkFileError(f"{place}: {problem}")
            seen[record["id"]] = number
            if type(record) is dict and isinstance(record.get("state"), dict) \
                    and isinstance(record.get("next_state"), dict):  # noqa: E721 - stored records share already
                record["next_state"] = share_unchanged(record["state"], record["next_state"])
            yield record
