"""``drafts export`` and ``drafts push``: approved drafts as the helpdesk's own requests (a dry
run that sends nothing), and those requests sent, once (``agentcli.helpdesk``).

Selection: the ids given, else the ``drafts list`` filters with approved drafts by default,
oldest first (notes land in the order the drafts were written); ``export`` leaves out drafts
already exported to that format (``--again`` writes them again), ``push`` drafts already
pushed. A draft that is not approved, or has no helpdesk ticket, is skipped with the reason.

Export writes one JSON object a line (the ``--json`` sink: redacted) to standard output, or to
``--output FILE`` (written whole, then renamed into place); once every line is written, each
draft's ``exported`` record says when, by whom, in which format and where to. Push prints one
line per draft (``--json``: one object per draft) and a summary on stderr; its exit status is
``helpdesk.push.exit_code``'s.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.text import Text

from ..config import resolve_setting
from ..drafts.format import Draft, now_iso
from ..drafts.queue import (
    is_pushed,
    query,
    require_folder,
    resolve_draft_id,
    reviewer,
    select,
)
from ..errors import ConfigError, UsageError, replace_file
from ..helpdesk import FORMATS, HELPDESKS
from ..helpdesk.export import Planned, exported_to, plan
from ..helpdesk.rules import check_base_url
from ..redact import add_secret, one_line
from ..stdio import isatty
from .common import err_console, json_line, lock_notice, out_console, say_err, warn
from .layout import print_lines, wrapped


def _format(value: str, allowed: tuple[str, ...]) -> str:
    v = (value or "").strip().lower().replace(" ", "").replace("-", "")
    if v not in allowed:
        raise UsageError(f"--to {one_line(value, 30)!r}: choose {', '.join(allowed)}")
    return v


def select_drafts(store: Any, ids: list[str], filters: tuple, *, status: str | None,
                  done: Any) -> tuple[list[Draft], list[Planned]]:
    """(the drafts to go, the ones skipped before planning: not approved). ``done(d)`` is True
    for a draft already handled, left out of a filter's selection (by id it is kept: the
    command says so)."""
    require_folder(store)
    store.on_wait = lock_notice(err_console())
    wanted = status or "approved"
    if ids:
        drafts = [store.get(resolve_draft_id(store, t)) for t in dict.fromkeys(ids)]
    else:
        q = query(wanted, *filters, False)
        sel = select(store, q)
        warn([f"damaged draft file {d.path.name} ({d.reason})" for d in sel.damaged])
        drafts = [d for d in sel.drafts if not done(d)]
    drafts.sort(key=lambda d: (d.meta.get("created_at") or "", d.id))
    go, skipped = [], []
    for d in drafts:
        st = d.meta.get("status")
        if st != wanted:
            skipped.append(Planned(d, None, f"it is {st}, not {wanted}"))
        else:
            go.append(d)
    return go, skipped


def _skip_line(p: Planned) -> str:
    return f"agentcli: {p.draft.id}: skipped: {one_line(p.skipped, 300)}"


def _write_output(path: Path, lines: list[str]) -> None:
    """All the lines into ``path`` at once (a temp file beside it, then renamed: a reader never
    sees half an export; owner-only, it holds customers' replies)."""
    data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")
    try:  # the export is in place or not begun: never a temporary file left
        replace_file(path, data, prefix=".export-")
    except OSError as e:
        raise UsageError(f"--output {one_line(str(path), 200)}: cannot write there "
                         f"({e.strerror or e})") from None


def export_body(store: Any, fmt: str, ids: list[str], filters: tuple, *, status: str | None,
                output: Path | None, again: bool) -> int:
    fmt = _format(fmt, FORMATS)
    go, skipped = select_drafts(store, ids, filters, status=status,
                                done=lambda d: not again and exported_to(d, fmt) is not None)
    planned = [plan(d, fmt) for d in go]
    skipped += [p for p in planned if p.record is None]
    records = [p for p in planned if p.record is not None]
    lines = [json_line(p.record) for p in records]
    if output is not None:
        _write_output(output, lines)
    else:
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
    for p in skipped:
        say_err(_skip_line(p))
    where = str(output) if output is not None else "standard output"
    who = reviewer()
    for p in records:  # written whole: now say so in each draft
        value = {fmt: {"when": now_iso(), "who": who, "to": where}}  # merged with other formats
        store.remote(p.draft.id, "exported", value, who=who,
                     reason=f"exported as a {fmt} request to {where} (drafts export; nothing sent)")
    say_err(f"agentcli: {len(records)} exported as {fmt}" +
            (f", {len(skipped)} skipped" if skipped else "") + f" ({where}; nothing was sent)")
    return 1 if skipped else 0


def _credentials(name: str) -> tuple[str, str]:
    hd = HELPDESKS[name]
    base = check_base_url(hd, resolve_setting(f"{name}_url"))
    token = resolve_setting(f"{name}_token")
    if not isinstance(token, str) or not token.strip():
        raise ConfigError(f"no {hd.title} token: set {hd.env_token} (or {name}_token in "
                          "agentcli.toml)")
    token = token.strip()
    if any(c.isspace() or ord(c) < 32 for c in token) or not token.isascii():
        raise ConfigError(f"the {hd.title} token in {hd.env_token} holds spaces, controls or "
                          "non-ASCII characters")
    add_secret(token)  # from agentcli.toml too: hidden in every output from now on
    return base, token


def push_body(store: Any, name: str, ids: list[str], filters: tuple, *, json_: bool,
              timeout: float | None) -> int:
    from ..helpdesk import push as pushing  # the HTTP client (httpx2): only for a push

    name = _format(name, tuple(HELPDESKS))
    hd = HELPDESKS[name]
    base, token = _credentials(name)
    wait = resolve_setting("helpdesk_timeout", timeout)
    go, skipped = select_drafts(store, ids, filters, status=None,
                                done=is_pushed)
    outcomes = [pushing.Outcome(p.draft.id, p.draft.ticket, "skipped", p.skipped or "")
                for p in skipped]
    who = reviewer()
    with pushing.Sender(hd, base, token, timeout=wait) as sender:
        pusher = pushing.Pusher(store, hd, sender, who, say=lambda s: say_err(f"agentcli: {s}"))
        for o in outcomes:
            _show(o, name, json_)
        for d in go:
            o = pusher.push_one(d)
            outcomes.append(o)
            _show(o, name, json_)
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    order = ("pushed", "already", "skipped", "busy", "failed", "unknown")
    said = ", ".join(f"{counts[k]} {k}" for k in order if counts.get(k))
    say_err(f"agentcli: {hd.title}: {said or 'no approved drafts to push'}")
    return pushing.exit_code(outcomes)


def _show(o: Any, name: str, json_: bool) -> None:
    """One line per draft: pushed (or already there) on stdout, anything else on stderr;
    with ``--json`` every draft's record on stdout as well."""
    ok = o.status in ("pushed", "already")
    if json_:
        sys.stdout.write(json_line(o.record(name)) + "\n")
    elif ok and isatty(sys.stdout):  # wrapped at words: no id broken by the terminal
        c = out_console()
        print_lines(c, wrapped(c, Text(f"{o.status}  {o.draft}  {one_line(o.message, 300)}",
                                       style="green" if o.status == "pushed" else ""), c.width, 2))
    elif ok:
        sys.stdout.write(f"{o.status}\t{o.draft}\t{one_line(o.message, 300)}\n")
    sys.stdout.flush()
    if not ok:
        say_err(f"agentcli: {o.draft}: {o.status}: {one_line(o.message, 300)}")
