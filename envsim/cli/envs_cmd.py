"""``envsim envs list|show``: browse the environment registry."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from envsim.envs.registry import EnvEntry


@click.group()
def envs() -> None:
    """Browse the registered environments."""


def split_versions() -> list[str]:
    """Benchmark versions that name held-out environments (ship a ``test_envs.txt``), oldest first. A point
    release (v1.1, v2.1: ``derived_from`` in its ``build.json``) holds out what its base does and is not listed."""
    from envsim.benchmark import BENCHMARK_DIR
    from envsim.construction.splits import test_envs_path

    def point_release(folder) -> bool:
        try:
            return "derived_from" in json.loads((folder / "build.json").read_text())
        except (OSError, ValueError):
            return False

    versions = [d.name for d in BENCHMARK_DIR.iterdir()
                if d.is_dir() and test_envs_path(d.name).exists() and not point_release(d)]
    return sorted(versions, key=lambda v: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", v)])


def held_out_versions(entry: EnvEntry, held_out: dict[str, set[str]]) -> list[str]:
    """Versions whose training may not use ``entry``: those naming it in their test_envs.txt; every version for
    a foreign (plugin) environment, which is always held out from training (DESIGN.md, 'Versions and what is
    frozen'; 'envsim train data' uses built-in environments only)."""
    return [v for v, ids in held_out.items() if not entry.builtin or entry.id in ids]


def held_out_label(entry: EnvEntry, versions: list[str]) -> str:
    """The table's 'held out' cell: ``foreign``, the versions (``v1,v2``) or ``-``."""
    return "foreign" if not entry.builtin else ",".join(versions) or "-"


def held_out_summary(rows: list[tuple[EnvEntry, list[str]]], versions: list[str]) -> str:
    """``N held out in v1, M in v2; the others may be used for training`` (foreign ones counted apart)."""
    counts = [f"{sum(v in held for _, held in rows)} {'held out in ' if i == 0 else 'in '}{v}"
              for i, v in enumerate(versions)]
    foreign = sum(not entry.builtin for entry, _ in rows)
    note = f" ({foreign} of them foreign: always held out)" if foreign else ""
    return f"{', '.join(counts)}{note}; the others may be used for training"


@envs.command("list")
@click.option("--domain", default=None, help="Only environments of this domain.")
@click.option("--split", type=click.Choice(["held-out", "training"]), default=None,
              help="Only held-out environments (named in a benchmark version's test_envs.txt, or foreign/plugin "
                   "environments, which are always held out), or only those training data may use.")
@click.option("--version", "version", default=None,
              help="Benchmark version whose held-out list counts (default: every version with a test_envs.txt).")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON object per environment (JSON Lines); 'held_out' lists the versions it is held out "
                   "in (empty: usable for training).")
def list_cmd(domain: str | None, split: str | None, version: str | None, as_json: bool) -> None:
    """List environments: id, domain, tool count, mutating-tool count and the benchmark versions that hold
    them out of training ('foreign': a plugin environment, always held out)."""
    from envsim.construction.splits import read_test_envs
    from envsim.envs.registry import list_envs

    versions = split_versions()
    if version is not None and version not in versions:
        raise click.BadParameter(f"{version!r} is not among {', '.join(versions)}", param_hint="--version")
    versions = [version] if version else versions
    held_out = {v: set(read_test_envs(v)) for v in versions}
    rows = [(entry, held_out_versions(entry, held_out)) for entry in list_envs(domain)]
    if split is not None:
        rows = [(entry, held) for entry, held in rows if bool(held) == (split == "held-out")]
    if as_json:
        for entry, held in rows:
            specs = entry.cls.tool_specs()
            click.echo(json.dumps({
                "id": entry.id, "domain": entry.domain, "tools": list(specs),
                "write_tools": [n for n, s in specs.items() if s.write], "builtin": entry.builtin,
                "held_out": held, "description": entry.cls.description(),
            }))
        return
    click.echo(f"{'id':36} {'domain':20} {'tools':>5} {'writes':>6}  held out")
    for entry, held in rows:
        specs = entry.cls.tool_specs()
        click.echo(f"{entry.id:36} {entry.domain:20} {len(specs):>5} {sum(s.write for s in specs.values()):>6}  "
                   f"{held_out_label(entry, held)}")
    domains = Counter(entry.domain for entry, _ in rows)
    click.echo(f"\n{len(rows)} environments in {len(domains)} domains")
    click.echo(held_out_summary(rows, versions))


@envs.command("show")
@click.argument("env_id")
@click.option("--seed", default=0, show_default=True, help="Seed of the sampled state.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (the whole state).")
@click.option("--full", is_flag=True, help="Print the whole sampled state (default: whole top-level entries up to "
              "6,000 characters, and a line saying what was left out).")
def show_cmd(env_id: str, seed: int, as_json: bool, full: bool = False) -> None:
    """Show one environment: description, tool schemas and a sampled state."""
    from envsim.cli.state_preview import state_preview
    from envsim.envs.registry import UnknownEnvironment, get_env
    from envsim.envs.shown import env_version

    from envsim.envs.sandbox import trust_target

    try:
        trust_target(env_id)  # typed on the command line: the user's own choice
        cls = get_env(env_id)
    except (UnknownEnvironment, ImportError, AttributeError, TypeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    info = {
        "id": cls.env_id(), "domain": cls.env_domain(), "version": env_version(cls),
        "description": cls.description(),
        "tools": [{**s.schema, "write": s.write} for s in cls.tool_specs().values()],
        "sample_state": cls.sample_state(seed),
    }
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    click.echo(f"{info['id']}  ({info['domain']}, version {info['version']})\n{info['description']}\n")
    click.echo("Tools:")
    for spec in cls.tool_specs().values():
        fn = spec.schema["function"]
        params = fn["parameters"]["properties"]
        required = set(fn["parameters"].get("required", []))
        args = ", ".join(f"{n}{'' if n in required else '?'}: {p.get('type', p.get('enum', 'any'))}"
                         for n, p in params.items())
        click.echo(f"  [{'write' if spec.write else 'read '}] {fn['name']}({args})\n          {fn['description']}")
    click.echo(f"\nSampled state (seed {seed}):")
    text, note = (json.dumps(info["sample_state"], indent=2), None) if full else state_preview(info["sample_state"])
    click.echo(text)
    if note:
        click.echo(note)


@envs.command("check")
@click.argument("targets", nargs=-1, required=True)
@click.option("--steps", type=int, default=8, show_default=True,
              help="Explorer calls per episode for the sampled states and the small executor pool.")
@click.option("--episodes", type=int, default=2, show_default=True, help="Explorer episodes of the executor pool.")
@click.option("--per-tool", type=int, default=4, show_default=True,
              help="Argument sets per tool the explorer builds, each run twice for determinism.")
@click.option("--seed", type=int, default=0, show_default=True)
def check_cmd(targets: tuple[str, ...], steps: int, episodes: int, per_tool: int, seed: int) -> None:
    """Conformance checks of environments. MODULE:CLASS (your own class): determinism per tool on sampled states,
    JSON-able returns, arguments the explorer can build, the executor on a small pool, view sizes; one line per
    finding, defects first; exit status 1 on a defect. A registered id (or --all) gets the built-in checks."""
    from envsim.envs.check import check_own, main

    own = [t for t in targets if ":" in t]
    code = check_own(own, echo=click.echo, seed=seed, episodes=episodes, steps=steps, per_tool=per_tool) if own else 0
    others = [t for t in targets if ":" not in t]
    if others:
        code = max(code, main(others))
    if code:
        raise SystemExit(code)
