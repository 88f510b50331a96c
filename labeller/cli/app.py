"""The typer application every command module registers on."""

import typer

app = typer.Typer(
    name="labeller",
    help="Graded LLM relevance labels you can trust: label, agree, evaluate, run pipelines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cache_app = typer.Typer(help="Inspect, export and copy the verdict store.", no_args_is_help=True)
# Every --cache option: a directory or a postgresql:// URL; unset means $LABELLER_CACHE, else .labeller-cache.
STORE_HELP = ("Verdict store: a directory, or a postgresql://user@host:port/db URL shared by a team "
              "(default: $LABELLER_CACHE, else .labeller-cache).")
app.add_typer(cache_app, name="cache")
