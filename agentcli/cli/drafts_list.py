"""``agentcli drafts list`` output: the table (wide, or compact below ``COMPACT_BELOW`` columns),
through a pager when it is longer than the terminal, and the pipe format (a header line, then
one tab-separated line per draft: the same columns as the wide table).

Every string from a draft file is hostile: cells are ``rich.text.Text`` (never markup), cleaned
of control characters and line breaks (``one_line``). The pipe path imports no rich.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from ..drafts.store import Draft
from ..redact import clean_for_terminal, one_line
from ..stdio import isatty
from .common import format_time, out_console, tsv

COMPACT_BELOW = 100
COLUMNS = ("id", "status", "created", "ticket", "order", "customer", "reviewed_by", "edited",
           "findings", "text")
STATUS_STYLE = {"pending_review": "yellow", "approved": "green", "rejected": "red",
                "superseded": "dim", "damaged": "bold red"}


def _cells(item: Any) -> dict[str, Any]:
    """The columns of one row, as plain text (a Draft, or a Damaged file)."""

    if not isinstance(item, Draft):
        return {"id": item.id, "status": "damaged", "created": "", "ticket": "", "order": "",
                "customer": "", "reviewed_by": "", "edited": "", "findings": "",
                "text": f"cannot be read as a draft: {item.reason}"}
    m = item.meta
    return {"id": item.id, "status": m.get("status") or "?", "created": m.get("created_at") or "",
            "ticket": item.ticket or "", "order": m.get("order_code") or "",
            "customer": m.get("customer") or "", "reviewed_by": m.get("reviewed_by") or "",
            "edited": "edited" if item.edited else "",
            "findings": str(len(m.get("findings") or [])) if m.get("findings") else "",
            "text": item.text}


def write_pipe(rows: list[Any]) -> None:
    out = sys.stdout
    out.write("\t".join(COLUMNS) + "\n")
    for item in rows:
        c = _cells(item)
        out.write(tsv(*(c[k] for k in COLUMNS)) + "\n")


def print_table(rows: list[Any], *, shown: int, total: int, directory: Path) -> None:
    console = out_console()
    compact = console.width < COMPACT_BELOW
    count = f"{shown} of {total}" if shown != total else str(total)
    title = Text(f"{count} draft{'s' if total != 1 else ''} in "
                 f"{one_line(clean_for_terminal(str(directory)), 120)}")
    t = Table(title=title, title_justify="left", header_style="bold",
              box=_box(console.width < 150), pad_edge=not compact, padding=(0, 1), expand=False)
    # The id is never cut or split: no wrap, and wide enough for a whole id at any width.
    t.add_column("id", no_wrap=True, min_width=14, overflow="ignore")
    t.add_column("status", no_wrap=True, overflow="ellipsis", min_width=8 if compact else 14)
    full = console.width >= 150  # below: no borders, a short time, no order column
    if not compact:
        t.add_column("created", no_wrap=True, overflow="ellipsis", min_width=16 if full else 11)
    t.add_column("ticket", no_wrap=True, overflow="ellipsis", max_width=24 if full else 14)
    if full:
        t.add_column("order", no_wrap=True, overflow="ellipsis", min_width=10, max_width=14)
    if not compact:
        t.add_column("customer", no_wrap=True, overflow="ellipsis", max_width=28 if full else 22)
    if full:
        t.add_column("reviewed by", no_wrap=True, overflow="ellipsis", max_width=16)
    t.add_column("text", overflow="fold", ratio=1, min_width=16)
    for item in rows:
        c = _cells(item)
        st = c["status"]
        status = Text(one_line(st, 20), style=STATUS_STYLE.get(st, ""))
        if c["edited"]:
            status.append(" ✎" if compact else " ✎ edited", style="magenta")
        if c["findings"]:
            status.append(f" ⚑{c['findings']}", style="bold red")
        cells: list[Any] = [Text(c["id"]), status]
        if not compact:
            # created_at is text from a file: cleaned like every other cell
            when = one_line(format_time(c["created"]), 20) if c["created"] else "—"
            cells.append(Text(when if full or when == "—" else when[5:]))
        cells.append(Text(one_line(c["ticket"] or "—", 40)))
        if full:
            cells.append(Text(one_line(c["order"] or "—", 20)))
        if not compact:
            cells.append(Text(one_line(c["customer"] or "—", 40)))
        if full:
            cells.append(Text(one_line(c["reviewed_by"] or "—", 20)))
        cells.append(Text(one_line(c["text"], 70 if full else 50),
                          style="red" if st == "damaged" else ""))
        t.add_row(*cells)
    # A list longer than the terminal goes through a pager ($PAGER, or rich's system pager).
    if isatty(sys.stdout) and len(rows) + 4 > console.height:
        os.environ.setdefault("LESS", "-FRX")  # colours through less; quit if it fits
        with console.pager(styles=True):
            console.print(t)
    else:
        console.print(t)


def _box(compact: bool):
    return box.SIMPLE_HEAD if compact else box.HEAVY_HEAD  # compact: no vertical borders
