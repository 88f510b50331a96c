"""Options every command that sends pairs to a judge shares (`label`, `probe`, `evaluate --fill-holes`): one
definition each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

ConcurrencyOpt = Annotated[int, typer.Option(min=1, help="Requests in flight at once.")]
MaxCostOpt = Annotated[Optional[float], typer.Option(min=0, help="Stop sending before the estimated spend passes "
                                                                 "this many USD.")]
BaseUrlOpt = Annotated[Optional[str], typer.Option(help="API base URL (OpenAI-compatible servers: vLLM, Ollama, ...).")]
RpmOpt = Annotated[Optional[int], typer.Option(min=1, help="Requests-per-minute limit.")]
TpmOpt = Annotated[Optional[int], typer.Option(min=1, help="Tokens-per-minute limit (estimated tokens).")]
PricesOpt = Annotated[Optional[Path], typer.Option(help="TOML/JSON price table overriding the built-in prices.")]
TimeoutOpt = Annotated[float, typer.Option(min=0.1, help="Seconds to wait for one reply, time queued in a local "
                                                         "server included (see docs/local-servers.md).")]
TemperatureOpt = Annotated[Optional[float], typer.Option(help="Sampling temperature sent to an OpenAI-compatible "
                                                               "judge (default 0).")]
OutputModeOpt = Annotated[Optional[str], typer.Option(help="How the openai provider asks for the verdict: json_schema "
                                                            "(default), json_object, tool or text; see "
                                                            "docs/local-servers.md.")]
