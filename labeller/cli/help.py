"""Help text that shows flags as flags.

typer 0.2x labels every parameter with its Python annotation (`--json <bool>`, `--run <list[Path]>`,
usage `run [OPTIONS] {config}`), which reads like a signature, not a command line. These two
overrides put back the conventions of click and of most Unix tools: a flag has no value shown,
a value is shown as an upper-case placeholder (PATH, TEXT, INTEGER, FLOAT, [a|b]), a repeatable
option says so, and an argument is its upper-case name. Only help and usage text change.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Any

from typer.core import TyperArgument, TyperOption  # typer 0.2x vendors click: no `import click` here


_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "path": "PATH", "bool": "BOOLEAN"}


def _placeholder(param, ctx: Any) -> str:
    """typer's `<list[Path]>` / `<int range>` / `<a|b>` as PATH / INTEGER RANGE / [a|b]."""
    if param.metavar:
        return param.metavar
    shown = TyperOption.display_type(param, ctx).strip("<>")
    if shown.startswith("list[") and shown.endswith("]"):
        shown = shown[5:-1]
    if "|" in shown:
        return f"[{shown}]"
    head, _, rest = shown.partition(" ")
    return " ".join(filter(None, [_NAMES.get(head.lower(), head.upper()), rest.upper()]))


def _option_placeholder(self: TyperOption, ctx: Any) -> str | None:
    if self.is_flag or self.count:
        return None  # rich help shows nothing for a flag, like click's plain help
    return _placeholder(self, ctx) + (" (repeatable)" if self.multiple else "")


def _argument_placeholder(self: TyperArgument, ctx: Any) -> str | None:
    return _placeholder(self, ctx)


def _argument_usage(self: TyperArgument) -> str:
    name = (self.metavar or self.name or "").upper()
    name = name if self.required else f"[{name}]"
    return name + ("..." if self.nargs != 1 else "")


def install() -> None:
    TyperOption.display_type_rich = _option_placeholder  # type: ignore[method-assign]
    TyperArgument.display_type_rich = _argument_placeholder  # type: ignore[method-assign]
    TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign]


@contextmanager
def plain_when_piped():
    """Help as plain text when stdout is not a terminal (a pipe, a file, `| less`): rich draws 80-column boxes
    there, which wrap every line and are noise to grep. A terminal keeps rich; TYPER_USE_RICH decides when set."""
    import typer.core

    before = typer.core.HAS_RICH
    if "TYPER_USE_RICH" not in os.environ and not _is_terminal(sys.stdout):
        typer.core.HAS_RICH = False
    try:
        yield
    finally:
        typer.core.HAS_RICH = before


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
