"""RayOptions: where the Ray cluster is and how the pairs are cut into blocks (no Ray import here)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

LOCAL = "local"  # `--ray` with no address: start a local Ray (or attach to the one RAY_ADDRESS names)


class RayOptions(BaseModel):
    """`labeller label --ray [ADDRESS]`, the label step's `ray` key, `label(ray=...)` (docs/ray.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    address: str = LOCAL  # "local", or a cluster's GCS address host:port (what `ray start --head` printed)
    workers: int | None = Field(default=None, ge=1)  # blocks judged at once; None: one per CPU of the cluster
    block_size: int = Field(default=1000, ge=1)  # pairs a worker plans, judges and writes as one block
