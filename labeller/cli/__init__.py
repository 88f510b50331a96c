"""Command line: parses arguments and calls one library function per command.

Errors from the library (LabellerError) become one line on stderr and their exit code;
`--traceback` (or LABELLER_TRACEBACK=1) shows the full traceback instead.
"""

from __future__ import annotations

import os
import sys

import typer

from labeller.cli.app import app
from labeller.errors import Interrupted, LabellerError, redact

# Each module registers its commands on `app`; they import heavy libraries only inside commands.
from labeller.cli import label as _label  # noqa: E402,F401
from labeller.cli import evaluate as _evaluate  # noqa: E402,F401
from labeller.cli import agree as _agree, qrels as _qrels  # noqa: E402,F401
from labeller.cli import acceptance as _acceptance, canaries as _canaries, serve as _serve  # noqa: E402,F401
from labeller.cli import run as _run  # noqa: E402,F401
from labeller.cli import batch as _batch  # noqa: E402,F401
from labeller.cli import annotate as _annotate  # noqa: E402,F401
from labeller.cli import judge_bench as _judge_bench  # noqa: E402,F401
from labeller.cli import probe as _probe  # noqa: E402,F401
from labeller.cli import outcomes as _outcomes, traces as _traces  # noqa: E402,F401
from labeller.cli import answers as _answers  # noqa: E402,F401


def _secrets() -> list[str | None]:
    return [v for k, v in os.environ.items() if k.endswith("_API_KEY")]


def main(argv: list[str] | None = None) -> None:
    from labeller.store.sqlite_memory import stop_counting_allocations

    stop_counting_allocations()  # before any store is opened (a cached rerun reads SQLite on two threads)
    args = list(sys.argv[1:] if argv is None else argv)
    traceback = os.environ.get("LABELLER_TRACEBACK") == "1" or "--traceback" in args
    args = [a for a in args if a != "--traceback"]
    try:
        from labeller.api.sources import flag_wording
        from labeller.cli.help import plain_when_piped
        from labeller.cli.inputs import refuse_repeated

        refuse_repeated(args)
        args = _label.bare_ray_flag(args)  # `labeller label --ray` alone: a local Ray
        with flag_wording(), plain_when_piped():  # errors name flags, not Python parameters; help in a pipe is text
            result = app(args=args, prog_name="labeller", standalone_mode=False)
    except Interrupted as exc:
        print(f"labeller: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except LabellerError as exc:
        if traceback:
            raise
        print(f"labeller: error: {redact(str(exc), _secrets())}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except OSError as exc:  # the machine's fault (a full disk, a read-only path) that no check foresaw
        if traceback:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"labeller: error: {where}{redact(exc.strerror or str(exc), _secrets())}", file=sys.stderr)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        print("labeller: interrupted", file=sys.stderr)
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: bad option, missing argument
        exc.show()
        sys.exit(getattr(exc, "exit_code", 2))
    sys.exit(result if isinstance(result, int) else 0)
