"""Turn run entries into each query's ranked document ids (kept beside the run-file system)."""

from labeller.systems.runfile import ranked_from_run

__all__ = ["ranked_from_run"]
