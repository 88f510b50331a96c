"""One wording for a record that failed pydantic validation, wherever it was read from."""

from __future__ import annotations

from pydantic import ValidationError

from labeller.errors import BadInputError

_SHOWN = 80  # characters of an offending value quoted back; a whole row is never quoted


def validation_error(exc: ValidationError, *, path: str | None = None, line: int | None = None,
                     expected: str | None = None, prefix: tuple[str, ...] = (),
                     error: type[BadInputError] = BadInputError) -> BadInputError:
    """The first problem of `exc` as one BadInputError (or `error`) naming file, line and field.

    A missing field says "missing"; an unknown one "unknown field"; otherwise pydantic's message
    with the value that was given, cut short. `expected` ends the message ("expected a label row").
    """
    err = exc.errors()[0]
    field = ".".join([*prefix, *map(str, err["loc"])]) or None
    kind = err["type"]
    if kind == "missing":
        message = "missing" if expected else "missing; this field is required"
    elif kind == "extra_forbidden":
        message = "unknown field"
    else:
        message = err["msg"].removeprefix("Value error, ")
        value = err.get("input")
        if not isinstance(value, (dict, list)) and "input" in err:
            shown = repr(value)
            message += f" (got {shown if len(shown) <= _SHOWN else shown[:_SHOWN] + '...'})"
    if expected:
        message += f"; expected {expected}"
    return error(message, path=path, line=line, field=field)
