"""Systems under test behind one interface (labeller.systems.base): a Python callable, a stored run,
any HTTP search endpoint, an MCP server. A new kind is one module here and one line in registry.SYSTEMS."""

from labeller.systems.base import Identity, ResultItem, SearchRequest, SearchResponse, SystemUnderTest
from labeller.systems.registry import SYSTEMS, CandidateSpec, open_system, read_candidate

__all__ = ["SYSTEMS", "CandidateSpec", "Identity", "ResultItem", "SearchRequest", "SearchResponse",
           "SystemUnderTest", "open_system", "read_candidate"]
