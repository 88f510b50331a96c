"""Judge names → judges. Provider SDKs are imported only when their judge is asked for."""

from __future__ import annotations

from labeller.errors import ConfigError
from labeller.judges.base import Judge

FORMS = "openai:<model> (e.g. openai:gpt-4.1-mini), anthropic:<model> (e.g. anthropic:claude-haiku-4-5) or offline:lexical"


def make_judge(spec: str, *, base_url: str | None = None, timeout: float = 60.0, temperature: float = 0.0,
               max_output_tokens: int = 400, api_key: str | None = None) -> Judge:
    """Build the judge a `--judge` value names. Raises ConfigError for an unknown name.

    `api_key` overrides the provider's environment variable (a dry run passes a placeholder: it sends nothing).
    """
    provider, sep, model = (spec or "").strip().partition(":")
    if not sep or not model.strip():
        if provider == "offline":
            model = "lexical"
        else:
            raise ConfigError(f"unknown judge '{spec}'; expected {FORMS}", field="judge")
    model = model.strip()
    if provider == "openai":
        from labeller.judges.openai import OpenAIJudge

        return OpenAIJudge(model, base_url=base_url, timeout=timeout, temperature=temperature,
                           max_output_tokens=max_output_tokens, api_key=api_key)
    if provider == "anthropic":
        from labeller.judges.anthropic import AnthropicJudge

        return AnthropicJudge(model, base_url=base_url, timeout=timeout, max_output_tokens=max_output_tokens,
                              api_key=api_key)
    if provider == "offline":
        from labeller.judges.offline import OfflineLexicalJudge

        if model != OfflineLexicalJudge.model:
            raise ConfigError(f"unknown offline judge '{spec}'; the only offline judge is offline:lexical "
                              "(a lexical-overlap heuristic, not an LLM)", field="judge")
        return OfflineLexicalJudge()
    raise ConfigError(f"unknown judge '{spec}'; expected {FORMS}", field="judge")
