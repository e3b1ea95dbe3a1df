"""``agentcli review``: step through pending drafts in a terminal, oldest first.

For each draft: the ticket (every question, the customer), the lookups it relied on with their
results, the grounding findings, then the reply text (``drafts_show.print_draft``); then one key:
a approve · r reject (asks the reason) · e edit in $VISUAL/$EDITOR · s skip · b back · q quit.
Keys are read one at a time from the terminal (termios, imported here only); the filters of
``drafts list`` apply. Nothing is ever sent.
"""

from __future__ import annotations

import os
import sys
import termios
import tty

import typer
from rich.rule import Rule
from rich.text import Text

from ..drafts.queue import query, require_folder, review, select, store_for
from ..errors import UsageError
from ..stdio import isatty
from .common import out_console, run
from .drafts import (
    CustomerOpt,
    DraftsDirOpt,
    FlaggedOpt,
    OrderOpt,
    SinceOpt,
    TicketFilter,
)
from .drafts_show import edit_draft, print_draft

KEYS = "[a] approve  [r] reject  [e] edit  [s] skip  [b] back  [q] quit"


def read_key(fd: int) -> str:
    """One key press from the terminal, without waiting for Enter (Ctrl-C still interrupts)."""

    old = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        b = os.read(fd, 1)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)
    if not b or b == b"\x04":  # end of input, Ctrl-D
        return "q"
    return b.decode("latin-1").lower()


def read_line(prompt: str) -> str:
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n")


def review_loop(store, q, console) -> int:
    ids = [d.id for d in reversed(select(store, q).drafts)]  # oldest first
    if not ids:
        console.print("no pending drafts" + (" match" if q.filtered else "") + "; nothing to review",
                      highlight=False, markup=False)
        return 0
    fd = sys.stdin.fileno()
    done: dict[str, str] = {}
    i = 0
    while 0 <= i < len(ids):
        did = ids[i]
        try:
            d = store.get(did)
        except UsageError as e:  # deleted or damaged since the list was made
            console.print(Text(f"{did}: {e.message}; skipped", style="yellow"))
            i += 1
            continue
        console.print(Rule(Text(f"draft {i + 1} of {len(ids)}"), style="dim"))
        print_draft(console, d, None, footer=False)
        if did in done:
            console.print(Text(f"(you {done[did]} it in this review)", style="dim"))
        console.print(Text(KEYS, style="bold"))
        key = read_key(fd)
        if key == "q":
            break
        if key == "b":
            i = max(0, i - 1)
            continue
        if key == "s" or key in ("\n", "\r", " "):
            i += 1
            continue
        try:
            if key == "a":
                # going back to change one's own decision of this review needs no --force
                res = review(store, did, "approved", force=did in done)
                done[did] = "approved"
                console.print(Text(f"approved {did} by {res.draft.meta.get('reviewed_by')}; nothing "
                                   "was sent", style="green"))
                i += 1
            elif key == "r":
                reason = read_line("reason (Enter for none): ")
                res = review(store, did, "rejected", reason=reason or None, force=did in done)
                done[did] = "rejected"
                console.print(Text(f"rejected {did}; nothing was sent", style="red"))
                i += 1
            elif key == "e":
                edit_draft(store, did, console)  # shown again, for a decision on the new text
            else:
                console.print(Text(f"unknown key; {KEYS}", style="yellow"))
        except UsageError as e:  # already decided by a teammate, a bad reason, an editor failure
            console.print(Text(e.message, style="yellow"))
            i += 1
    counts = {v: list(done.values()).count(v) for v in ("approved", "rejected")}
    console.print(Text(f"reviewed: {counts['approved']} approved, {counts['rejected']} rejected, "
                       f"{len(ids) - len(done)} left pending"), highlight=False)
    return 0


def register(app: typer.Typer) -> None:
    @app.command("review")
    def review_command(
        order: OrderOpt = None, customer: CustomerOpt = None, since: SinceOpt = None,
        ticket: TicketFilter = None, flagged: FlaggedOpt = False, drafts_dir: DraftsDirOpt = None,
    ) -> None:
        """Step through pending drafts in a terminal (oldest first): approve, reject, edit, skip,
        back, quit — one key each. Nothing is sent."""

        def body() -> int:
            store = store_for(drafts_dir)
            q = query("pending_review", order, customer, since, ticket, flagged, False)
            require_folder(store)
            if not (isatty(sys.stdin) and isatty(sys.stdout)):
                raise UsageError("agentcli review needs a terminal; from a script use "
                                 "`agentcli drafts approve/reject ... --yes`")
            return review_loop(store, q, out_console())

        raise typer.Exit(run(body))

