"""Rollout sources besides the explorer: replaying logged tool calls, and an LLM agent.

* ``replay_log``: label an existing log (JSONL of ``{"env", "state", "actions": [...]}``): the
  actions are executed in order, each on the state the previous one left.
* ``llm_rollout``: an agent model behind any OpenAI-compatible endpoint chooses tool calls (function
  calling) in the real environment; requests use the evaluator's timeout and exponential-backoff
  discipline (``RetryPolicy`` + the provider's ``should_retry``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Iterator

from envsim.construction.replay_log import LoggedEpisode, ReplayError, checked_lines, read_episode, read_line
from envsim.construction.rollout import rollout
from envsim.envs.base import Environment
from envsim.envs.sandbox import execute
from envsim.records import Action, Transition


class _Scripted:
    """A policy that returns logged actions one after another."""

    def __init__(self, actions: list[Any]) -> None:
        self.actions = [Action.from_json(a) for a in actions]
        self.index = 0

    def next_action(self, env_class: type[Environment], state: dict[str, Any]) -> Action:
        action = self.actions[self.index]
        self.index += 1
        return action


def check_log(path: Path) -> None:
    """Parse and check every line of a replay log (``replay_log.checked_lines``): ``ReplayError`` names a bad line."""
    checked_lines(path)


def read_log(path: Path) -> Iterator[LoggedEpisode]:
    """The episodes of a replay log, one line at a time (a line's state is held while its episode is labelled).
    Every line is checked first (``replay_log.checked_lines``), so a bad line stops the replay before any call
    runs (``ReplayError`` names it); each line is read again where it was checked (``replay_log.read_line``: a log
    changed meanwhile is refused) and a starting state the environment refuses is named at its line."""
    initial: dict[tuple[type, int], dict[str, Any]] = {}  # sample_state(seed) once per class and seed
    for line in checked_lines(path):
        yield read_episode(path, line.number, read_line(path, line), initial)


def episode_calls(episode: LoggedEpisode, starts: dict[Any, Any]) -> Iterator[Any]:
    """Label the logged calls of ``episode`` in order (``cow_labelling.LabelledCall``s): the user's own environments
    copy-on-write (``starts``: see ``cow_labelling.start_labeller``), the others by the executor (``record_id``
    left empty)."""
    from envsim.construction.cow_labelling import LabelledCall, label_calls, labels_traced

    env_class = episode.env_class
    if labels_traced(env_class):
        yield from label_calls(env_class, episode.state, episode.actions, starts)
        return
    policy = _Scripted([a.to_json() for a in episode.actions])
    for transition in rollout(env_class, episode.state, policy, len(policy.actions)):
        yield LabelledCall(transition, "", False)


def replay_calls(path: Path) -> Iterator[tuple[type[Environment], Any]]:
    """Label every logged call of ``path`` in order, each on the state the previous one of its episode left;
    yields ``(environment class, cow_labelling.LabelledCall)`` (``episode_calls``)."""
    starts: dict[Any, Any] = {}  # tasks from one starting state share its labeller (cow_labelling.start_labeller)
    for episode in read_log(path):
        for call in episode_calls(episode, starts):
            yield episode.env_class, call


def replay_log(path: Path) -> Iterator[tuple[type[Environment], Transition]]:
    """Execute every logged episode of ``path``; yields ``(environment class, transition)`` pairs."""
    for env_class, call in replay_calls(path):
        yield env_class, call.transition


AGENT_PROMPT = ("You are a user's assistant operating the tools of a {domain} system. Explore it and carry out "
                "realistic requests a user of this system would make, one tool call at a time.")


async def llm_rollout(env_class: type[Environment], state: dict[str, Any], model: str, base_url: str | None,
                      steps: int, *, timeout: float = 120.0, max_retries: int = 4,
                      temperature: float = 0.8) -> list[Transition]:
    """Let an LLM agent act for up to ``steps`` calls in the real environment; returns the transitions."""
    import openai

    from envsim.evaluation.endpoints.providers import OpenAICompatibleProvider
    from envsim.evaluation.running.runner import RetryPolicy

    provider = OpenAICompatibleProvider(model, base_url=base_url, temperature=temperature, timeout=timeout)
    policy = RetryPolicy(timeout=timeout, max_retries=max_retries)
    tools = env_class.tool_schemas()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": AGENT_PROMPT.format(domain=env_class.env_domain().replace("_", " "))},
        {"role": "user", "content": "Current data:\n" + json.dumps(state)[:6000]}]
    transitions: list[Transition] = []
    try:
        for index in range(steps):
            attempt = 0
            while True:
                attempt += 1
                try:
                    response = await asyncio.wait_for(provider.client.chat.completions.create(
                        model=model, messages=messages, tools=tools, temperature=temperature), policy.timeout)
                    break
                except Exception as exc:  # noqa: BLE001 - classified like the evaluator does
                    transient = isinstance(exc, asyncio.TimeoutError) or provider.should_retry(exc)
                    if not transient or attempt > policy.max_retries:
                        raise
                    await asyncio.sleep(policy.delay(attempt))
            calls = (response.choices[0].message.tool_calls or []) if response.choices else []
            if not calls:
                break
            call = calls[0]
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError:
                arguments = {}
            transition = execute(env_class, state, Action(call.function.name, arguments if isinstance(arguments, dict) else {}))
            transitions.append(transition)
            state = transition.next_state
            messages += [{"role": "assistant", "content": None, "tool_calls": [
                             {"id": call.id or f"call_{index}", "type": "function",
                              "function": {"name": call.function.name, "arguments": call.function.arguments or "{}"}}]},
                         {"role": "tool", "tool_call_id": call.id or f"call_{index}",
                          "content": json.dumps(transition.observation)}]
    except openai.OpenAIError:
        if not transitions:
            raise
    finally:
        await provider.aclose()
    return transitions
