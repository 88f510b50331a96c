"""Judge names → judges. Provider SDKs are imported only when their judge is asked for."""

from __future__ import annotations

import os

from labeller.errors import ConfigError, MissingKeyError
from labeller.judges.base import Judge

FORMS = "openai:<model> (e.g. openai:gpt-4.1-mini), anthropic:<model> (e.g. anthropic:claude-haiku-4-5) or offline:lexical"


OFFLINE_MODEL = "lexical"
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def parse_judge_spec(spec: str) -> tuple[str, str]:
    """'openai:gpt-4.1-mini' -> ('openai', 'gpt-4.1-mini'), without building a client or needing a key.

    Raises ConfigError for a name no judge answers to, so configs can be checked before anything runs.
    """
    provider, sep, model = (spec or "").strip().partition(":")
    model = model.strip()
    if provider == "offline":
        if model not in ("", OFFLINE_MODEL):
            raise ConfigError(f"unknown offline judge '{spec}'; the only offline judge is offline:lexical "
                              "(a lexical-overlap heuristic, not an LLM)", field="judge")
        return provider, OFFLINE_MODEL
    if provider not in ("openai", "anthropic") or not sep or not model:
        raise ConfigError(f"unknown judge '{spec}'; expected {FORMS}", field="judge")
    return provider, model


# Sent as the key to a local OpenAI-compatible server (vLLM, Ollama, llama.cpp) when none is set: those
# servers take any key, and a user should not have to invent one. Never used for OpenAI's own API.
LOCAL_SERVER_KEY = "labeller-local-server-no-key"
_OPENAI_HOST = "api.openai.com"


def local_server_key(provider: str, base_url: str | None) -> str | None:
    """The placeholder key for an OpenAI-compatible server named by --base-url (or a config's
    judge.base_url) when OPENAI_API_KEY is not set; None when a real key is set or the URL is OpenAI's
    own. OPENAI_BASE_URL alone does not count: an environment variable set long ago must not turn a
    forgotten key into a silent placeholder; the flag is typed for this run."""
    if provider != "openai" or not base_url or _OPENAI_HOST in base_url or os.environ.get(KEY_VARIABLES["openai"]):
        return None
    return LOCAL_SERVER_KEY


def require_api_key(spec: str, base_url: str | None = None) -> None:
    """Raise MissingKeyError now, before a job writes anything, if the judge will need a key that is not set."""
    provider, _ = parse_judge_spec(spec)
    variable = KEY_VARIABLES.get(provider)
    if variable and not os.environ.get(variable) and not local_server_key(provider, base_url):
        raise MissingKeyError(variable, provider)


def make_judge(spec: str, *, base_url: str | None = None, timeout: float = 60.0, temperature: float = 0.0,
               max_output_tokens: int = 400, api_key: str | None = None, output_mode: str | None = None) -> Judge:
    """Build the judge a `--judge` value names. Raises ConfigError for an unknown name or output mode.

    `api_key` overrides the provider's environment variable (a dry run passes a placeholder: it sends nothing).
    `output_mode` (json_schema, json_object, tool, text; labeller.judges.output_modes) is how the openai
    provider asks for the verdict; the other providers have one way each and refuse another mode.
    """
    provider, model = parse_judge_spec(spec)
    if output_mode is not None:
        from labeller.judges.output_modes import DEFAULT_OUTPUT_MODE, check_output_mode

        output_mode = check_output_mode(output_mode)
        if provider != "openai" and output_mode != DEFAULT_OUTPUT_MODE:
            raise ConfigError(f"--output-mode {output_mode} applies to the openai provider (any OpenAI-compatible "
                              f"server); {provider} judges have one way to ask for a verdict", field="output_mode")
    api_key = api_key or local_server_key(provider, base_url)
    if provider == "openai":
        from labeller.judges.openai import OpenAIJudge

        return OpenAIJudge(model, base_url=base_url, timeout=timeout, temperature=temperature,
                           max_output_tokens=max_output_tokens, api_key=api_key, output_mode=output_mode)
    if provider == "anthropic":
        from labeller.judges.anthropic import AnthropicJudge

        return AnthropicJudge(model, base_url=base_url, timeout=timeout, max_output_tokens=max_output_tokens,
                              api_key=api_key)
    from labeller.judges.offline import OfflineLexicalJudge

    return OfflineLexicalJudge()
