"""``drafts migrate`` (the queue's schema; a folder copied into a queue, or a queue into a
folder) and ``drafts stats`` (how review is going). Either backend; nothing is ever sent."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..config import resolve_setting
from ..drafts.backends import create_schema, is_queue_url, open_drafts
from ..drafts.format import Draft
from ..drafts.queue import require_folder
from ..drafts.stats import compute, lines
from ..errors import UsageError
from ..redact import one_line
from ..vocab import parse_since
from .common import dump_json, err_console, lock_notice, warn


def schema_body(url_flag: Any) -> int:
    """``drafts migrate --schema``: create (or check) the queue's schema, explicitly."""
    url = resolve_setting("drafts_url", url_flag)
    if not url:
        raise UsageError("--schema needs the queue: --drafts-url postgresql://... (or "
                         "AGENTCLI_DRAFTS_URL, or drafts_url in agentcli.toml)")
    print(create_schema(url))
    return 0


def migrate_body(source: Any, to: str) -> int:
    """Copy every draft of ``source`` into ``to`` (a queue URL or a folder), as it is: text byte
    for byte, status, history, findings, ticket, provenance. A draft already there (same id) is
    left as it is, so running it twice copies nothing twice. A damaged file is named and not
    copied (exit 1)."""
    require_folder(source)
    to = to.strip()
    if is_queue_url(to):
        dest = open_drafts(url=to, folder=None)
    elif "://" in to:
        raise UsageError("--to takes a postgresql://... URL or a folder")
    else:
        folder = Path(to).expanduser().absolute()
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"--to {one_line(str(folder), 200)} is not a folder")
        dest = open_drafts(url=None, folder=folder)
    try:
        if dest.location == source.location:
            raise UsageError("--to names the drafts store the drafts come from")
        dest.on_wait = lock_notice(err_console())
        copied = kept = 0
        damaged = []
        for d in source.iter():
            if not isinstance(d, Draft):
                damaged.append(d)
                continue
            if dest.import_draft(d):
                copied += 1
            else:
                kept += 1
    finally:
        dest.close()
    warn([f"damaged draft file {one_line(d.path.name, 80)} not copied ({d.reason})"
          for d in damaged])
    print(f"copied {copied} draft{'s' if copied != 1 else ''} from {one_line(source.location, 200)} "
          f"to {one_line(dest.location, 200)}"
          + (f"; {kept} already there, left as they are" if kept else "")
          + (f"; {len(damaged)} damaged not copied" if damaged else ""))
    sys.stdout.flush()
    return 1 if damaged else 0


def stats_body(store: Any, *, since: str | None, json_: bool) -> int:
    require_folder(store)
    target = resolve_setting("review_target")
    when = parse_since(since)
    st = compute(store.newest(since=when), target=target, since=when)
    st["drafts"] = store.location
    if json_:
        dump_json(st)
        return 0
    out = sys.stdout
    out.write(f"drafts in {one_line(store.location, 200)}"
              + (f" created since {when.isoformat(timespec='minutes')}" if when else "") + "\n")
    for ln in lines(st):
        out.write(one_line(ln, 400) + "\n")
    return 0
