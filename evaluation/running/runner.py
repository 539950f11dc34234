"""Resumable, concurrent evaluation runs.

A run directory holds ``config.json`` (the run's settings and their hash), an append-only
``results.jsonl`` (one line per finished sample, flushed as it is written), and the reports.
Re-running the same configuration skips samples already scored; samples that ended in an
infrastructure failure are tried again. A different configuration in the same directory is refused.

One process at a time: the run directory is locked (``flock`` on ``RUN/.lock``) while a run uses it.
A torn last line (a kill between write and newline) is cut off before appending. Each sample is
isolated: an exception while parsing, scoring or recording one answer becomes that sample's scored
failure, and the provider is closed only after every sample has finished.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import errno
import os
import random
import stat
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.prompting.prompts import PROMPT_VERSION, build_messages
from envsim.evaluation.endpoints.providers import Provider, failure_reason, now
from envsim.evaluation.scoring.scoring import SampleScore, score_prediction
from envsim.jsonsafe import dumps_line
from envsim.tokens import eval_token_fields

MAX_STORED_ANSWER = 20_000
#: The status of a sample whose record EnvSim's own code cannot handle (it nests past what the prompt builder
#: can write: ``RecursionError``): named with its reason, never retried, counted apart from scored samples and
#: from infrastructure failures (``summary["bad_records"]``).
BAD_RECORD = "bad_record"


LOCK_NAME = ".lock"
log = logging.getLogger(__name__)


class RunConfigMismatch(RuntimeError):
    """The run directory holds a run with different settings."""


class RunDirLocked(RuntimeError):
    """Another process is running an evaluation in this run directory."""


class RunFileUnsafe(RunDirLocked):
    """A run file EnvSim writes (``.lock``, ``results.jsonl``, ``episodes.jsonl``) is a symbolic link or not a
    regular file: writing through it would empty or append to whatever it points at."""


#: Files of a run directory opened for writing in place (never replaced by a rename): refused as symlinks.
APPENDED_FILES = ("results.jsonl", "episodes.jsonl")


def open_run_file(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` of a run file that never follows a symbolic link (``O_NOFOLLOW``) and accepts only a regular
    file; raises ``RunFileUnsafe`` naming the path otherwise."""
    unsafe = RunFileUnsafe(f"{path} is a symbolic link or not a regular file; EnvSim does not write through it "
                           "(remove it, or use another --run-dir)")
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise unsafe from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise unsafe
    os.set_blocking(fd, True)
    return fd


def check_run_files(run_dir: Path) -> None:
    """Refuse a run directory whose appended files are symbolic links or not regular files (``RunFileUnsafe``)."""
    for name in APPENDED_FILES:
        path = run_dir / name
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            raise RunFileUnsafe(f"{path} is a symbolic link or not a regular file; EnvSim does not write through "
                                "it (remove it, or use another --run-dir)")


_HELD_LOCKS: dict[str, list[int]] = {}  # resolved run dir -> [fd, depth]: re-entrant within one process


