"""The typer application every command module registers on, with `--version` and `-h`."""

from __future__ import annotations

from typing import Annotated

import typer

from labeller.cli import help as _help

_help.install()

DISTRIBUTION = "labeller-relevance"  # the PyPI name `labeller` is another project; see README "Installing"


def version_text() -> str:
    from labeller import __version__

    return f"{DISTRIBUTION} {__version__}"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_text())
        raise typer.Exit(0)


app = typer.Typer(
    name="labeller",
    help="Graded LLM relevance labels you can trust: label, agree, evaluate, run pipelines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", "-V", callback=_show_version, is_eager=True,
                                                help="Print the installed version and exit.")] = False) -> None:
    """Graded LLM relevance labels you can trust: label, agree, evaluate, run pipelines."""


cache_app = typer.Typer(help="Inspect, export, import and copy the verdict store.", no_args_is_help=True)
# Every --cache option: a directory or a postgresql:// URL; unset means $LABELLER_CACHE, else .labeller-cache.
STORE_HELP = ("Verdict store: a directory, or a postgresql://user@host:port/db URL shared by a team "
              "(default: $LABELLER_CACHE, else .labeller-cache).")
app.add_typer(cache_app, name="cache")
