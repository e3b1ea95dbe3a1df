"""``agentcli drafts list`` output: the table (``layout``: columns chosen for the terminal's
width, one line a draft), through a pager when it is longer than the terminal, and the pipe
format (a header line, then one tab-separated line per draft, every column).

Every string from a draft file is hostile: cells are ``rich.text.Text`` (never markup), cleaned
of control characters and line breaks (``one_line``). The pipe path imports no rich.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.text import Text

from ..drafts.format import MAX_TICKET_CHARS
from ..drafts.store import Draft
from ..redact import one_line
from ..stdio import isatty
from .common import out_console, tsv
from .layout import (
    Col,
    age,
    fit_path,
    preview,
    print_lines,
    short_status,
    table_lines,
    wrapped,
)

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


def flags(item: Any) -> Text:
    """The marks a reviewer sorts by: ⚑N error-level findings, ⚠ warnings only, ? findings not
    checked for the current text, ✎ edited after it was saved."""
    t = Text()
    if not isinstance(item, Draft):
        return t
    if not item.findings_current:
        t.append("?", style="bold yellow")
    else:
        errors = len(item.errors)
        if errors:
            t.append(f"⚑{errors}", style="bold red")
        elif item.meta.get("findings"):
            t.append("⚠", style="yellow")
    if item.edited:
        t.append("✎", style="magenta")
    return t


def _table_rows(rows: list[Any], width: int, one_status: bool) -> tuple[list[Col], list[dict]]:
    cols = [Col("id", "id", 0), Col("status", "status", 1), Col("flags", "⚑", 1),
            Col("age", "age", 2), Col("text", "reply", 3, cut=max(12, width // 3), grow=True),
            Col("ticket", "ticket", 6), Col("order", "order", 4),
            Col("customer", "customer", 5, cut=12, cap=32),
            Col("reviewed_by", "by", 8, cut=6, cap=16)]
    if one_status:
        cols = [c for c in cols if c.key != "status"]
    out = []
    for item in rows:
        c = _cells(item)
        st = c["status"]
        out.append({
            "id": Text(one_line(c["id"], 20)),
            "status": Text(short_status(st), style=STATUS_STYLE.get(st, "")),
            "flags": flags(item),
            "age": Text(age(c["created"]) if c["created"] else "—"),
            # a ticket that is only its session's id says nothing a reviewer sorts by
            "ticket": Text("" if isinstance(item, Draft) and c["ticket"] == item.meta.get("session_id")
                           else one_line(c["ticket"], MAX_TICKET_CHARS)),  # whole, or the column goes
            "order": Text(one_line(c["order"], 20)),
            "customer": Text(one_line(c["customer"], 60)),
            "reviewed_by": Text(one_line(c["reviewed_by"], 20)),
            "text": Text(preview(c["text"], 400) if st != "damaged" else one_line(c["text"], 400),
                         style="red" if st == "damaged" else ""),
        })
    return cols, out


def print_table(rows: list[Any], *, span: str, directory: str) -> None:
    """The drafts as a table that fits the terminal: one line a draft, the whole id always,
    what a reviewer sorts by (status, flags, age, ticket, order, customer) and a preview of what
    the reply says; the least important columns dropped as the terminal narrows."""
    console = out_console()
    width = console.width
    statuses = {_cells(item)["status"] for item in rows}
    one_status = len(statuses) == 1 and len(rows) > 1
    shown = sum(isinstance(item, Draft) for item in rows)
    what = f"{short_status(next(iter(statuses)))} " if one_status else ""
    head = (f"{shown} {what}draft{'s' if shown != 1 else ''}" + (f" ({span})" if span else "")
            + " in ")
    title = Text(head + fit_path(directory, max(10, width - len(head))))
    cols, cells = _table_rows(rows, width, one_status)
    lines = [*wrapped(console, title, width), Text(""), *table_lines(cols, cells, width)]
    # A list longer than the terminal goes through a pager ($PAGER, or rich's system pager).
    if isatty(sys.stdout) and len(lines) > console.height - 1:
        os.environ.setdefault("LESS", "-FRX")  # colours through less; quit if it fits
        with console.pager(styles=True):
            print_lines(console, lines)
    else:
        print_lines(console, lines)
