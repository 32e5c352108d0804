"""Moved to :mod:`berds_core.files.cache` (issue 26): kept one release for imports written before."""
from .files.cache import cache_dir, slug, text_hash  # noqa: F401
