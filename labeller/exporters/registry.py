"""`--export BACKEND=URL` (and `[export] to = [...]`) to the backend that pushes there.

A new backend is one file beside mlflow.py and one line in BACKENDS. Everything here is checked before
a job starts (an unknown backend, a URL that is not http(s), a missing optional extra: exit 2), so a
typo never costs a paid run. Credentials in a URL (`http://user:pass@host`) are taken out of it at
once: the URL kept and shown is without them, and they reach the backend as its own auth.
"""

from __future__ import annotations

import importlib
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import SecretStr

from labeller.errors import ConfigError
from labeller.exporters.base import Exporter, ExportSettings, Target
from labeller.redaction import redact_url

BACKENDS = {  # name -> ("module:class", the optional extra that installs its client library)
    "mlflow": ("labeller.exporters.mlflow:MlflowExporter", "mlflow"),
    "prometheus": ("labeller.exporters.prometheus:PushgatewayExporter", "prometheus"),
    "otlp": ("labeller.exporters.otlp:OtlpExporter", "otlp"),
}


def parse_target(spec: str, where: str = "--export") -> Target:
    """`prometheus=http://127.0.0.1:9091` -> Target. Errors name `where` and never show a credential."""
    backend, sep, url = spec.partition("=")
    backend = backend.strip().lower()
    if not sep or not url.strip():
        raise ConfigError(f"'{redact_url(spec)}' is not BACKEND=URL (e.g. mlflow=http://127.0.0.1:5000); "
                          f"backends: {', '.join(BACKENDS)}", field=where)
    if backend not in BACKENDS:
        raise ConfigError(f"unknown export backend '{backend}'; expected one of: {', '.join(BACKENDS)}", field=where)
    url = url.strip()
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port
    except ValueError as exc:
        raise ConfigError(f"{backend}: '{redact_url(url)}' is not a URL ({exc})", field=where) from None
    if parts.fragment:
        raise ConfigError(f"{backend}: '{redact_url(url)}' has a #fragment, which no backend reads", field=where)
    if parts.scheme not in ("http", "https") or not host:
        raise ConfigError(f"{backend}: '{redact_url(url)}' is not an http:// or https:// URL with a host",
                          field=where)
    netloc = parts.netloc.rpartition("@")[2]
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return Target(backend=backend, url=urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), parts.query, "")),
                  username=SecretStr(user) if user else None, password=SecretStr(password) if password else None)


def make_exporter(target: Target, settings: ExportSettings) -> Exporter:
    """The backend's exporter, its client library imported now: a missing extra is exit 2 before the job."""
    path, extra = BACKENDS[target.backend]
    module_name, _, class_name = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, class_name)(target, settings)
    except ImportError as exc:
        raise ConfigError(f"--export {target.backend} needs its client library ({exc.name or exc}): "
                          f"pip install 'labeller-relevance[{extra}]'") from None
