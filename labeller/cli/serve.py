"""`labeller serve`: the retrieval-test HTTP API on uvicorn. FastAPI and uvicorn are imported only here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from labeller.cli.app import app

INSTALL_HINT = 'labeller serve needs the serve extra (fastapi, fastapi-offline, uvicorn, rapidfuzz): pip install ".[serve]" in a labeller checkout'


@app.command("serve")
def serve(
    config: Annotated[Path, typer.Option(help="TOML file naming the retrievers (and the judge) to serve.")],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
) -> None:
    """Serve POST /kb/retrieval-test/{agent_id} (the seed contract; also at /retrieval-test/...), POST /judge, GET /health."""
    from labeller.errors import LabellerError

    try:
        import fastapi  # noqa: F401
        import fastapi_offline  # noqa: F401
        import rapidfuzz  # noqa: F401
        import uvicorn
    except ImportError:
        raise LabellerError(INSTALL_HINT) from None
    from labeller.serve import create_app, load_config
    from labeller.serve.guard import TOKEN_ENV, is_loopback, serve_token

    settings = load_config(config)
    application = create_app(settings)
    if not is_loopback(host):
        guarded = ("callers must send its bearer token" if serve_token(settings.server.token) else
                   f"no bearer token is set ({TOKEN_ENV}), so anyone who can reach it may call it")
        print(f"labeller: warning: listening on {host}, beyond this machine's loopback: {guarded}; POST /judge "
              f"may spend the API key of {', '.join(settings.server.allowed_judges)}", file=sys.stderr)
    print(f"labeller serve: http://{host}:{port} (docs at /docs)", file=sys.stderr)
    uvicorn.run(application, host=host, port=port, log_level="info")
