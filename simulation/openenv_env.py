"""EnvSim environments as OpenEnv environments (the ``[openenv]`` extra), real or simulated by one argument.

``make_env("online_store-v1")`` steps the real implementation; ``make_env("online_store-v1",
simulated="my-sim", base_url=...)`` steps its simulated twin (``SimulatedEnvironment``: an LLM
predicts observation and patch, the tracked state is fed forward). Both are
``openenv.core.Environment`` objects with the same action, observation and state types, so an
agent-RL loop (or a TRL ``rollout_func`` talking to an OpenEnv server) cannot tell them apart:

* action: OpenEnv's own tool-call action ``CallToolAction(tool_name, arguments)``; the tool
  ``finish`` ends the episode;
* observation: ``EnvSimObservation`` - the tool's JSON result, ``done``, ``reward`` (the task's
  share of passing checks on the final state, given when the episode ends, as ``SimulatedToolEnv``);
  on ``reset`` it carries the instruction and the tool schemas;
* state: ``EnvSimState`` - the environment's JSON state (the tracked state when simulated).

``create_server_app`` wraps the same factory into OpenEnv's FastAPI app (HTTP + WebSocket) for
remote clients; nothing here needs Docker or a GPU.
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any, Callable, Sequence

try:
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.env_server.types import EnvironmentMetadata, Observation, State
    from pydantic import Field
except ImportError as exc:  # a core install: say which extra brings OpenEnv
    raise ImportError(f"envsim.simulation.openenv_env needs the [openenv] extra: pip install -e \".[openenv]\" "
                      f"({exc})", name=exc.name) from exc

from envsim.envs.base import Environment as EnvSimEnvironmentClass
from envsim.envs.sandbox import execute
from envsim.envs.registry import get_env
from envsim.evaluation.endpoints.providers import Provider, make_provider
from envsim.records import Action
from envsim.simulation.rl_env import Task
from envsim.simulation.simulated import EnvSpec, SimulatedEnvironment

FINISH = "finish"


class EnvSimObservation(Observation):
    """What the agent sees after ``reset`` or a tool call."""

    result: Any = Field(default=None, description="The tool's JSON result (None after reset)")
    tool_name: str = Field(default="", description="The tool that was called ('' after reset)")
    instruction: str = Field(default="", description="The task instruction (after reset)")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI-style tool schemas (after reset)")


class EnvSimState(State):
    """The episode's bookkeeping plus the environment's JSON state."""

    env_id: str = ""
    simulated: bool = False
    env_state: dict[str, Any] = Field(default_factory=dict)


class RealDynamics:
    """The ground truth: the runnable class executes each call (same interface as ``SimulatedEnvironment``)."""

    def __init__(self, env_class: type[EnvSimEnvironmentClass]) -> None:
        self.env_class = env_class
        self.spec = EnvSpec.from_class(env_class)
        self.state: dict[str, Any] = {}

    def reset(self, seed: int = 0) -> dict[str, Any]:
        """Start from the class's sampled state for ``seed``."""
        self.state = self.env_class.sample_state(seed)
        return copy.deepcopy(self.state)

    def step(self, action: Action) -> Any:
        """Execute the call; the state moves to the true next state."""
        transition = execute(self.env_class, self.state, action)
        self.state = transition.next_state
        return transition.observation

    def close(self) -> None:
        """Nothing to release."""


class EnvSimOpenEnv(Environment[CallToolAction, EnvSimObservation, EnvSimState]):
    """One EnvSim environment behind OpenEnv's ``reset`` / ``step`` / ``state`` API."""

    SUPPORTS_CONCURRENT_SESSIONS = True     # every instance owns its state; nothing is shared

    def __init__(self, dynamics: RealDynamics | SimulatedEnvironment, task: Task | None = None, *,
                 max_steps: int = 10, simulated: bool = False) -> None:
        super().__init__()
        self.dynamics = dynamics
        self.task = task or Task("Use the tools.")
        self.max_steps = max_steps
        self.simulated = simulated
        self._state = EnvSimState(env_id=dynamics.spec.env_id, simulated=simulated)
        self._done = False

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EnvSimObservation:
        """Start an episode from the initial state for ``seed`` (0 when not given)."""
        state = self.dynamics.reset(seed or 0)
        self._state = EnvSimState(episode_id=episode_id or uuid.uuid4().hex, step_count=0,
                                  env_id=self.dynamics.spec.env_id, simulated=self.simulated, env_state=state)
        self._done = False
        return EnvSimObservation(instruction=self.task.instruction, tools=self.dynamics.spec.tools,
                                 done=False, reward=None)

    def step(self, action: CallToolAction | dict[str, Any], timeout_s: float | None = None,
             **kwargs: Any) -> EnvSimObservation:
        """Apply one tool call (``finish`` ends the episode); the reward comes when the episode ends."""
        if isinstance(action, dict):
            action = CallToolAction(**action)
        if self._done:
            return EnvSimObservation(result={"success": False, "error": "episode is over; call reset"},
                                     tool_name=action.tool_name, done=True, reward=0.0)
        if action.tool_name == FINISH:
            self._done = True
            return EnvSimObservation(result={"success": True}, tool_name=FINISH, done=True,
                                     reward=self.task.reward(self.dynamics.state))
        result = self.dynamics.step(Action(action.tool_name, dict(action.arguments)))
        self._state.step_count += 1
        self._state.env_state = copy.deepcopy(self.dynamics.state)
        self._done = self._state.step_count >= self.max_steps
        reward = self.task.reward(self.dynamics.state) if self._done else 0.0
        return EnvSimObservation(result=result, tool_name=action.tool_name, done=self._done, reward=reward)

    @property
    def state(self) -> EnvSimState:
        """The episode id, step count and the environment's JSON state."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """Name and description shown by OpenEnv servers."""
        kind = "simulated twin" if self.simulated else "real implementation"
        return EnvironmentMetadata(name=self.dynamics.spec.env_id, version="1",
                                   description=f"EnvSim environment {self.dynamics.spec.env_id} ({kind})")

    def close(self) -> None:
        """Release the simulator's resources."""
        self.dynamics.close()


