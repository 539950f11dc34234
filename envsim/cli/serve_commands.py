"""The commands ``envsim serve`` prints once its server answers: ``envsim eval`` and ``envsim simulate`` with the
prompt settings the served model was trained with.

A checkpoint says how it was trained in ``envsim_training.json`` (in the model directory; beside a ``.gguf`` file):
``prompt_mode``, ``prompt_version``, ``response_format``. Without that file the commands carry the defaults and a
note says that the prompt settings must match the model's training data (its ``stats.json``).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from envsim.training.checkpoint_meta import TRAINING_FILE

#: The environment the printed simulate command rolls out in (any id of ``envsim envs list`` does).
EXAMPLE_ENV = "online_store-v1"
MATCH_NOTE = ("the commands use the default prompt settings; --prompt-mode, --prompt-version and --response-format "
              "must match the model's training data (its stats.json)")


@dataclass
class PromptSettings:
    """The prompt settings a model expects (``None``: the command's default) and notes on where they came from."""

    prompt_mode: str | None = None
    prompt_version: str | None = None
    response_format: str | None = None
    notes: list[str] = field(default_factory=list)

    def options(self) -> list[str]:
        """The command-line options that set them (the same for eval and simulate)."""
        pairs = (("--prompt-mode", self.prompt_mode), ("--prompt-version", self.prompt_version),
                 ("--response-format", self.response_format))
        return [part for name, value in pairs if value is not None for part in (name, value)]


def training_settings(model: str) -> PromptSettings:
    """The prompt settings of ``model`` (a checkpoint directory or a ``.gguf`` file) from its ``envsim_training.json``;
    defaults with a note when it has none or the file cannot be used."""
    from envsim.evaluation.prompting.answer_schema import RESPONSE_FORMATS
    from envsim.evaluation.prompting.prompts import PROMPT_MODES, PROMPT_VERSIONS

    path = Path(model)
    path = (path if path.is_dir() else path.parent) / TRAINING_FILE
    if not path.is_file():
        return PromptSettings(notes=[f"note: {model} has no {TRAINING_FILE}: {MATCH_NOTE}"])
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return PromptSettings(notes=[f"note: {path} cannot be read ({exc}): {MATCH_NOTE}"])
    data = data if isinstance(data, dict) else {}
    allowed = {"prompt_mode": PROMPT_MODES, "prompt_version": PROMPT_VERSIONS, "response_format": RESPONSE_FORMATS}
    settings, notes = {}, []
    for key, choices in allowed.items():
        value = data.get(key)
        value = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
        if value is not None and value not in choices:
            notes.append(f"note: {path}: {key} {value!r} is not one of {', '.join(choices)}: left to its default")
            value = None
        settings[key] = value
    if not any(settings.values()):
        notes.append(f"note: {path} names no prompt setting: {MATCH_NOTE}")
    return PromptSettings(**settings, notes=notes)


#: How the printed commands pass the key of a server started with ``--api-key`` (never the key itself).
KEY_OPTION = '--api-key "$ENVSIM_SERVE_API_KEY"'
KEY_NOTE = ("note: the server answers only requests with the key given to serve --api-key: the commands read it "
            "from $ENVSIM_SERVE_API_KEY (export it in the shell you run them from)")


def usage_lines(model: str, base_url: str, keyed: bool = False) -> list[str]:
    """``evaluate with: ...`` and ``simulate with: ...`` for ``model`` served at ``base_url``, then any notes;
    ``keyed``: the server needs an API key, which the commands take from ``$ENVSIM_SERVE_API_KEY``."""
    settings = training_settings(model)
    common = ["--base-url", base_url, *settings.options()]
    evaluate = ["envsim", "eval", "--model", model, *common]
    simulate = ["envsim", "simulate", "--simulator", model, *common, "--env", EXAMPLE_ENV, "--out", "runs/simulate"]
    key = f" {KEY_OPTION}" if keyed else ""
    return [f"evaluate with: {shlex.join(evaluate)}{key}", f"simulate with: {shlex.join(simulate)}{key}",
            *settings.notes, *([KEY_NOTE] if keyed else [])]
