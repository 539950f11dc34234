"""Simulated environments for Simia-style pipelines: an LLM stands in for the tool environment.

The state is tracked explicitly (constraint-driven MDP). Every step builds the evaluation prompt
for ``(state, action, code(action))``, asks the simulator, parses its answer and applies the
predicted patch to the tracked state. Invalid output (unparseable, or a patch that does not
apply) is retried up to ``max_attempts`` times; then the documented fallback policy applies:

    the observation is ``{"success": false, "error": "simulator error: <reason>"}`` and the
    tracked state is left unchanged; the step is counted in ``stats.fallback_steps``.

In shadow mode a runnable implementation is stepped alongside from the same initial state with
the same actions, and every step records FM/CM against it and the first step where the tracked
state diverges from the true one. A fallback step is never a match: its FM and CM are False and it
counts as a divergence (the simulator gave no answer), even where the unchanged tracked state happens
to equal the true one. Each shadowed step also carries the true patch, FM-json / CM-numeric and its failure
classes (``evaluation.scoring.failure_classes.step_verdicts``).
"""

from __future__ import annotations

import asyncio
import functools
import copy
import time
from dataclasses import dataclass
from typing import Any, Callable

from envsim.delta import compute_delta, same_json
from envsim.construction.errors import ToolCodeMissing
from envsim.construction.labelling import record_code
from envsim.construction.traced_labelling import label_traced
from envsim.envs.adapters.tau import is_tau
from envsim.envs.base import Environment
from envsim.envs.sandbox import execute
from envsim.envs.shown import class_source
from envsim.evaluation.scoring.failure_classes import step_verdicts
from envsim.evaluation.scoring.parsing import parse_answer
from envsim.evaluation.prompting.prompts import LATEST_PROMPT_VERSION, build_messages
from envsim.evaluation.endpoints.providers import Provider
from envsim.evaluation.scoring.scoring import apply_prediction
from envsim.evaluation.scoring.shared_states import same_json_shared
from envsim.records import Action

FALLBACK_PREFIX = "simulator error: "


@dataclass
class EnvSpec:
    """What a simulator needs to know about an environment: schemas, tool code, initial states.

    ``runnable`` is the real implementation when there is one (enables shadow mode and oracle).
    """

    env_id: str
    tools: list[dict[str, Any]]
    code: dict[str, str]
    initial_state: Callable[[int], dict[str, Any]]
    class_source: str = ""
    runnable: type[Environment] | None = None

    @classmethod
    def from_class(cls, env_class: type[Environment]) -> "EnvSpec":
        """Spec of a runnable environment (built-in or adapter)."""
        code = {}
        for name in env_class.tool_specs():
            try:
                code[name] = record_code(env_class, name)
            except (KeyError, LookupError, OSError, TypeError, ToolCodeMissing):
                code[name] = ""
        try:
            source = class_source(env_class)
        except (OSError, TypeError):
            source = ""
        return cls(env_class.env_id(), env_class.tool_schemas(), code, env_class.sample_state, source, env_class)

    @classmethod
    def from_code(cls, env_id: str, tools: list[dict[str, Any]], code: dict[str, str],
                  initial_states: list[dict[str, Any]]) -> "EnvSpec":
        """Spec with schemas and code only: no runnable implementation (no shadow mode)."""
        states = [copy.deepcopy(s) for s in initial_states]
        return cls(env_id, tools, code, lambda seed: copy.deepcopy(states[seed % len(states)]))


@dataclass
class StepRecord:
    """One simulated step, with shadow comparison when available."""

    index: int
    action: dict[str, Any]
    observation: Any
    patch: list[dict[str, Any]]
    attempts: int
    fallback: bool
    reason: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    true_observation: Any = None
    true_delta_size: int | None = None
    fm: bool | None = None
    cm: bool | None = None
    diverged: bool | None = None
    true_patch: list[dict[str, Any]] | None = None
    fm_json: bool | None = None     # tolerant scores and failure classes (evaluation/scoring/failure_classes.py)
    cm_numeric: bool | None = None
    failure: dict[str, str | None] | None = None


@dataclass
class SimulationStats:
    """Counters over the life of a simulated environment."""

    steps: int = 0
    fallback_steps: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def cost(self, price_in_per_mtok: float, price_out_per_mtok: float) -> float:
        """Cost at per-million-token prices."""
        return self.prompt_tokens / 1e6 * price_in_per_mtok + self.completion_tokens / 1e6 * price_out_per_mtok


