"""Request options shared by ``envsim eval`` and ``envsim simulate`` (defined once, so both take the same values
with the same defaults): ``--max-tokens``, ``--response-format``, ``--timeout``."""

from __future__ import annotations

from typing import Any, Callable

import click

from envsim.evaluation.prompting.answer_schema import RESPONSE_FORMATS

Command = Callable[..., Any]

max_tokens_option = click.option(
    "--max-tokens", type=click.IntRange(min=1), default=2048, show_default=True,
    help="Answer token limit per request; reasoning models need room for their thinking (v2: 4096+).")

response_format_option = click.option(
    "--response-format", type=click.Choice(list(RESPONSE_FORMATS)), default="free", show_default=True,
    help="free: no response_format field (the model writes its answer as it likes; it is parsed tolerantly). "
         "json-schema: every request asks the endpoint to decode under the answer's JSON Schema (observation + "
         "RFC 6902 patch; llama.cpp, vLLM and OpenAI accept it); an endpoint that refuses it fails the preflight. "
         "json-schema-path-first: the same schema with each operation's path before its op (a simulator trained on "
         "path-first targets: a recipe's patch_key_order). "
         "Use the format the model was trained with. Part of an eval run's settings: a run is resumed only with "
         "the same.")

timeout_option = click.option(
    "--timeout", type=click.FloatRange(min=0.0, min_open=True), default=120.0, show_default=True,
    help="Seconds per request (a CPU-served model may need several minutes for a long prompt).")


def request_options(command: Command) -> Command:
    """``--max-tokens``, ``--response-format`` and ``--timeout`` on ``command`` (in that order in --help)."""
    for option in (timeout_option, response_format_option, max_tokens_option):
        command = option(command)
    return command
