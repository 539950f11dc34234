"""``envsim`` command group; sub-commands live in their own modules and import heavy code on use."""

from __future__ import annotations

import click

from envsim import __version__
from envsim.cli.construct_cmd import construct_cmd
from envsim.cli.envs_cmd import envs
from envsim.cli.eval_cmd import eval_cmd
from envsim.cli.export_cmd import export_cmd
from envsim.cli.report_cmd import report_cmd
from envsim.cli.serve_cmd import serve_cmd
from envsim.cli.simulate_cmd import simulate_cmd
from envsim.cli.train_cmd import train
from envsim.cli.view_cmd import view_cmd


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envsim")
def main() -> None:
    """EnvSim: measure and train LLM environment simulators on deterministic tool environments."""


main.add_command(envs)
main.add_command(construct_cmd)
main.add_command(eval_cmd)
main.add_command(export_cmd)
main.add_command(report_cmd)
main.add_command(serve_cmd)
main.add_command(simulate_cmd)
main.add_command(train)
main.add_command(view_cmd)


if __name__ == "__main__":
    main()
