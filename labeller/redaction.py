"""Credentials inside URLs: `http://user:PASS@host/v1?api-key=TOKEN` is shown, stored and hashed as
`http://***:***@host/v1?api-key=***`.

A base URL can carry a secret in its user-info (user name and password) or in a query parameter
(api-key, key, token, access_token, sig, ...). Like an *_API_KEY value, such a secret must never
reach an error line, a failures file, a label, a cache key or a report. `redact_url` masks one URL;
`scrub_urls` masks every URL found inside a text; `url_secrets` lists the raw values, so a server
that echoes one back without its URL around it is caught too.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

MASK = "***"
# Query parameters whose value is a credential: a substring match on the lower-cased name, so
# api-key, x-api-key, apikey, key, token, access_token, sig, signature, password, client_secret...
_SENSITIVE = ("key", "token", "secret", "pass", "pwd", "sig", "auth", "cred", "session")
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")


def _sensitive(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SENSITIVE)


def redact_url(url: str) -> str:
    """The URL with its user-info and every credential-like query value masked. Other parts are kept."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # not a URL we can take apart: mask whatever sits between :// and @
        return re.sub(r"://[^/@\s]*@", f"://{MASK}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo = netloc.rpartition("@")[0]
        masked = f"{MASK}:{MASK}" if ":" in userinfo else MASK
        hostport = f"[{host}]" if ":" in host else host
        netloc = f"{masked}@{hostport}" + (f":{port}" if port is not None else "")
    query = parts.query
    if query:
        query = "&".join(_mask_param(piece) for piece in query.split("&"))
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _mask_param(piece: str) -> str:
    name, sep, value = piece.partition("=")
    return f"{name}={MASK}" if sep and value and _sensitive(unquote(name)) else piece


def url_secrets(url: str | None) -> list[str]:
    """The raw secret values a URL carries (as written and percent-decoded), for redacting other text."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        # With a password the user name is an ordinary name; alone (https://TOKEN@host) it is the secret.
        found = [parts.password] if parts.password else [parts.username]
    except ValueError:
        return []
    found += [value for name, value in parse_qsl(parts.query, keep_blank_values=False) if _sensitive(name)]
    out: list[str] = []
    for value in found:
        for form in (value, unquote(value or "")):
            if form and form not in out:
                out.append(form)
    return out


def scrub_urls(text: str) -> str:
    """Every URL inside `text` with its credentials masked."""
    def masked(match: re.Match) -> str:
        url = match.group(0)
        core = url.rstrip(".,;:!?)]}")  # sentence punctuation after a URL is not part of it
        return redact_url(core) + url[len(core):]

    return _URL.sub(masked, text)


def split_query(url: str) -> tuple[str, dict[str, str]]:
    """`http://h/v1?api-key=T` -> ("http://h/v1", {"api-key": "T"}): the SDKs append their paths to the
    base URL as a string, so a query left on it would end up in front of /chat/completions."""
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment)), dict(parse_qsl(parts.query))
