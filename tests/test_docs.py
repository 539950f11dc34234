"""The README is short and leads to every docs/ page; links between pages resolve; every ```python block
parses; and every `envsim` command line in a shell block names a real command with options it takes (values
of choice options included), so a renamed option cannot leave the documentation behind. The blocks that
are run, not only checked, are run by tests/test_docs_python_api.py, tests/evaluation/test_api.py and
tests/test_readme_baselines.py."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import click
import pytest

from envsim.cli import main
from tests.fixtures.docs import DOCS, README, ROOT, doc_pages, fenced_blocks

#: Pages other branches of issue 29..33 are writing; the README links them before they are merged.
#: Remove a name once its page is in docs/ (then its links and anchors are checked like the others).
PENDING_PAGES: set[str] = set()
#: Commands other branches are adding (``envsim view``); remove once merged.
PENDING_COMMANDS: set[str] = set()

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _links(path: Path) -> list[str]:
    """The link targets of ``path`` outside code blocks."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return _LINK.findall(text)


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of ``path``."""
    anchors = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") and not line.startswith("#!"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_readme_is_short_and_links_every_docs_page():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200
    linked = {target.split("#")[0] for target in _links(README)}
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert pages, "docs/ holds no page"
    assert not pages - linked, f"docs pages the README does not link: {sorted(pages - linked)}"


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: p.name)
def test_relative_links_resolve(page):
    for target in _links(page):
        if re.match(r"[a-z]+:", target):                       # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part).resolve() if file_part else page
        if resolved.name in PENDING_PAGES and resolved.parent == DOCS:
            continue
        assert resolved.exists(), f"{page.name}: link to {target} does not resolve"
        assert ROOT in resolved.parents or resolved == ROOT, f"{page.name}: {target} leaves the repository"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{page.name}: {resolved.name} has no heading #{anchor}"


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: p.name)
def test_python_blocks_parse(page):
    for block in fenced_blocks(page, "python"):
        ast.parse(block, filename=str(page))


def _command_lines(block: str) -> list[list[str]]:
    """The ``envsim ...`` invocations of a shell block, as argument lists (after ``envsim``)."""
    text = block.replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            continue
        command: list[str] | None = None
        for token in [*tokens, "&&"]:
            if token in ("&&", "||", ";", "|", "&"):
                if command is not None:
                    found.append(command)
                command = None
            elif command is not None:
                command.append(token.rstrip(";&"))
            elif token == "envsim":
                command = []
    return found


def _resolve(args: list[str]) -> tuple[click.Command, list[str], str]:
    """The click command an argument list reaches, the arguments left and the command's name."""
    command: click.Command = main
    name = "envsim"
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        sub = command.get_command(click.Context(command), args[0])
        if sub is None:
            raise LookupError(f"{name} has no command {args[0]!r}")
        name, command, args = f"{name} {args[0]}", sub, args[1:]
    return command, args, name


def _check_options(command: click.Command, args: list[str], name: str) -> None:
    options = {opt: param for param in command.params if isinstance(param, click.Option)
               for opt in (*param.opts, *param.secondary_opts)}
    for index, arg in enumerate(args):
        if not arg.startswith("--") or arg in ("--help", "--version"):
            continue
        flag, _, inline = arg.partition("=")
        assert flag in options, f"`{name}` has no option {flag}"
        param = options[flag]
        value = inline or (args[index + 1] if index + 1 < len(args) else "")
        if isinstance(param.type, click.Choice) and not param.is_flag and value and value != "...":
            choices = value.split("|")                          # `--track rollout|bfcl` style alternatives
            assert all(c in param.type.choices for c in choices), f"`{name} {flag} {value}`: not a choice"


def test_envsim_command_lines_name_real_commands_and_options():
    checked = 0
    for page in doc_pages():
        for block in fenced_blocks(page, "bash"):
            for args in _command_lines(block):
                if args and args[0] in PENDING_COMMANDS:
                    continue
                try:
                    command, rest, name = _resolve(args)
                except LookupError as exc:
                    raise AssertionError(f"{page.name}: envsim {' '.join(args)}: {exc}") from None
                try:
                    _check_options(command, rest, name)
                except AssertionError as exc:
                    raise AssertionError(f"{page.name}: envsim {' '.join(args)}: {exc}") from None
                checked += 1
    assert checked >= 40, f"only {checked} envsim command lines found in the documentation"


def test_the_command_checker_catches_a_wrong_option_and_a_wrong_choice():
    lines = _command_lines("envsim eval --model m --prompt-mode mdp-view && envsim simulate --env x --bogus 1 &")
    assert lines == [["eval", "--model", "m", "--prompt-mode", "mdp-view"], ["simulate", "--env", "x", "--bogus", "1"]]
    command, rest, name = _resolve(lines[1])
    with pytest.raises(AssertionError, match="has no option --bogus"):
        _check_options(command, rest, name)
    command, rest, name = _resolve(["eval", "--prompt-mode", "mdpview"])
    with pytest.raises(AssertionError, match="not a choice"):
        _check_options(command, rest, name)
    with pytest.raises(LookupError, match="no command 'evaluate'"):
        _resolve(["evaluate", "--model", "m"])
