"""Labelling past one machine: the same engine's blocks on a Ray cluster (ray.py), the store the source of truth.

Only options.py is imported without Ray installed; everything else needs the `labeller-relevance[ray]` extra.
"""

from labeller.distributed.options import LOCAL, RayOptions

__all__ = ["LOCAL", "RayOptions"]
