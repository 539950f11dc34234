"""EnvSim environments through OpenEnv: real vs simulated twin by one argument, GRPO steps on CPU, server mode."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openenv.core", reason="needs the [openenv] extra")

from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.mcp_types import CallToolAction  # noqa: E402

from envsim.envs.registry import get_env  # noqa: E402
from envsim.evaluation.baselines.fake_server import FakeOpenAIServer  # noqa: E402
from envsim.evaluation.endpoints.providers import NullProvider, OracleProvider  # noqa: E402
from envsim.simulation.openenv_env import (EnvSimObservation, EnvSimState, create_server_app, make_env,  # noqa: E402
                                         observation_text)
from envsim.simulation.rl_env import Task  # noqa: E402
from envsim.simulation.tabular_grpo import run_plan, train_tabular_grpo  # noqa: E402

ENV_ID = "online_store-v1"
START = get_env(ENV_ID).sample_state(0)
PRODUCT, OTHER = list(START["products"])[:2]
TASK = Task(f"Restock {PRODUCT} by 5 units.",
            checks=[lambda s: s["products"][PRODUCT]["stock"] == START["products"][PRODUCT]["stock"] + 5])
PLANS = [
    [{"name": "restock_product", "arguments": {"product_id": PRODUCT, "quantity": 5}}],           # right
    [{"name": "restock_product", "arguments": {"product_id": PRODUCT, "quantity": 1}}],
    [{"name": "restock_product", "arguments": {"product_id": OTHER, "quantity": 5}}],
    [{"name": "list_categories", "arguments": {}}],
    [],
]


def test_real_and_simulated_are_the_same_openenv_interface():
    real, twin = make_env(ENV_ID, task=TASK), make_env(ENV_ID, simulated=OracleProvider(), task=TASK)
    for env in (real, twin):
        assert isinstance(env, Environment)
        first = env.reset(seed=0)
        assert isinstance(first, EnvSimObservation) and not first.done
        assert "restock_product" in observation_text(first) and first.tools[0]["type"] == "function"
        obs = env.step(CallToolAction(tool_name="restock_product", arguments={"product_id": PRODUCT, "quantity": 5}))
        assert obs.result["success"] and obs.reward == 0.0 and not obs.done
        assert isinstance(env.state, EnvSimState) and env.state.step_count == 1
        assert env.state.env_state["products"][PRODUCT]["stock"] == START["products"][PRODUCT]["stock"] + 5
        bad = env.step({"tool_name": "no_such_tool", "arguments": {}})
        assert bad.result["success"] is False
        end = env.step(CallToolAction(tool_name="finish"))
        assert end.done and end.reward == 1.0
        assert env.step(CallToolAction(tool_name="list_categories")).result["success"] is False   # episode over
        env.close()
    assert (real.state.simulated, twin.state.simulated) == (False, True)


def test_simulated_twin_is_really_the_simulator():
    """The null simulator predicts no change: the twin's state stays put, so the task fails."""
    twin = make_env(ENV_ID, simulated=NullProvider(), task=TASK, shadow=True)
    assert run_plan(twin, PLANS[0], seed=0) == 0.0
    assert twin.dynamics.first_divergence == 0
    assert run_plan(make_env(ENV_ID, task=TASK), PLANS[0], seed=0) == 1.0


def test_grpo_steps_raise_the_reward_against_real_and_twin():
    """A few GRPO steps of a tabular policy against the real environment, then against its simulated twin
    (served by a local OpenAI-compatible server); the runs differ only in the ``simulated`` argument."""
    def train(**kwargs):
        return train_tabular_grpo(lambda: make_env(ENV_ID, task=TASK, max_steps=3, **kwargs), PLANS,
                                  steps=4, group_size=6, learning_rate=2.0, seed=1)

    real_probs, real_log = train()
    with FakeOpenAIServer([]) as server:
        twin_probs, twin_log = train(simulated="oracle", base_url=server.base_url)
        assert sum(server.calls.values()) > 0                      # the twin's steps went to the simulator
    for probs, log in ((real_probs, real_log), (twin_probs, twin_log)):
        assert len(log.mean_reward) == 4
        assert probs.argmax() == 0 and probs[0] > 1 / len(PLANS) + 0.2, log
        assert log.mean_reward[-1] > log.mean_reward[0], log
    # a perfect simulator gives the very same rewards, so the same seeded updates
    assert twin_log.mean_reward == real_log.mean_reward
    assert twin_probs == pytest.approx(real_probs)