@contextmanager
def lock_run_dir(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive, non-blocking ``flock`` on ``run_dir/.lock`` (re-entrant in one process).

    A second process gets ``RunDirLocked`` naming the holder's pid. The lock file is never deleted
    (deleting it would let two processes lock two different files); the kernel drops the lock when
    the holder exits, however it exits."""
    run_dir.mkdir(parents=True, exist_ok=True)
    key = str(run_dir.resolve())
    if key in _HELD_LOCKS:
        _HELD_LOCKS[key][1] += 1
        try:
            yield
        finally:
            _HELD_LOCKS[key][1] -= 1
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no locking
        yield
        return
    fd = open_run_file(run_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    try:
        check_run_files(run_dir)
    except RunFileUnsafe:
        os.close(fd)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise RunDirLocked(f"{run_dir} is in use by another envsim eval (pid {holder}); wait for it to finish "
                           "or use another --run-dir") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _HELD_LOCKS[key] = [fd, 1]
    try:
        yield
    finally:
        _HELD_LOCKS[key][1] -= 1
        if _HELD_LOCKS[key][1] == 0:
            del _HELD_LOCKS[key]
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def clear_run_dir(run_dir: Path) -> None:
    """Delete everything in a run directory except its lock file (``--overwrite``, under the lock)."""
    import shutil

    for child in run_dir.iterdir():
        if child.name == LOCK_NAME:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def open_results_for_append(path: Path) -> IO[str]:
    """``path`` opened to append UTF-8 lines, never through a symbolic link (``RunFileUnsafe``)."""
    return os.fdopen(open_run_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a", encoding="utf-8")


def repair_results(path: Path) -> int:
    """Cut a torn last line (a kill between write and newline) back to the last newline; bytes cut."""
    if not path.exists():
        return 0
    with os.fdopen(open_run_file(path, os.O_RDWR), "rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        cut, end = 0, size
        while end > 0:
            start = max(0, end - 65536)
            handle.seek(start)
            found = handle.read(end - start).rfind(b"\n")
            if found != -1:
                cut = start + found + 1
                break
            end = start
        handle.truncate(cut)
    log.warning("%s: cut a torn last line of %d bytes", path, size - cut)
    return size - cut


@dataclass
class EvalConfig:
    """Everything that determines a run's results (hashed to guard resumption)."""

    model: str
    benchmark: str = "v1"
    split: str = "test"
    benchmark_sha256: str = ""
    prompt_mode: str = "mdp"
    prompt_version: str = PROMPT_VERSION
    base_url: str | None = None
    temperature: float = 0.0
    max_tokens: int = 2048
    extra_body: dict[str, Any] = field(default_factory=dict)
    response_format: str = "free"  # --response-format (evaluation/prompting/answer_schema.py)
    limit: int | None = None
    ids_sha256: str | None = None  # the id list a run was restricted to (``--ids``; sorted ids, hashed)
    track: str = "single"
    horizon: int = 0
    episodes: int = 0
    rollout_version: int | None = None  # how rollout-track episodes are drawn (2: the first call changes state)
    logged_calls_sha256: str | None = None  # the pool of logged calls the prompts show (--logged-calls), hashed
    logged_k: int = 0  # how many logged calls of the same tool a prompt shows at most (--logged-k)

    def digest(self) -> str:
        """Hash of the settings that change results (not concurrency, timeouts or retries). Fields added
        later count only when they differ from their default, so run directories written before them keep their
        hash (and read as holding that default)."""
        data = {k: v for k, v in asdict(self).items() if not (k in ADDED_LATER and v == ADDED_LATER[k])}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


#: Fields added to ``EvalConfig`` after run directories were written, with the value a directory without them holds.
ADDED_LATER: dict[str, Any] = {"rollout_version": None, "ids_sha256": None, "response_format": "free",
                               "logged_calls_sha256": None, "logged_k": 0}
#: Logged calls of a record's tool to show in its prompt (``evaluation.prompting.logged_calls``), as
#: ``(call text, answer text)`` pairs.
ExamplesFor = Callable[[dict[str, Any]], Sequence[tuple[str, str]]]
ROLLOUT_VERSION = 2


@dataclass
class RetryPolicy:
    """Per-request timeout and exponential backoff with jitter for transient failures."""

    timeout: float = 120.0
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 20.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        return min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


def iter_result_lines(path: Path, root: Path | None = None) -> Iterator[Any]:
    """Every readable JSON line of a ``results.jsonl`` in order; a torn last line (killed mid-write) is
    skipped; a missing file yields nothing. Read bounded and never through a link (``envsim.safe_files.iter_lines``:
    a regular file below ``root``, lines up to ``MAX_LINE_BYTES``): a ``results.jsonl`` linked to ``/dev/zero`` is
    refused (``RunFileRefused``) instead of read until memory runs out."""
    from envsim.safe_files import iter_lines

    for line in iter_lines(path, root):
        try:
            yield json.loads(line)
        except (ValueError, RecursionError):
            continue


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """Latest result line per sample id; a torn last line (killed mid-write) is ignored."""
    return {row["id"]: row for row in iter_result_lines(path)
            if isinstance(row, dict) and isinstance(row.get("id"), str)}


def prepare_run_dir(run_dir: Path, config: EvalConfig) -> None:
    """Create the run directory or check that it holds the same configuration (under the run lock)."""
    with lock_run_dir(run_dir):
        _prepare_locked(run_dir, config)


def _prepare_locked(run_dir: Path, config: EvalConfig) -> None:
    from envsim.safe_files import RunFileRefused, read_json, write_json

    config_path = run_dir / "config.json"
    payload = {**asdict(config), "config_hash": config.digest()}
    if config.model == "executor":  # what its sandbox may load before confinement (not part of the hash)
        from envsim.envs.sandbox import allowed_packages

        payload["sandbox_packages"] = list(allowed_packages())
    if config_path.exists() or config_path.is_symlink():
        try:
            existing = read_json(config_path)
        except ValueError:
            existing = {}
        except RunFileRefused as exc:  # a link or a FIFO planted at config.json: never read, never written through
            raise RunConfigMismatch(f"{exc}; use another --run-dir or --overwrite") from None
        existing = existing if isinstance(existing, dict) else {}
        if existing.get("config_hash") != payload["config_hash"]:
            changed = sorted(k for k in payload
                             if existing.get(k, ADDED_LATER.get(k)) != payload[k] and k != "config_hash")
            raise RunConfigMismatch(
                f"{run_dir} holds a run with other settings ({', '.join(changed) or 'unknown'}); "
                "use another --run-dir or --overwrite")
        return
    write_json(config_path, payload)  # atomic, never through a link: a reader sees the whole file or none


def _domain_of(env_id: str) -> str:
    try:
        from envsim.envs.registry import domain_of, get_env

        if "/" in env_id and domain_of(env_id) is None:  # a namespaced id (tau/retail): its adapter's class says
            return get_env(env_id).env_domain()
        return domain_of(env_id) or "unknown"
    except Exception:  # noqa: BLE001 - a broken plugin must not stop an evaluation
        return "unknown"


async def _evaluate_one(record: dict[str, Any], provider: Provider, config: EvalConfig, policy: RetryPolicy,
                        class_sources: dict[str, str], *, tokenizer: Any = None, domain: str | None = None,
                        examples: ExamplesFor | None = None) -> dict[str, Any]:
    base = {"id": record["id"], "env": record["env"], "tool": record.get("tool"),
            "domain": domain or _domain_of(record["env"]),
            "stratum": record["stratum"], "delta_size": record["delta_size"], "arg_count": record["arg_count"]}
    try:
        if skips_prompt(provider, record, config.prompt_mode):
            messages = None
        elif builds_prompt_off_loop(record, config.prompt_mode):  # a view's analysis or a stored state's text:
            # seconds at worst, in a worker thread, so the event loop (the other samples' requests) goes on
            messages = await asyncio.get_running_loop().run_in_executor(
                _prompt_pool(), _build_prompt, record, config, class_sources, examples)
        else:
            messages = _build_prompt(record, config, class_sources, examples)
    except RecursionError as exc:  # the record nests past what EnvSim's own code handles: the record is at fault,
        # and a re-run would fail the same way (a bad record, not an infrastructure failure to retry)
        return {**base, "status": BAD_RECORD, "reason": f"prompt: {type(exc).__name__}: {str(exc)[:200]}",
                "attempts": 0}
    except Exception as exc:  # noqa: BLE001 - a record the prompt builder cannot render fails alone
        return {**base, "status": "infra_failure", "reason": f"prompt: {type(exc).__name__}: {str(exc)[:200]}",
                "attempts": 0}
    attempts = 0
    while True:
        attempts += 1
        started = now()
        try:
            generation = await asyncio.wait_for(provider.generate(messages, record), timeout=policy.timeout)
            break
        except Exception as exc:  # noqa: BLE001 - classified below, never raised out of the run
            transient = isinstance(exc, asyncio.TimeoutError) or provider.should_retry(exc)
            if transient and attempts <= policy.max_retries:
                await asyncio.sleep(policy.delay(attempts))
                continue
            return {**base, "status": "infra_failure", "reason": failure_reason(exc, policy.timeout),
                    "attempts": attempts}
    latency = now() - started
    timing = {"prompt_tokens": generation.prompt_tokens, "completion_tokens": generation.completion_tokens,
              "latency_s": round(latency, 4), "attempts": attempts}
    try:
        if scores_inline(record, generation, messages, tokenizer):
            scored = _score_generation(record, generation, messages, tokenizer)
        else:  # a costly answer is parsed and scored in a worker thread: it never holds the event loop (other
            # samples' requests and their latency_s go on); parse_answer bounds its own work (MAX_DECODE_CHARS)
            scored = await asyncio.get_running_loop().run_in_executor(
                _scoring_pool(), _score_generation, record, generation, messages, tokenizer)
        return {**base, "status": "scored", **scored, **timing}
    except Exception as exc:  # noqa: BLE001 - one sample's bug must not end the run or touch the others
        log.exception("internal error scoring sample %s", record.get("id"))
        return {**base, "status": "scored", **_failed(f"internal error in scoring: {type(exc).__name__}: "
                                                      f"{str(exc)[:200]}"), "answer_format": "", "answer": "", **timing}


#: Prompt plus answer characters up to which a sample is scored on the event loop itself (about 2 ms of counting
#: tokens and parsing at most). Handing each sample to the scoring thread and back, and the two threads taking
#: turns at the GIL, cost ~0.5 ms of CPU per v1 sample, a fifth of the client's CPU (benchmarks/eval_overhead.py).
INLINE_SCORING_CHARS = 32_000


def scores_inline(record: dict[str, Any], generation: Any, messages: list[dict[str, str]] | None,
                  tokenizer: Any) -> bool:
    """Whether a sample is cheap enough to score on the event loop: a text answer and a prompt of at most
    ``INLINE_SCORING_CHARS`` together, a state held in the record (not a stored state: large-state tracks), and a
    token counter already loaded. Anything else goes to the scoring thread, so a costly answer (a parse bomb) or a
    large state never delays the other samples' requests."""
    text = generation.text
    if not isinstance(text, str) or "state_ref" in record:
        return False
    if isinstance(tokenizer, Future) and not tokenizer.done():
        return False
    size = len(text)
    for message in messages or ():
        content = message.get("content")
        size += len(content) if isinstance(content, str) else INLINE_SCORING_CHARS
    return size <= INLINE_SCORING_CHARS


_SCORING_POOL: list[ThreadPoolExecutor] = []


def _scoring_pool() -> ThreadPoolExecutor:
    """The one thread that parses, scores and counts tokens for costly samples (process-wide, made on first use).
    One thread, not the event loop's default pool: the work holds the GIL but for the tokenizer, so more threads
    would only take turns (and cost a thread switch per turn) while the event loop keeps the other core."""
    if not _SCORING_POOL:
        _SCORING_POOL.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="envsim-score"))
    return _SCORING_POOL[0]


