"""What a search returns and how it fails: shared by the live backends (``web.search``) and the
replayed one (``web.replay``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class SearchResult:
    url: str
    title: str
    snippet: str
    rank: int  # 1-based, in the backend's order

    def to_json(self) -> dict:
        return asdict(self)


class SearchError(RuntimeError):
    """A search that failed. ``fatal``: no other query will do better (refused key, wrong endpoint)."""

    def __init__(self, message: str, *, fatal: bool = False):
        super().__init__(message)
        self.fatal = fatal