def make_env(env_id: str, simulated: str | Provider | None = None, *, base_url: str | None = None,
             task: Task | None = None, max_steps: int = 10, prompt_mode: str = "mdp",
             shadow: bool = False) -> EnvSimOpenEnv:
    """An OpenEnv environment for ``env_id``: real when ``simulated`` is None, else its simulated twin.

    ``simulated`` is a model name at ``base_url`` (any OpenAI-compatible endpoint), a baseline
    (``oracle``, ``null``) or a ``Provider``. ``shadow`` steps the real class alongside the twin
    and records FM/CM per step in ``env.dynamics.history``.
    """
    env_class = get_env(env_id)
    if simulated is None:
        return EnvSimOpenEnv(RealDynamics(env_class), task, max_steps=max_steps)
    provider = make_provider(simulated, base_url) if isinstance(simulated, str) else simulated
    dynamics = SimulatedEnvironment(EnvSpec.from_class(env_class), provider, prompt_mode=prompt_mode, shadow=shadow)
    return EnvSimOpenEnv(dynamics, task, max_steps=max_steps, simulated=True)


def create_server_app(factory: Callable[[], EnvSimOpenEnv], max_concurrent_envs: int = 8) -> Any:
    """OpenEnv's FastAPI app (``/reset``, ``/step``, ``/state``, ``/ws``) serving environments from ``factory``."""
    from openenv.core.env_server.http_server import create_fastapi_app

    return create_fastapi_app(factory, CallToolAction, EnvSimObservation, max_concurrent_envs=max_concurrent_envs)


def trl_environment_factory(env_id: str, simulated: str | Provider | None = None, *, base_url: str | None = None,
                            task: Task | None = None, max_steps: int = 10, prompt_mode: str = "mdp",
                            tools: Sequence[str] | None = None) -> type:
    """A zero-argument class for TRL's ``GRPOTrainer(environment_factory=...)`` over ``make_env(...)``.

    TRL's contract: ``reset(**dataset_columns)`` returns the first observation (the instruction);
    every public method is a tool whose schema TRL derives from its signature and Google-style
    docstring - here the environment's own tool methods, so the schemas are ours; the reward
    function reads ``env.reward`` (the task's share of passing checks on the current state); TRL
    versions that look for ``get_reward`` take it from there without a ``reward_funcs`` argument.
    ``simulated`` switches the real environment for its simulated twin, exactly as in ``make_env``.
    ``tools`` exposes only these tools to the policy (all by default; every schema goes into the prompt).
    """
    env_class = get_env(env_id)
    names = list(env_class.tool_specs())
    unknown = sorted(set(tools or ()) - set(names))
    if unknown:
        raise ValueError(f"{env_id} has no tool {', '.join(unknown)}; tools: {', '.join(names)}")

    def __init__(self: Any) -> None:
        self.env = make_env(env_id, simulated, base_url=base_url, task=task, max_steps=max_steps,
                            prompt_mode=prompt_mode)
        self.reward = 0.0
        self.done = False

    def reset(self: Any, **kwargs: Any) -> str:
        try:
            seed = int(kwargs.get("seed") or 0)          # a dataset column ``seed`` picks the initial state
        except (TypeError, ValueError):
            seed = 0
        first = self.env.reset(seed=seed)
        self.reward = 0.0
        self.done = False
        return first.instruction

    def get_reward(self: Any) -> float:
        return float(self.reward)

    namespace: dict[str, Any] = {"__init__": __init__, "reset": reset, "get_reward": get_reward, "__module__": __name__,
                                 "__doc__": f"{env_id} for TRL environment_factory ({'simulated' if simulated else 'real'})."}
    for name in names:
        if tools is None or name in tools:
            namespace[name] = _tool_method(env_class, name)
    return type(f"{env_class.__name__}TRLEnv", (), namespace)


def _tool_method(env_class: type[EnvSimEnvironmentClass], name: str) -> Callable[..., str]:
    import inspect
    import typing

    original = getattr(env_class, name)

    def method(self: Any, **arguments: Any) -> str:
        if self.done:
            raise ValueError("Episode is over.")
        observation = self.env.step(CallToolAction(tool_name=name, arguments=arguments))
        self.reward = self.env.task.reward(self.env.dynamics.state)
        self.done = bool(observation.done)
        return json.dumps(observation.result, ensure_ascii=False)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = inspect.getdoc(original)
    hints = {**typing.get_type_hints(original), "return": str}     # resolved types; the tool answers JSON text
    signature = inspect.signature(original)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()],
        return_annotation=str)
    method.__annotations__ = hints
    return method


def observation_text(observation: EnvSimObservation) -> str:
    """The observation as the text a language-model policy reads (instruction + tools, or the JSON result)."""
    if observation.tool_name:
        return json.dumps(observation.result, ensure_ascii=False, sort_keys=True)
    names = ", ".join(t.get("function", t).get("name", "?") for t in observation.tools)
    return (f"{observation.instruction}\nTools: {names}.\nAnswer with one tool call as JSON "
            f'{{"name": ..., "arguments": {{...}}}}, or {{"name": "{FINISH}"}} when done.')