def _build_prompt(record: dict[str, Any], config: EvalConfig, class_sources: dict[str, str],
                  examples: ExamplesFor | None = None) -> list[dict[str, str]]:
    return build_messages(record, config.prompt_mode, class_source=class_sources.get(record["env"]),
                          version=config.prompt_version, examples=examples(record) if examples else ())


def builds_prompt_off_loop(record: dict[str, Any], mode: str) -> bool:
    """Whether a sample's prompt is built in a worker thread (``_prompt_pool``), never on the event loop: a view
    (``mdp-view``: an analysis bounded at ``envsim.envs.views.values.MAX_WORK``, seconds at worst) or a state stored
    by reference (megabytes of JSON to write). Other prompts (v1: ~0.1 ms) are built in place."""
    return mode == "mdp-view" or "state_ref" in record


_PROMPT_POOL: list[ThreadPoolExecutor] = []


def _prompt_pool() -> ThreadPoolExecutor:
    """The threads that build costly prompts (process-wide, made on first use). Two, so that one slow analysis
    does not hold every other view behind it."""
    if not _PROMPT_POOL:
        _PROMPT_POOL.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="envsim-prompt"))
    return _PROMPT_POOL[0]


def skips_prompt(provider: Provider, record: dict[str, Any], mode: str) -> bool:
    """Whether the prompt of ``record`` is neither built nor counted: a built-in baseline (null, oracle) never
    reads it, and a whole-state prompt of a state stored by reference (τ-bench: 0.45-1.2 M tokens, ~0.3 s to
    build and count) would cost far more than the call. Views (``mdp-view``) are still built and counted."""
    return getattr(provider, "name", None) in ("null", "oracle") and "state_ref" in record and mode != "mdp-view"


