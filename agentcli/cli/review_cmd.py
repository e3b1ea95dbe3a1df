"""``agentcli review``: step through pending drafts in a terminal, oldest first.

One screen a draft, never taller or wider than the terminal (``Screen``): "draft N of M" with the
draft's id, status and version at the top; its ticket, customer, order and age; the grounding
findings of its text as it is now (checked again first when the text changed); the ticket's
last question and the lookups it relied on; then as much of the reply as fits, paged with
space / ↓ and ↑. At the bottom, always on screen, the result of the last key and the keys:
a approve · r reject (asks the reason) · e edit in $VISUAL/$EDITOR · s skip · b back ·
d the whole draft (in the pager) · q quit.

Every action carries the version of the draft the person is looking at: a draft a teammate
edited or decided meanwhile is not changed, the screen says what changed and shows it as it is
now. A draft with an error-level finding (or an edit that could not be checked again) is not
approved by ``a`` alone: the finding is shown and the word ``approve`` must be typed. Ctrl-C at
a prompt goes back to the draft; at the keys it ends the review with its summary. Keys are read
one at a time from the terminal (termios, imported here only); the filters of ``drafts list``
apply. Nothing is ever sent.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import termios
import time
import tty
from typing import Annotated, Any

import typer
from rich.text import Text

from ..config import sessions_dir
from ..drafts.queue import (
    provenance,
    query,
    require_folder,
    review,
    reviewer,
)
from ..errors import EXIT_INTERRUPTED, UsageError
from ..stdio import isatty
from .common import lock_notice, out_console, run
from .drafts import (
    CustomerOpt,
    DraftsDirOpt,
    DraftsUrlOpt,
    FlaggedOpt,
    OrderOpt,
    SinceOpt,
    TicketFilter,
    using,
)
from .drafts_review import held_reason
from .drafts_show import DraftView, EditNotSaved, edit_draft, emit, show_lines
from .layout import wrapped
from .recheck import Rechecker, select_fresh, unchecked_note

KEYS = ("[a] approve", "[r] reject", "[e] edit", "[s] skip", "[b] back", "[d] details",
        "[q] quit")
KEYS_SHORT = ("a approve", "r reject", "e edit", "s skip", "b back", "d all", "q quit")
MORE = "[space] more"
CONFIRM_WORD = "approve"


def read_key(fd: int) -> str:
    """One key press from the terminal, without waiting for Enter (Ctrl-C still interrupts):
    a character, or "up" / "down" for the arrow keys (an escape sequence read whole)."""

    old = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd, termios.TCSANOW)  # not TCSAFLUSH (the default): a key typed ahead is kept
        b = os.read(fd, 1)
        if b == b"\x1b":
            while select.select([fd], [], [], 0.05)[0]:
                more = os.read(fd, 8)
                if not more:
                    break
                b += more
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)
    if not b or b == b"\x04":  # end of input, Ctrl-D
        return "q"
    if b.startswith(b"\x1b"):
        return {b"\x1b[A": "up", b"\x1bOA": "up", b"\x1b[B": "down", b"\x1bOB": "down",
                b"\x1b[5~": "up", b"\x1b[6~": "down"}.get(b, "")
    return b.decode("latin-1").lower() if b != b" " else " "


def read_line(console: Any, prompt: str) -> str | None:
    """A line typed at the bottom of the screen; None for Ctrl-C or Ctrl-D (go back)."""
    console.print(Text(prompt, style="bold"), end="", highlight=False, crop=True)
    console.file.flush()
    try:
        line = sys.stdin.readline()
    except KeyboardInterrupt:
        return None
    if not line:
        return None
    return line.rstrip("\n")


def item_lines(items: tuple[str, ...], width: int, sep: str = "  ") -> list[Text]:
    """Items on as few lines as fit ``width``, an item never split over two."""
    lines: list[str] = []
    for it in items:
        if lines and len(lines[-1]) + len(sep) + len(it) <= width:
            lines[-1] += sep + it
        else:
            lines.append(it[:width])
    return [Text(ln, style="bold") for ln in lines]


class Screen:
    """One draft on one screen of the console's size (see the module docstring)."""

    def __init__(self, console: Any):
        self.c = console
        self.offset = 0  # the first line of the reply shown
        self.window = 1  # how many lines of it the last screen showed

    def size(self) -> tuple[int, int]:
        w, h = self.c.size
        return max(20, w), max(6, h)

    def lines(self, n: int, total: int, d: Any, note: str | None, status: Text | None,
              keys: tuple[str, ...] | str, reserve: int = 0) -> tuple[list[Text], bool]:
        """Exactly the screen's lines (its height less ``reserve`` rows left for a prompt), the
        status and the keys always at the bottom; and whether more of the reply follows."""
        width, height = self.size()
        height -= reserve
        v = DraftView(self.c, d, {}, width=width, note=note)
        top = Text(f"draft {n} of {total}", style="bold reverse")
        top.append(f" {d.id} · ", style="bold")
        top.append(str(d.meta.get("status")), style="bold")
        top.append(f" · version {d.version}", style="dim")
        if d.edited:
            top.append(" · ✎ edited", style="bold magenta")
        head = wrapped(self.c, top, width, 2)[:2]
        text = v.text()
        sections = [v.findings(limit=4), v.fields(short=True), v.questions(limit=1),
                    v.lookups(limit=3)]
        paged = bool(self.offset)
        for _ in range(2):  # again when the reply turns out longer than its window
            stat = wrapped(self.c, status, width, 2)[:3] if status is not None else []
            menu = isinstance(keys, tuple)
            key_lines = item_lines(keys + ((MORE,) if paged and menu else ()), width) if menu \
                else wrapped(self.c, Text(keys, style="bold"), width)
            if len(head) + len(stat) + len(key_lines) + 2 > height and keys == KEYS:
                key_lines = item_lines(KEYS_SHORT + ((MORE,) if paged else ()), width, "  ")
            if len(head) + len(stat) + len(key_lines) + 2 > height:  # a tiny terminal
                head, stat, key_lines = head[:1], stat[:1], key_lines[:1]
            bottom = stat + key_lines
            avail = max(1, height - len(head) - len(bottom) - 1)  # less the reply's heading
            window = min(len(text), max(min(3, avail), avail // 3))
            left = avail - window
            shown: list[list[Text]] = []
            for sec in sections:  # findings first: they are never what gets cut
                if len(sec) <= left:
                    take = sec
                elif left > 1:
                    take = sec[:left - 1] + [Text("  … (d: the whole draft)", style="dim")]
                else:
                    take = sec[:left]
                shown.append(take)
                left -= len(take)
            window = min(len(text) - self.offset, window + left) if len(text) > self.offset \
                else window + left
            more = self.offset + window < len(text)
            if more and not paged:
                paged = True
                continue
            break
        span = f"lines {self.offset + 1}–{min(len(text), self.offset + window)} of {len(text)}"
        label = Text("reply" + (f" · {span}" if paged else ""), style="bold")
        findings, fields, question, lookups = shown
        middle = fields + findings + question + lookups + [label]
        middle += text[self.offset:self.offset + window]
        pad = height - len(head) - len(middle) - len(bottom)
        out = head + middle[:len(middle) + min(0, pad)] + [Text("")] * max(0, pad) + bottom
        self.window = max(1, window)
        return out, more

    def draw(self, *args: Any, **kw: Any) -> bool:
        out, more = self.lines(*args, **kw)
        self.c.file.write("\x1b[H\x1b[2J")  # home, clear: one screen, redrawn whole
        for i, ln in enumerate(out):
            last = i == len(out) - 1 and not kw.get("reserve")
            self.c.print(ln, no_wrap=True, overflow="crop", crop=True, highlight=False,
                         end="" if last else "\n")
        self.c.file.flush()
        return more


class _Resized(Exception):
    """The terminal changed size while a key was awaited: the screen is drawn again."""


FOLLOW_POLL_S = 0.2  # a --follow wait: this long at a time, a key or a signal between (so a
                     # key is taken within this long)
RECHECK_S = 30.0     # a --follow wait looks at the whole queue again this often (expired claims)


class Review:
    def __init__(self, store: Any, q: Any, console: Any, *, follow: bool = False):
        self.store, self.q, self.c = store, q, console
        self.follow = follow
        self.me = reviewer()
        self.ids = self._pending()
        self.done: dict[str, str] = {}
        self.status: Text | None = None
        self.screen = Screen(console)
        self.claimed: str | None = None  # the draft this review holds a claim on
        self.skipped: set[str] = set()  # drafts a teammate held when this review came to them

    def _pending(self) -> list[str]:
        """Pending drafts, oldest first; --flagged by the findings of each text as it is now."""
        return [d.id for d in reversed(select_fresh(self.store, self.q, Rechecker(self.store)).drafts)]

    def _claim(self, did: str) -> str | None:
        """Claim ``did`` for this review (renewed at each screen; the previous one is let go):
        None when it is ours, else who is reviewing it now."""
        if self.claimed is not None and self.claimed != did:
            self._release()
        theirs = self.store.claim(did, self.me)
        if theirs is not None:
            return f"{theirs.who} ({theirs.holder})" if theirs.holder else theirs.who
        self.claimed = did
        return None

    def _release(self) -> None:
        did = self.claimed
        if did is not None:
            try:
                self.store.release(did, self.me)
            except (UsageError, OSError):
                pass  # it expires on its own
            self.claimed = None  # once let go (a signal before this: let go again, a no-op)

    def _wait_for_more(self, fd: int) -> bool:
        """--follow at the end of the queue: wait for new drafts (bounded waits, a key or a
        signal between them); False when the person pressed q."""
        self.c.file.write("\x1b[H\x1b[2J")
        done = len(self.done)
        self.c.print(Text(f"reviewed {done}; waiting for new drafts in "
                          f"{self.store.location} (q or Ctrl-C ends)", style="bold"),
                      highlight=False, crop=True)
        self.c.file.flush()
        self.store.wait_for_new(0)  # listening from now on: a draft saved while we look is seen
        old = termios.tcgetattr(fd)
        try:
            tty.setcbreak(fd, termios.TCSANOW)  # a key reaches us at once, not at Enter; typed-ahead keys kept
            return self._wait_loop(fd)
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, old)

    def _wait_loop(self, fd: int) -> bool:
        look, changed = True, True
        recheck = time.monotonic() + RECHECK_S
        while True:
            # a new draft, or now and then a claim that expired (a teammate's closed terminal)
            if changed or look:
                look = False
                fresh = [i for i in self._pending() if i not in self.ids and i not in self.skipped]
                if fresh:
                    self.ids.extend(fresh)
                    return True
            changed = self.store.wait_for_new(FOLLOW_POLL_S)
            if select.select([fd], [], [], 0)[0]:
                key = os.read(fd, 16)  # read here, in the mode set above
                if not key or key[:1] in (b"q", b"Q", b"\x04"):
                    return False
            if time.monotonic() >= recheck:
                self.skipped.clear()  # a teammate's claim may have expired: look again
                look, recheck = True, time.monotonic() + RECHECK_S

    def say(self, text: str, style: str = "") -> None:
        self.status = Text(text, style=style)

    def run(self) -> int:
        if not self.ids and not self.follow:
            self.c.print("no pending drafts" + (" match" if self.q.filtered else "") +
                         "; nothing to review", highlight=False, markup=False)
            return 0
        code = 0
        self.waiting = self.resize_pending = False

        def resized(signum: int, frame: Any) -> None:
            if self.waiting:  # only while a key is awaited: a screen is never drawn half
                raise _Resized()
            self.resize_pending = True  # mid-draw: drawn again once the screen is done

        try:
            previous = signal.signal(signal.SIGWINCH, resized)
        except (ValueError, OSError, AttributeError):  # not the main thread
            previous = None
        try:
            self._loop(sys.stdin.fileno())
        except KeyboardInterrupt:  # Ctrl-C at the keys: the review ends, with its summary
            code = EXIT_INTERRUPTED
        finally:
            try:
                self._release()
            except BaseException:
                # a signal as the clean-up began (a closing terminal's SIGHUP comes just after
                # the I/O error it caused): the claim is let go all the same, then it goes on
                self._release()
                raise
            if previous is not None:
                signal.signal(signal.SIGWINCH, previous)
        self.c.print()
        counts = {v: list(self.done.values()).count(v) for v in ("approved", "rejected")}
        self.c.print(Text(f"reviewed: {counts['approved']} approved, {counts['rejected']} "
                          f"rejected, {len(self.ids) - len(self.done)} left pending; nothing "
                          "was sent"), highlight=False)
        return code

    def _loop(self, fd: int) -> None:
        i, shown_id = 0, None
        while True:
            if i >= len(self.ids):
                if not self.follow or not self._wait_for_more(fd):
                    return
            if i < 0:
                i = 0
            did = self.ids[i]
            if did not in self.done:
                holder = self._claim(did)
                if holder is not None:  # a teammate has it on screen: never both at once
                    self.say(f"{did} is being reviewed by {holder}; skipped", "yellow")
                    self.skipped.add(did)
                    del self.ids[i]
                    continue
            try:
                d = self.store.get(did)
            except UsageError as e:  # deleted or damaged since the list was made
                self.say(f"{did}: {e.message}; skipped", "yellow")
                i += 1
                continue
            if did != shown_id:
                self.screen.offset, shown_id = 0, did
            checker = Rechecker(self.store)
            d = checker.fresh(d)  # findings of the text as it is now
            note = unchecked_note(d, checker)
            if did in self.done and self.status is None:
                self.say(f"(you {self.done[did]} it in this review)", "dim")
            status = self.status
            self.resize_pending = False  # the draw below reads the size as it is now
            more = self.screen.draw(i + 1, len(self.ids), d, note, status, KEYS)
            try:
                self.waiting = True
                if self.resize_pending:  # the window changed while it was drawn: draw it again
                    raise _Resized()
                key = read_key(fd)
            except _Resized:  # drawn again for the new size, the last result still shown
                continue
            finally:
                self.waiting = False
            self.status = None
            if key == "q":
                return
            if key in (" ", "j", "down"):
                if more:
                    self.screen.offset += self.screen.window
                else:
                    self.say("that is the end of the reply", "dim")
                continue
            if key in ("k", "up"):
                self.screen.offset = max(0, self.screen.offset - self.screen.window)
                continue
            if key == "b":
                i = max(0, i - 1)
                continue
            if key == "s":
                i += 1
                continue
            if key == "d":
                self._details(d, note)
                continue
            try:
                if key == "a":
                    i += self._approve(d, checker)
                elif key == "r":
                    i += self._reject(d)
                elif key == "e":
                    self._edit(d)
                elif key in ("\r", "\n"):
                    self.say("Enter does nothing here: one key each (a, r, e, s, b, d, q)", "yellow")
                else:
                    self.say(f"unknown key {key!r}", "yellow")
            except UsageError as e:  # changed meanwhile, already decided, an editor failure
                self.say(e.message, "yellow")

    def _approve(self, d: Any, checker: Rechecker) -> int:
        why = held_reason(d, checker)
        if why:  # never one keystroke: the finding shown, the word typed
            d = checker.verify(d)  # with what the floor found again, if anything (cached)
            self.say(f"⚑ {d.id} has {why}", "bold red")
            self.screen.draw(self.ids.index(d.id) + 1, len(self.ids), d, unchecked_note(d, checker),
                             self.status, f"type {CONFIRM_WORD} and Enter to approve it anyway; "
                                          "Enter alone goes back", reserve=1)
            typed = read_line(self.c, f"{CONFIRM_WORD}? ")
            if (typed or "").strip().lower() != CONFIRM_WORD:
                self.say(f"not approved: {d.id} is still pending", "yellow")
                return 0
        res = review(self.store, d.id, "approved", force=d.id in self.done, expect=d.version)
        self.done[d.id] = "approved"
        self.say(f"✓ approved {d.id} by {res.draft.meta.get('reviewed_by')}; nothing was sent",
                 "green")
        return 1

    def _reject(self, d: Any) -> int:
        self.screen.draw(self.ids.index(d.id) + 1, len(self.ids), d, None, None,
                         f"reject {d.id}: type the reason and Enter (Ctrl-C goes back)",
                         reserve=1)
        reason = read_line(self.c, "reason: ")
        if reason is None:
            self.say(f"not rejected: {d.id} is still pending", "yellow")
            return 0
        review(self.store, d.id, "rejected", reason=reason.strip() or None,
               force=d.id in self.done, expect=d.version)
        self.done[d.id] = "rejected"
        self.say(f"✗ rejected {d.id}; nothing was sent", "red")
        return 1

    def _edit(self, d: Any) -> None:
        self.c.file.write("\x1b[H\x1b[2J")
        self.c.file.flush()
        try:
            d2, changed = edit_draft(self.store, d.id, self.c, version=d.version, show=False)
        except EditNotSaved as e:
            self.c.print(Text(e.message, style="bold yellow"), highlight=False)
            self.c.print(Text("press a key to go back to the draft", style="dim"), highlight=False)
            read_key(sys.stdin.fileno())
            self.say(e.message, "yellow")
            return
        if not changed:
            self.say("no change: the text is as it was (nothing recorded)", "dim")
            return
        errors = len(d2.errors)
        self.say(f"✎ edited {d2.id} (version {d2.version}); grounding checks run again: "
                 + (f"{errors} error-level finding{'s' if errors != 1 else ''}" if errors
                    else "no error-level findings" if d2.findings_current
                    else "could not run, read it closely"), "magenta")

    def _details(self, d: Any, note: str | None) -> None:
        prov = provenance(d, sessions_dir())
        v = DraftView(self.c, d, prov, width=self.c.width, note=note)
        os.environ.setdefault("LESS", "-RX")
        with self.c.pager(styles=True):
            emit(self.c, show_lines(v, footer=False))


def register(app: typer.Typer) -> None:
    @app.command("review", short_help="Step through pending drafts: approve, reject, edit, skip.")
    def review_command(
        order: OrderOpt = None, customer: CustomerOpt = None, since: SinceOpt = None,
        ticket: TicketFilter = None, flagged: FlaggedOpt = False, drafts_dir: DraftsDirOpt = None,
        drafts_url: DraftsUrlOpt = None,
        follow: Annotated[bool, typer.Option(
            "--follow", "-f", help="at the end of the queue, wait for new drafts instead of "
                                   "ending (q or Ctrl-C ends)")] = False,
    ) -> None:
        """Step through pending drafts in a terminal, oldest first, one screen each: approve,
        reject, edit, skip, back, quit, one key each. Each draft on screen is claimed: two
        reviewers are never shown the same one (a claim left by a closed terminal expires in
        10 minutes). A draft a teammate changed meanwhile is shown again, not decided; one with
        an error-level grounding finding asks you to type "approve". Nothing is sent.

        Examples:

        \b
          agentcli review
          agentcli review --flagged --since 1d
          agentcli review --ticket HD-1042
          agentcli review --follow --drafts-url postgresql://kim@db/support
        """

        def body(store: Any) -> int:
            q = query("pending_review", order, customer, since, ticket, flagged, False)
            require_folder(store)
            if not (isatty(sys.stdin) and isatty(sys.stdout)):
                raise UsageError("agentcli review needs a terminal; from a script use "
                                 "`agentcli drafts approve/reject ... --yes`")
            c = out_console()
            store.on_wait = lock_notice(c)
            return Review(store, q, c, follow=follow).run()

        raise typer.Exit(run(lambda: using(drafts_dir, drafts_url, body)))
