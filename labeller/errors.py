"""The errors a user can see.

Library code raises these; the CLI turns each into one line on stderr and its
``exit_code``. Anything else escaping to the CLI is a bug and keeps its traceback.
"""

from __future__ import annotations


class LabellerError(Exception):
    """Base of every error labeller reports to a user."""

    exit_code = 1


class BadInputError(LabellerError):
    """An input file or argument is wrong. Says where and what was expected."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path, self.line, self.field, self.detail = path, line, field, message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}{what}{message}")


class ConfigError(BadInputError):
    """A judge name, rubric, price table or pipeline config is wrong."""


class OutputError(BadInputError):
    """An output cannot be written: one of the inputs, a directory, a read-only or full disk.

    Raised before anything is paid for whenever the fault can be seen in advance."""


class MissingKeyError(LabellerError):
    """A provider needs an API key that is not set. Names the variable, never a value."""

    exit_code = 2

    def __init__(self, variable: str, provider: str) -> None:
        self.variable = variable
        super().__init__(f"{provider} judge needs an API key: set the {variable} environment variable")


class JudgeError(LabellerError):
    """A judge failed in a way retrying will not fix (bad key, unknown model, ...)."""

    exit_code = 1


class BudgetExceededError(LabellerError):
    """Raised when --max-cost stops a run; what was done is kept."""

    exit_code = 3


class LabellingFailedError(LabellerError):
    """Some pairs could not be labelled; every successful label was written."""

    exit_code = 1


class GateFailedError(LabellerError):
    """A gate (prompt-change or retrieval regression) found a real drop."""

    exit_code = 1


class Interrupted(LabellerError):
    """Ctrl-C stopped a run; says how many verdicts are safe so the user knows a rerun pays for the rest only."""

    exit_code = 130


def redact(text: str, secrets: list[str | None]) -> str:
    """Remove every secret value, and every credential inside a URL, from text before it is shown or stored."""
    from labeller.redaction import scrub_urls

    text = scrub_urls(text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


class StoreError(LabellerError):
    """The verdict store stopped answering mid-run (a database gone away). What was stored is kept."""

    exit_code = 1


class ExportError(LabellerError):
    """A results backend (MLflow, Pushgateway, OTLP) could not take the figures. Every local output was
    written first; a failed gate's exit 1 wins over this one."""

    exit_code = 4
