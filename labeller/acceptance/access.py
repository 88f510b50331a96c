"""Who may see each document: an ACL file or permission fields in the corpus.

ACL rows: {doc_id, users, groups} (lists; in CSV, names separated by ';'); "*" in users means everyone.
A corpus gives the same as two fields of each document (`allowed_users`, `allowed_groups` by default).
A document with no entry has unknown permissions: whether an identity may see it cannot be verified.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from labeller.acceptance.suite import Access
from labeller.errors import BadInputError
from labeller.io.tables import read_rows, require
from labeller.systems.base import Identity

Permissions = dict[str, tuple[frozenset[str], frozenset[str]]]  # doc_id -> (users, groups)


def _names(value: Any, path: Path, line: int, field: str) -> frozenset[str]:
    if value is None or value == "":
        return frozenset()
    if isinstance(value, str):
        return frozenset(v.strip() for v in value.split(";") if v.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    raise BadInputError(f"expected a list of names, got {value!r}", path=str(path), line=line, field=field)


def read_permissions(access: Access, base: Path) -> Permissions:
    acl_mode = access.acl is not None
    path = base / (access.acl if acl_mode else access.corpus)  # type: ignore[operator]
    users_field, groups_field = ("users", "groups") if acl_mode else (access.users_field, access.groups_field)
    out: Permissions = {}
    for line, row in read_rows(path):
        doc = require(row, "doc_id", path, line)
        if acl_mode:
            extra = sorted(set(row) - {"doc_id", "users", "groups"})
            if extra:
                raise BadInputError("unknown field; an ACL row has doc_id, users and groups", path=str(path),
                                    line=line, field=extra[0])
        elif users_field not in row and groups_field not in row:
            continue  # no permission fields: unknown, so unverifiable
        if doc in out:
            raise BadInputError(f"document '{doc}' is listed twice", path=str(path), line=line, field="doc_id")
        out[doc] = (_names(row.get(users_field), path, line, users_field),
                    _names(row.get(groups_field), path, line, groups_field))
    return out


def may_see(permissions: Permissions, doc_id: str, identity: Identity) -> bool | None:
    """True or False, or None when the document's permissions are unknown."""
    if doc_id not in permissions:
        return None
    users, groups = permissions[doc_id]
    return "*" in users or identity.user in users or bool(groups & set(identity.groups))


def leaks(permissions: Permissions, doc_ids: Iterable[str], identity: Identity) -> tuple[list[str], list[str]]:
    """(documents the identity may not see, documents whose permissions are unknown)."""
    verdicts = [(d, may_see(permissions, d, identity)) for d in doc_ids]
    return [d for d, v in verdicts if v is False], [d for d, v in verdicts if v is None]