def _failed(reason: str) -> dict[str, Any]:
    """The score fields of an answer that failed before it could be compared."""
    return SampleScore(False, False, False, False, 0.0, 0.0, 0.0, reason=reason).to_json()


def _score_generation(record: dict[str, Any], generation: Any, messages: list[dict[str, str]] | None,
                      tokenizer: Any) -> dict[str, Any]:
    """Score fields, stored answer and counted tokens of one generation (may raise: the caller isolates)."""
    text = generation.text
    problem = getattr(generation, "problem", None)
    if not isinstance(text, str):
        problem, text = problem or f"answer is not text (got {type(text).__name__})", ""
    if problem:
        return {**_failed(problem), "answer_format": "", "answer": text[:MAX_STORED_ANSWER]}
    answer = parse_answer(text)
    score = score_prediction(record, answer)
    if isinstance(tokenizer, Future):  # loaded while the run started (single_run._tokenizer_soon)
        tokenizer = tokenizer.result()
    return {**score.to_json(), "answer_format": answer.format, "answer": text[:MAX_STORED_ANSWER],
            **(eval_token_fields(messages, text, tokenizer) if messages is not None else {})}


def _dump_row(row: dict[str, Any]) -> str:
    """One results.jsonl line; a row that cannot be written as JSON is replaced by its failure."""
    try:
        return dumps_line(row, allow_nan=False)  # lone surrogates (answers, ids) escaped: the line stays UTF-8
    except (TypeError, ValueError, RecursionError) as exc:
        keep = {k: row.get(k) for k in ("id", "env", "domain", "stratum", "delta_size", "arg_count", "attempts")}
        failed = {**keep, "status": "scored", **_failed(f"internal error in recording: {type(exc).__name__}: "
                                                         f"{str(exc)[:200]}"), "answer_format": "", "answer": ""}
        return dumps_line(failed, default=str)