class SimulatedEnvironment:
    """Gym-style ``reset(seed)`` / ``step(action)`` environment whose dynamics come from a simulator."""

    def __init__(self, spec: EnvSpec, simulator: Provider, *, prompt_mode: str = "mdp", max_attempts: int = 3,
                 shadow: bool = False, request_timeout: float = 120.0,
                 prompt_version: str = LATEST_PROMPT_VERSION) -> None:
        if shadow and spec.runnable is None:
            raise ValueError(f"shadow mode needs a runnable implementation of {spec.env_id}")
        self.spec = spec
        self.simulator = simulator
        self.prompt_mode = prompt_mode
        self.prompt_version = prompt_version
        self.max_attempts = max(1, max_attempts)
        self.shadow = shadow
        self.request_timeout = request_timeout
        self.stats = SimulationStats()
        self.state: dict[str, Any] = {}
        self.true_state: dict[str, Any] | None = None
        self.history: list[StepRecord] = []
        self.first_divergence: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._true_digest: Any = None  # the true state's StateDigest (traced labelling), kept across steps

    # gym-style API --------------------------------------------------------------------------------
    def reset(self, seed: int = 0, state: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start an episode from ``state`` or the spec's initial state for ``seed``; returns (a copy of) the state."""
        self.start(seed, state)
        return copy.deepcopy(self.state)

    def start(self, seed: int = 0, state: dict[str, Any] | None = None) -> None:
        """``reset`` without handing a copy of the state back (a megabyte state costs a second to deep-copy).

        The tracked and the true state start as one object: neither is ever changed in place (predicted
        patches are applied copy-on-write, the real call runs on a copy or on copy-on-read records), so
        they share what no call has changed and compare at the cost of what calls changed."""
        self.state = copy.deepcopy(state) if state is not None else self.spec.initial_state(seed)
        self.true_state = self.state if self.shadow else None
        self._true_digest = None
        self.history = []
        self.first_divergence = None

    def step(self, action: Action | dict[str, Any]) -> Any:
        """Simulate one call; returns the observation (the tracked state is updated)."""
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(self.astep(action))

    def close(self) -> None:
        """Release the event loop used by ``step``."""
        if self._loop is not None and not self._loop.is_closed():
            close = getattr(self.simulator, "aclose", None)
            if close is not None:
                self._loop.run_until_complete(close())
            self._loop.close()

    async def astep(self, action: Action | dict[str, Any]) -> Any:
        """Async ``step``."""
        action = Action.from_json(action)
        record = {"env": self.spec.env_id, "state": self.state, "action": action.to_json(),
                  "code": self.spec.code.get(action.name, f"# no tool named {action.name!r}\n"),
                  "tools": self.spec.tools}
        build = functools.partial(build_messages, record, self.prompt_mode, class_source=self.spec.class_source,
                                  history=[{"action": h.action, "observation": h.observation} for h in self.history],
                                  version=self.prompt_version)
        if self.prompt_mode == "mdp-view":  # a view's analysis (seconds at worst): in a worker thread, never on the
            # event loop that other episodes' requests share (evaluation.running.runner builds one-step prompts the same way)
            from envsim.evaluation.running.runner import _prompt_pool

            messages = await asyncio.get_running_loop().run_in_executor(_prompt_pool(), build)
        else:
            messages = build()
        reason: str | None = None
        tokens_in = tokens_out = 0
        started = time.monotonic()
        observation: Any = None
        patch: list[dict[str, Any]] = []
        next_state: dict[str, Any] | None = None
        attempts = 0
        unappliable = False  # the last invalid attempt parsed but its patch did not apply
        for attempts in range(1, self.max_attempts + 1):
            try:
                generation = await asyncio.wait_for(self.simulator.generate(messages, record), self.request_timeout)
            except Exception as exc:  # noqa: BLE001 - a failed request is an invalid attempt
                reason = f"request failed: {type(exc).__name__}: {str(exc)[:200]}"
                continue
            tokens_in += generation.prompt_tokens or 0
            tokens_out += generation.completion_tokens or 0
            answer = parse_answer(generation.text)
            if not answer.ok:
                reason, unappliable = answer.error, False
                continue
            try:
                if answer.patch is not None:
                    next_state = apply_prediction(self.state, answer.patch)
                    patch = answer.patch
                else:
                    next_state = answer.next_state
                    patch = compute_delta(self.state, next_state).patch
            except ValueError as exc:
                reason, unappliable = str(exc), True
                continue
            observation = answer.observation
            reason = None
            break
        fallback = next_state is None
        before = self.state
        if fallback:
            observation = {"success": False, "error": FALLBACK_PREFIX + (reason or "no answer")}
            patch = []
            self.stats.fallback_steps += 1
        else:
            self.state = next_state
        self.stats.retries += attempts - 1
        self.stats.steps += 1
        self.stats.prompt_tokens += tokens_in
        self.stats.completion_tokens += tokens_out
        elapsed = time.monotonic() - started
        self.stats.seconds += elapsed
        step = StepRecord(len(self.history), action.to_json(), observation, patch, attempts, fallback, reason,
                          tokens_in, tokens_out, round(elapsed, 4))
        if self.shadow:
            self._shadow(step, action, before, "patch_does_not_apply" if unappliable else "unparseable")
        self.history.append(step)
        return copy.deepcopy(observation)

    def _shadow(self, step: StepRecord, action: Action, before: dict[str, Any], fallback_class: str) -> None:
        assert self.spec.runnable is not None and self.true_state is not None
        true_before = self.true_state
        if is_tau(self.spec.runnable):  # large states: labelled on the records the call touches
            truth, self._true_digest = label_traced(self.spec.runnable, self.true_state, action,
                                                    check_determinism=False, digest=self._true_digest)
        else:
            truth = execute(self.spec.runnable, self.true_state, action)
        self.true_state = truth.next_state
        step.true_observation = truth.observation
        step.true_delta_size = truth.delta_size
        step.fm = not step.fallback and same_json(step.observation, truth.observation)
        step.cm = not step.fallback and same_json_shared(self.state, truth.next_state)
        step.diverged = not step.cm
        step.true_patch = truth.patch
        verdicts = step_verdicts(step.fm, step.cm, fallback_class if step.fallback else None,
                                 step.observation, truth.observation, before, self.state, true_before,
                                 truth.next_state, self.spec.env_id)
        step.fm_json, step.cm_numeric = verdicts.fm_json, verdicts.cm_numeric
        step.failure = verdicts.to_json()["failure"]
        if step.diverged and self.first_divergence is None:
            self.first_divergence = step.index
