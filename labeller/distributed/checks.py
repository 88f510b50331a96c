"""What `--ray` refuses before anything is started or sent: options the cluster path cannot honour, an address that
is not one or that nothing answers at, and a directory store with workers on other machines."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from labeller.distributed.options import LOCAL, RayOptions
from labeller.errors import BadInputError, ConfigError
from labeller.labelling.models import LabelOptions

CONNECT_SECONDS = 5.0  # ray.init itself waits minutes for a GCS that is not there: a plain TCP check first
REMOTE_DIRECTORY = ("a directory store (--cache DIR) is on one machine: workers on other machines cannot write it; "
                    "use a PostgreSQL store (--cache postgresql://...) for a multi-machine cluster (docs/ray.md)")


def refuse_unsupported(options: LabelOptions) -> None:
    """Options a block on a worker cannot honour yet: each named, with what to do instead."""
    unsupported = [(options.dry_run, "--dry-run (it sends nothing: run it without --ray)"),
                   (options.batch, "--batch (the provider's batch API is its own scheduler: run it without --ray)"),
                   (options.samples > 1 or options.adaptive, "--samples (self-consistency is not distributed yet)"),
                   (options.grade_probs, "--grade-probs (not distributed yet)")]
    for refused, what in unsupported:
        if refused:
            raise BadInputError(f"--ray does not take {what}", field="ray")


def host_and_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a cluster address (host:port or ray://host:port); None for `local` and `auto`."""
    if address in (LOCAL, "auto"):
        return None
    parts = urlsplit(address if "://" in address else f"ray-gcs://{address}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("ray", "ray-gcs") or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise BadInputError(f"--ray {address!r} is not a Ray address; expected HOST:PORT (what `ray start --head` "
                            "printed, e.g. 10.0.0.5:6379), ray://HOST:PORT, or no value for a local Ray", field="ray")
    return parts.hostname, port


def is_this_machine(host: str) -> bool:
    """True when `host` names this machine (an address a socket here can bind to)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((socket.gethostbyname(host), 0))
        return True
    except OSError:
        return False


def check_cluster_address(ray: RayOptions, store_is_url: bool) -> None:
    """Refuse a malformed address, a directory store with a cluster on another machine, and an address nothing
    answers at (in seconds, not ray.init's minutes)."""
    target = host_and_port(ray.address)
    if target is None:
        return
    host, port = target
    try:
        socket.gethostbyname(host)
    except OSError:
        raise BadInputError(f"--ray {ray.address}: no such host {host!r}", field="ray") from None
    if not store_is_url and not is_this_machine(host):
        raise ConfigError(f"--ray {ray.address}: {REMOTE_DIRECTORY}", field="ray")
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise BadInputError(f"--ray {ray.address}: no Ray cluster answers there ({exc.strerror or exc}); start one "
                            "with `ray start --head` or check the address", field="ray") from None


def check_cluster_nodes(hosts: set[str], store_is_url: bool) -> None:
    """Once attached: a directory store with nodes on more than one machine is refused (nothing sent yet)."""
    if not store_is_url and len(hosts) > 1:
        raise ConfigError(f"the Ray cluster has nodes on {len(hosts)} machines ({', '.join(sorted(hosts))}): "
                          f"{REMOTE_DIRECTORY}", field="ray")
