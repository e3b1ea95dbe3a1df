"""The order store interface: all the rest of agentcli relies on, and nothing more."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class OrderStore(Protocol):
    """A read-only orders database.

    ``get_order`` returns the tool's record, or ``None`` when the order does not exist *for this
    customer* (the filter is in the SQL). It raises ``StoreError`` when the database fails or is
    busy past the store's own bound; cancelling the awaiting task stops that lookup (and only
    that one) without waiting for the database. ``aclose`` never waits for a lookup that was
    cancelled. ``description`` is for banners and errors and never holds a password.
    """

    description: str

    async def get_order(self, code: str, customer: str | None,
                        include_lines: bool) -> dict[str, Any] | None: ...

    async def aclose(self) -> None: ...
