"""The typer application every command module registers on."""

import typer

app = typer.Typer(
    name="labeller",
    help="Graded LLM relevance labels you can trust: label, agree, evaluate, run pipelines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cache_app = typer.Typer(help="Inspect and export the verdict cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")
