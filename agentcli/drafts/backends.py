"""``open_drafts``: the one place a drafts backend is chosen (the folder, or the PostgreSQL
queue for a ``postgresql://`` drafts URL, whose module and driver are imported only then)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..errors import ConfigError
from .base import DraftsBackend
from .store import DraftStore


def is_queue_url(url: Any) -> bool:
    return isinstance(url, str) and url.startswith(("postgresql://", "postgres://"))


def open_drafts(*, url: str | None, folder: Path | str | None, create_parents: bool = False,
                on_wait: Callable[[str | None], None] | None = None) -> DraftsBackend:
    """The one place a drafts backend is chosen: the PostgreSQL queue when ``url`` (from
    --drafts-url, AGENTCLI_DRAFTS_URL or drafts_url) is set, else the folder. The queue's
    driver is imported only then."""
    if url:
        if not is_queue_url(url):
            raise ConfigError("the drafts URL must be a postgresql://... URL")
        store: Any = _queue().PgDraftStore(url)
    else:
        store = DraftStore(folder if folder is not None else Path("drafts"),
                           create_parents=create_parents)
    store.on_wait = on_wait
    return store


def create_schema(url: str) -> str:
    """``drafts migrate --schema``: the queue's tables (explicitly, never on the fly)."""
    if not is_queue_url(url):
        raise ConfigError("the drafts URL must be a postgresql://... URL")
    return _queue().create_schema(url)


def _queue() -> Any:
    from . import postgres  # psycopg: imported only for a queue

    return postgres
