"""Screens that fit the terminal they are drawn on: tables whose columns are chosen for the width
(a column that cannot fit is dropped, never wrapped), lines wrapped at words, previews of what a
reply says.

    fit_columns(cols, rows, width)     which columns, how wide: whole columns (ids, tickets,
                                       order codes, ages) at their full width or not at all,
                                       cuttable ones (a customer, a preview) ellipsized down to
                                       their minimum; by importance, a column joins when it
                                       fits beside the more important ones
    table_lines(cols, rows, width)     the table as one ``Text`` per screen line (header, rule,
                                       rows), none wider than ``width``
    print_lines(console, lines)        print them uncut and unwrapped (each already fits)
    write_line(console, text, style)   one line that fits, written as rich would print it
                                       (``wrap=True``: a wider one broken at spaces, as rich does)
    plain_paragraph(console, text)     a plain one-paragraph answer as rich's Markdown prints it
    wrapped(console, text, width)      a ``Text`` as the lines a terminal shows: wrapped at
                                       spaces, a word longer than the line folded (rich's rules)
    preview(text, width)               one line of what a reply says: the greeting and the
                                       thanks-for-writing sentence skipped, cut with "…"
    age(iso), short_status(status)     "3h", "2d"; "pending" for pending_review

Every cell is text from a file or a model: cleaned (``one_line``) before it gets here.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Sequence

from rich.cells import cell_len
from rich.console import COLOR_SYSTEMS
from rich.text import Text

from ..redact import clean_for_terminal, one_line

SHORT_STATUS = {"pending_review": "pending"}
GROW_FIRST = 40  # cells a growing column (a preview) gets before cut columns grow


@dataclass(frozen=True)
class Col:
    key: str
    header: str
    keep: int                  # 0: never dropped; higher: dropped sooner
    cut: int | None = None     # None: whole or not at all; else ellipsized down to this width
    cap: int | None = None     # never wider than this
    grow: bool = False         # takes the width left over (the preview)
    right: bool = False        # numbers
    width: int = 0             # decided by fit_columns


def _cell(v: Any) -> Text:
    return v if isinstance(v, Text) else Text(str(v))


def fit_columns(cols: Sequence[Col], rows: Sequence[dict[str, Any]], width: int,
                gap: int = 2) -> list[Col]:
    """The columns to draw at ``width`` and their widths (see the module docstring). Columns
    whose every cell is empty are left out (a list with no customers has no customer column)."""
    natural: dict[str, int] = {}
    kept: list[Col] = []
    for c in cols:
        cells = [_cell(r.get(c.key, "")) for r in rows]
        if c.keep and rows and not any(x.plain.strip() for x in cells):
            continue
        n = max([cell_len(c.header)] + [x.cell_len for x in cells])
        natural[c.key] = min(n, c.cap) if c.cap else n
        kept.append(c)

    def need(c: Col) -> int:
        n = natural[c.key]
        return min(n, max(c.cut, cell_len(c.header))) if c.cut is not None else n

    def total(cs: list[Col]) -> int:
        return sum(need(c) for c in cs) + gap * max(0, len(cs) - 1)

    # by importance: a column joins when it fits beside the more important ones (a narrow
    # column can still join after a wide one could not)
    chosen = [c for c in kept if not c.keep]
    for c in sorted((c for c in kept if c.keep), key=lambda c: c.keep):
        if total(chosen + [c]) <= width:
            chosen.append(c)
    kept = [c for c in kept if c in chosen]
    widths = {c.key: need(c) for c in kept}
    left = width - total(kept)

    def give(c: Col, upto: int) -> None:
        nonlocal left
        more = max(0, min(left, min(upto, natural[c.key]) - widths[c.key]))
        widths[c.key] += more
        left -= more

    growing = [c for c in kept if c.grow]
    for c in growing:  # the preview first gets a readable width, ...
        give(c, GROW_FIRST)
    for c in sorted((c for c in kept if c.cut is not None and not c.grow), key=lambda c: c.keep):
        give(c, natural[c.key])  # ... then cut columns their whole width, then the preview the rest
    for c in growing:
        give(c, natural[c.key])
    if total(kept) > width:  # only never-dropped columns left, and still too wide: cut them
        over = total(kept) - width
        for c in reversed(kept):
            take = min(over, widths[c.key] - 1)
            widths[c.key] -= take
            over -= take
    return [replace(c, width=max(1, widths[c.key])) for c in kept]


def table_lines(cols: Sequence[Col], rows: Sequence[dict[str, Any]], width: int, *,
                gap: int = 2, rule: bool = True) -> list[Text]:
    """The table as screen lines (header, a rule, one line per row), each at most ``width``."""
    fitted = fit_columns(cols, rows, width, gap)
    sep = " " * gap

    def line(cells: list[Text]) -> Text:
        out = Text()
        for i, (c, cell) in enumerate(zip(fitted, cells)):
            t = cell.copy()
            t.no_wrap = True
            if t.cell_len > c.width:
                t.truncate(c.width, overflow="ellipsis")
            if i < len(fitted) - 1:
                pad = c.width - t.cell_len
                t = Text(" " * pad) + t if c.right else t + Text(" " * pad)
                out.append_text(t)
                out.append(sep)
            else:
                if c.right:
                    t = Text(" " * (c.width - t.cell_len)) + t
                out.append_text(t)
        out.rstrip()
        return out

    lines = [line([Text(c.header, style="bold") for c in fitted])]
    if rule:
        used = sum(c.width for c in fitted) + gap * max(0, len(fitted) - 1)
        lines.append(Text("─" * min(width, used), style="dim"))
    lines += [line([_cell(r.get(c.key, "")) for c in fitted]) for r in rows]
    return lines


def print_lines(console: Any, lines: Sequence[Text]) -> None:
    for ln in lines:
        console.print(ln, no_wrap=True, overflow="crop", crop=True, soft_wrap=False,
                      highlight=False)


def write_line(console: Any, text: str, style: str = "", *, wrap: bool = False) -> bool:
    """Write ``text`` and a newline exactly as ``console.print(Text(text, style=style),
    soft_wrap=True, highlight=False)`` does, without rich's rendering pipeline (options, segments,
    the buffer: most of the time a trace line takes), and return True; or write nothing and
    return False when that is not certain: a line that is not all printable characters (a tab, a
    control, a separator, an invisible format character), has trailing spaces, is wider than the
    console, or a console that records, is quiet or has a base style. The bytes are those of
    rich's own ``Style.render`` for the console's colour system (colours dropped under
    ``no_color``, as rich does); tests/test_render_terminal.py holds both ways equal.

    ``wrap``: as ``console.print(Text(text, style=style), soft_wrap=False, highlight=False)``
    instead: a line wider than the console is broken at spaces where rich breaks it (its
    ``divide_line`` and ``rstrip_end`` rules, ``_wrap_at_spaces``), each piece styled apart; a
    word wider than a line (rich would fold it) is left to rich."""
    if (not text.isprintable() or text != text.rstrip() or console.record or console.quiet
            or console.style):
        return False
    width = console.width
    if cell_len(text) <= width:
        lines = [text]
    elif not wrap or (lines := _wrap_at_spaces(text, width)) is None:
        return False
    system = console.color_system
    if style and system is not None:
        st = console.get_style(style)
        if console.no_color:
            st = st.without_color
        if st:
            render, colors = st.render, COLOR_SYSTEMS[system]
            lines = [render(ln, color_system=colors) for ln in lines]
    console.file.write("\n".join(lines) + "\n")
    console.file.flush()
    return True


# rich's words (``\s*\S+\s*``) on a printable line, whose only whitespace is the space
_WORDS = re.compile(r" *[^ ]+ *")


def _wrap_at_spaces(text: str, width: int) -> list[str] | None:
    """The lines rich wraps a printable ``text`` into at ``width`` cells (``Text.wrap``: a word
    goes to the next line when it does not fit the rest of this one, its spaces with it; a
    line's trailing spaces past ``width`` characters dropped), or None when a word is wider
    than a line or a line would still be wider than ``width`` (rich folds and crops: left to
    it)."""
    cuts: list[int] = []
    used = 0
    for m in _WORDS.finditer(text):
        word = m.group()
        need = cell_len(word.rstrip(" "))
        if width - used >= need:
            used += cell_len(word)
        elif need > width:
            return None
        else:
            cuts.append(m.start())
            used = cell_len(word)
    lines = []
    for a, b in zip([0, *cuts], [*cuts, len(text)]):
        ln = text[a:b]
        if len(ln) > width:  # rich's rstrip_end counts characters
            ln = ln[:max(len(ln.rstrip(" ")), width)]
        if cell_len(ln) > width:
            return None
        lines.append(ln)
    return lines


# what CommonMark (with rich's strikethrough and tables) reads inside a line: escapes, code,
# emphasis, links and images, autolinks and HTML, entities, strikethrough, table cells
_MARKDOWN_INLINE = frozenset("\\`*_[]!<>&~|")


def plain_paragraph(console: Any, text: str) -> str | None:
    """What ``console.print(Markdown(text), soft_wrap=False)`` writes, for a ``text`` that is
    one plain paragraph (one printable line, single spaces, none of the characters Markdown
    reads inside a line, no block marker or digit first) on a console where a paragraph has no
    style: its lines wrapped at spaces as rich wraps them, each padded to the width (a paragraph
    is justified left). None when that is not certain: rich renders it (markdown-it's parse and
    rich's rendering were two thirds of drawing an ordinary answer). tests/test_render_terminal.py
    holds both ways equal."""
    if (not text or not text.isprintable() or text != text.strip() or "  " in text
            or not _MARKDOWN_INLINE.isdisjoint(text) or text[0] in "#>-+=" or text[0].isdigit()
            or console.record or console.quiet or console.style
            or console.get_style("markdown.paragraph", default="none")):
        return None
    width = console.width
    if cell_len(text) <= width:
        lines = [text]
    elif (lines := _wrap_at_spaces(text, width)) is None:
        return None
    return "".join(ln + " " * (width - cell_len(ln)) + "\n" for ln in lines)


_TOKENS = re.compile(r"(?:[^\s]|\u00a0)+|\s+")  # a no-break space holds words together


def _cells_to(word: str, room: int) -> int:
    """How many characters of ``word`` fit in ``room`` cells (at least one)."""
    used = 0
    for i, ch in enumerate(word):
        used += cell_len(ch)
        if used > room:
            return max(1, i)
    return len(word)


def _split_at(word: str, room: int) -> int:
    """Where to break a word longer than a line: after the last "/" that fits (a path stays
    readable), else after the last "-", else at the line's end (rich's fold)."""
    fit = _cells_to(word, room)
    for ch in "/-":
        cut = word.rfind(ch, 0, fit)
        if cut >= max(1, fit // 3):
            return cut + 1
    return fit


def wrapped(console: Any, text: Text, width: int | None, indent: int = 0) -> list[Text]:
    """``text`` as the lines a terminal of ``width`` shows: wrapped at spaces, continuation
    lines indented by ``indent``; a word longer than a line (a long path) is broken after a
    "/" where it can be, else folded. An id, an order code or a session id is never broken at
    40 columns or more: it is shorter than a line. ``width`` None: one line, as it is."""
    t = text.copy()
    t.no_wrap = True
    if "\t" in t.plain:
        t = t.expand_tabs(4) or t
    if width is None:
        return [t]
    width = max(4, width)
    indent = min(indent, width // 2)
    plain = t.plain
    lines: list[Text] = []
    start = 0          # where the current line starts in ``plain``
    end = 0            # where its last word ends
    used = 0           # cells on the current line
    room = width

    def emit(a: int, b: int) -> None:
        piece = t[a:b]
        piece.rstrip()
        lines.append(Text(" " * indent) + piece if lines and indent else piece)

    for m in _TOKENS.finditer(plain):
        tok = m.group()
        if tok.isspace():
            continue
        a, b = m.start(), m.end()
        gap = cell_len(plain[end:a]) if used else cell_len(plain[start:a])
        w = cell_len(tok)
        if used and used + gap + w <= room:
            used, end = used + gap + w, b
            continue
        if not used and gap + w <= room:  # the first word of the text, after its own indent
            used, end = gap + w, b
            continue
        left = room - used - gap
        if w > width - indent and left >= 8:  # a long path starts on this line
            cut = a + _split_at(tok, left)
            emit(start, cut)
            room, start, used = width - indent, cut, 0
            while cell_len(plain[start:b]) > room:
                cut = start + _split_at(plain[start:b], room)
                emit(start, cut)
                start = cut
            used, end = cell_len(plain[start:b]), b
            continue
        if used:
            emit(start, end)
            room = width - indent
        start, used = a, 0
        while cell_len(plain[start:b]) > room:  # longer than a whole line
            cut = start + _split_at(plain[start:b], room)
            emit(start, cut)
            room = width - indent
            start = cut
        used, end = cell_len(plain[start:b]), b
    if used or not lines:
        emit(start, end if used else len(plain))
    return lines


def fit_path(path: Any, width: int) -> str:
    """A path on one line of ``width``: whole when it fits, else its end ("…/team/drafts")."""
    s = one_line(clean_for_terminal(str(path)), 400)
    if cell_len(s) <= width:
        return s
    tail = s[-max(1, width - 1):]
    cut = tail.find("/")
    if 0 <= cut < len(tail) - 1 and len(tail) - cut >= width // 2:
        tail = tail[cut:]
    return "…" + tail


# --------------------------------------------------------------------------- what a reply says

@functools.cache
def _reply_res() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(greeting, pleasantry): compiled on first use (a list of drafts), not by every command
    that imports this module (``ask`` never shows a gist: ~0.8 ms of its start)."""
    greeting = re.compile(
        r"^\s*(?:hi|hello|hey|dear|greetings|good\s+(?:morning|afternoon|evening|day))"
        r"(?:\s+[\w.'’-]+){0,4}\s*(?:[,!:;]|\n|$)", re.IGNORECASE)
    pleasantry = re.compile(
        r"^\s*(?:(?:many\s+)?thank(?:s|\s+you)(?:\s+(?:so|very)\s+much)?(?:\s+(?:for|again)\b"
        r"[^.!?\n]{0,160})?[.!?]"
        r"|i\s+hope\s+(?:this|you)[^.!?\n]{0,100}[.!?]"
        r"|(?:we|i)\s+(?:hope|trust)\s+you[^.!?\n]{0,100}[.!?])\s*", re.IGNORECASE)
    return greeting, pleasantry


def reply_gist(text: str) -> str:
    """The reply without its greeting and thanks-for-writing sentences (the whole text when
    nothing else is left), on one line."""
    flat = clean_for_terminal(str(text or ""))
    greeting, pleasantry = _reply_res()
    rest = greeting.sub("", flat, count=1)
    for _ in range(3):
        nxt = pleasantry.sub("", rest, count=1)
        if nxt == rest:
            break
        rest = nxt
    gist = " ".join(rest.split())
    return gist or " ".join(flat.split())


def preview(text: str, width: int, *, greeting: bool = False) -> str:
    """One line of at most ``width`` cells of what a reply says (``greeting``: from its start)."""
    s = " ".join(clean_for_terminal(str(text or "")).split()) if greeting else reply_gist(text)
    s = one_line(s, 2000)
    if cell_len(s) <= width:
        return s
    t = Text(s)
    t.truncate(max(1, width), overflow="ellipsis")
    return t.plain


def age(iso: Any, now: datetime | None = None) -> str:
    """How long ago: "now", "12m", "3h", "2d", "5w", "1y"; "?" for a time that is not one."""
    try:
        t = datetime.fromisoformat(str(iso))
        if t.tzinfo is None:
            t = t.replace(tzinfo=timezone.utc)
        secs = ((now or datetime.now(timezone.utc)) - t).total_seconds()
    except (TypeError, ValueError, OverflowError):
        return "?"
    if secs < 60:
        return "now" if secs > -300 else "?"
    for unit, size in (("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600)):
        if secs >= size * (1 if unit != "w" else 2):
            return f"{int(secs // size)}{unit}"
    return f"{int(secs // 60)}m"


def short_status(status: Any) -> str:
    s = one_line(str(status or "?"), 20)
    return SHORT_STATUS.get(s, s)