def test_openenv_server_mode_websocket_session():
    """The same factory behind OpenEnv's FastAPI app: a WebSocket session keeps one episode's state."""
    from fastapi.testclient import TestClient

    client = TestClient(create_server_app(lambda: make_env(ENV_ID, task=TASK)))
    schema = client.get("/schema").json()
    assert schema["action"]["title"] == "CallToolAction" and "result" in json.dumps(schema["observation"])
    with client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"seed": 0}})
        reset = ws.receive_json()
        assert reset["type"] == "observation", reset
        assert reset["data"]["observation"]["instruction"].startswith("Restock")
        for call in (PLANS[0][0], {"name": "finish"}):
            ws.send_json({"type": "step", "data": {"tool_name": call["name"], "arguments": call.get("arguments", {})}})
            step = ws.receive_json()
            assert step["type"] == "observation", step
        assert step["data"]["done"] is True and step["data"]["reward"] == 1.0
        ws.send_json({"type": "state"})
        state = ws.receive_json()
        assert state["data"]["env_state"]["products"][PRODUCT]["stock"] == START["products"][PRODUCT]["stock"] + 5


@pytest.mark.parametrize("simulated", [None, "oracle"], ids=["real", "simulated-twin"])
def test_trl_environment_factory_contract(simulated):
    """TRL's environment_factory contract: zero-arg class, reset(**columns) -> text, tools = public methods."""
    import inspect

    from envsim.simulation.openenv_env import trl_environment_factory

    env_class = get_env(ENV_ID)
    factory = trl_environment_factory(ENV_ID, simulated, task=TASK)
    env = factory()
    assert env.reset(seed=0, prompt="ignored column").startswith("Restock")
    public = {n for n, v in vars(factory).items() if callable(v) and not n.startswith("_")} - {"reset", "get_reward"}
    assert public == set(env_class.tool_specs())
    for name in public:
        ours = inspect.signature(getattr(factory, name))
        theirs = inspect.signature(getattr(env_class, name))
        assert list(ours.parameters) == list(theirs.parameters)
        assert "Args:" in getattr(factory, name).__doc__ or not list(theirs.parameters)[1:]
    assert json.loads(env.restock_product(product_id=PRODUCT, quantity=5))["success"] is True
    assert env.reward == env.get_reward() == 1.0 and env.env.state.simulated is bool(simulated)
    assert json.loads(env.restock_product(product_id=PRODUCT, quantity=5))["success"] is True
    assert env.reward == 0.0                                    # 10 more units: the task's check fails again
    env.reset(seed=0)
    assert env.reward == 0.0 and env.env.state.step_count == 0


def test_trl_environment_factory_tool_subset():
    from envsim.simulation.openenv_env import trl_environment_factory

    factory = trl_environment_factory(ENV_ID, tools=["restock_product"], task=TASK)
    assert {n for n in vars(factory) if not n.startswith("_")} == {"reset", "get_reward", "restock_product"}
    with pytest.raises(ValueError, match="has no tool teleport"):
        trl_environment_factory(ENV_ID, tools=["teleport"])


def test_trl_tool_schemas_equal_ours():
    """transformers' ``get_json_schema`` (what TRL uses) on the factory's tools gives our tool schemas (less defaults)."""
    utils = pytest.importorskip("transformers.utils", reason="needs transformers (TRL environment)")
    from envsim.simulation.openenv_env import trl_environment_factory

    factory = trl_environment_factory(ENV_ID)
    for schema in get_env(ENV_ID).tool_schemas():
        name = schema["function"]["name"]
        derived = utils.get_json_schema(getattr(factory(), name))
        assert derived["function"]["name"] == name
        ours = json.loads(json.dumps(schema["function"]["parameters"]))
        for prop in ours.get("properties", {}).values():
            prop.pop("default", None)                       # transformers does not emit defaults ("required" says it)
        assert derived["function"]["parameters"] == ours, name