async def run_samples(records: Iterable[dict[str, Any]], provider: Provider, config: EvalConfig, run_dir: Path,
                      *, concurrency: int = 8, policy: RetryPolicy = RetryPolicy(),
                      class_sources: dict[str, str] | None = None,
                      on_result: Callable[[dict[str, Any]], None] | None = None,
                      tokenizer: Any = None, keep_rows: bool = True,
                      examples: ExamplesFor | None = None) -> dict[str, dict[str, Any]]:
    """Evaluate the records not yet scored in ``run_dir``; append each result as soon as it is known.
    ``examples``: the logged calls each prompt lists (``--logged-calls``; none by default).

    ``records`` is read lazily, one record per free worker (``concurrency`` workers), so a stream of records
    is held only while its samples are in flight. Returns the latest row per sample id, earlier runs' rows
    included; with ``keep_rows=False`` nothing is kept (``{}``: memory stays flat in the sample count).
    Holds the run directory's lock; the provider is closed after every worker has finished."""
    with lock_run_dir(run_dir):
        return await _run_locked(records, provider, config, run_dir, concurrency=concurrency, policy=policy,
                                 class_sources=class_sources, on_result=on_result, tokenizer=tokenizer,
                                 keep_rows=keep_rows, examples=examples)


def scored_ids(path: Path) -> set[str]:
    """Ids whose latest row in a ``results.jsonl`` is done (what a resumed run skips): scored, or a bad record
    (``BAD_RECORD``: the record itself is at fault, so trying it again gives the same)."""
    latest: dict[str, bool] = {}
    for row in iter_result_lines(path):
        if isinstance(row, dict) and isinstance(row.get("id"), str):
            latest[row["id"]] = row.get("status") in ("scored", BAD_RECORD)
    return {key for key, scored in latest.items() if scored}


async def _run_locked(records: Iterable[dict[str, Any]], provider: Provider, config: EvalConfig, run_dir: Path, *,
                      concurrency: int, policy: RetryPolicy, class_sources: dict[str, str] | None,
                      on_result: Callable[[dict[str, Any]], None] | None,
                      tokenizer: Any, keep_rows: bool = True,
                      examples: ExamplesFor | None = None) -> dict[str, dict[str, Any]]:
    results_path = run_dir / "results.jsonl"
    repair_results(results_path)
    done = read_results(results_path) if keep_rows else {}
    skip = scored_ids(results_path)
    pending = iter([r for r in records if r["id"] not in skip] if keep_rows and isinstance(records, list)
                   else (r for r in records if r["id"] not in skip))
    domains: dict[str, str] = {}
    errors: list[BaseException] = []
    with open_results_for_append(results_path) as sink:

        async def evaluate(record: dict[str, Any]) -> None:
            env = record["env"]
            if env not in domains:
                domains[env] = _domain_of(env)
            row = await _evaluate_one(record, provider, config, policy, class_sources or {}, tokenizer=tokenizer,
                                      domain=domains[env], examples=examples)
            sink.write(_dump_row(row) + "\n")
            sink.flush()
            if keep_rows:
                done[row["id"]] = row
            if on_result is not None:
                try:
                    on_result(row)
                except Exception:  # noqa: BLE001 - a progress display must not end the run
                    log.exception("on_result callback failed for sample %s", row.get("id"))

        feed_errors: list[BaseException] = []

        async def worker() -> None:
            while not feed_errors:
                try:
                    record = next(pending, None)   # read when a worker is free: never more than in flight
                except Exception as exc:  # noqa: BLE001 - e.g. a bad benchmark line: no new sample starts
                    feed_errors.append(exc)
                    return
                if record is None:
                    return
                try:
                    await evaluate(record)
                except Exception as exc:  # noqa: BLE001 - e.g. the disk is full: the other samples go on
                    errors.append(exc)

        try:
            await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
            if errors or feed_errors:  # raised only now that no request is in flight
                raise (errors or feed_errors)[0]
        finally:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
    return done
