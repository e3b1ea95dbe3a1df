"""The drafts queue on PostgreSQL: one queue for a team on several machines.

Imported only for a ``postgresql://`` drafts URL (``backends.open_drafts``); the only module of
the drafts that imports psycopg. The same operations, with the same meaning, as the folder
(``store.DraftStore``): the rules are ``base.apply_*`` on a ``Draft`` loaded in the
transaction that writes it.

- **Schema** by an explicit command only (``agentcli drafts migrate --schema``), its version in
  ``agentcli_drafts_schema``; no schema, an older or a newer one: exit 3, one line saying what to
  do. Nothing is created silently on a production database.
- **Idempotent ids.** A draft's id is the hash of (ticket, text), its primary key, and
  ``(ticket, saved_sha256)`` is unique too: two machines saving the same reply in the same
  ticket make one row (``INSERT ... ON CONFLICT DO NOTHING``). A ticket's saves are serialised
  by a transaction-scoped advisory lock, so a ticket never has two live drafts.
- **No lost update.** Every change is one transaction: the row ``SELECT ... FOR UPDATE``, the
  version check (``expect``), the new row, the history entries. ``rev`` counts the row's
  changes; the staff's functions change a row only at the ``rev`` they read.
- **Append-only history** (``agentcli_draft_history``): rows are only inserted; no role needs
  UPDATE or DELETE on it.
- **Claims** (``agentcli_draft_claims``): a row per draft on a reviewer's screen, with an
  expiry; claiming is one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE expired or ours`` (the
  next free draft: ``FOR UPDATE SKIP LOCKED``), so two reviewers never hold the same draft.
- **LISTEN/NOTIFY**: a new draft notifies ``agentcli_drafts`` at commit; ``wait_for_new`` listens
  with a bounded wait (``review --follow``).
- **Least privilege** (``ROLES_SQL``, in the README): staff insert drafts (never their status:
  column grants) and read the queue; superseding a ticket's older draft and storing findings go
  through ``SECURITY DEFINER`` functions that do only that; reviewers update drafts and claims.
  A missing grant is one line naming the grant (exit 3).
- **Sinks**: what is written is redacted as the folder's files are (``store.save_fields``,
  ``base.clean_*``); text is stored as bytes (``surrogateescape``), so a migrated draft keeps
  its text byte for byte (NUL included); other values as JSON text (ASCII, escaped).
- **Secrets**: the URL's password never reaches a message (``masked``).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from ..config import where_set
from ..errors import ConfigError, UsageError
from ..redact import (
    add_secret,
    dsn_passwords,
    mask_dsn,
    redact,
    redact_obj,
    scrub_dsn,
    url_userinfo,
)
from .base import (
    ANY,
    CLAIM_TTL_S,
    Claim,
    DraftsFolderError,
    Probe,
    SaveFailed,
    _record,
    _reopen,
    apply_findings,
    apply_remote,
    apply_status,
    apply_text,
    claim_holder,
    clean_findings,
    clean_text,
    new_entries,
    one_live,
    resolve_reviewer,
    same_customer,
)
from .format import (
    ID_RE,
    REMOTE_FIELDS,
    STATUSES,
    Damaged,
    Draft,
    bounded,
    draft_id,
    no_surrogates,
    now_iso,
    reopen_check,
    safe_ticket,
    text_hash,
)
from .store import moved_fields, save_fields

try:  # the optional extra 'agentcli[postgres]'
    import psycopg
    from psycopg.conninfo import conninfo_to_dict
except ImportError:  # pragma: no cover - the test extra installs it
    psycopg = conninfo_to_dict = None  # type: ignore[assignment]

SCHEMA_VERSION = 1
CONNECT_TIMEOUT = 5
ACQUIRE_TIMEOUT = 10.0
LOCK_TIMEOUT_MS = 10_000        # a row or ticket held longer by a teammate: said, not waited on
IDLE_CHECK_S = 30.0             # a connection idle this long is tried before it is used
CHANNEL = "agentcli_drafts"
PREFIX = "drafts-queue"         # a draft's "path": never the URL (the model sees it)

# Columns that change after a save, each JSON text (NULL: the key is absent from the header).
REVIEW_KEYS = ("superseded_by", "reviewed_by", "reviewed_at", "review_reason",
               "approved_sha256", "approved_text", "findings", "findings_sha256", "original_text",
               "push", "exported")
FIXED_OUT = ("status", "history", "text") + REVIEW_KEYS

SCHEMA_SQL = """
CREATE TABLE agentcli_drafts_schema (
  version integer NOT NULL,
  migrated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE agentcli_drafts (
  id text PRIMARY KEY CHECK (id ~ '^d-[0-9a-f]{12}$'),
  ticket text NOT NULL,          -- JSON text of the ticket (a filter: any text fits)
  saved_sha256 text NOT NULL,
  status text NOT NULL DEFAULT 'pending_review'
    CHECK (status IN ('pending_review', 'approved', 'rejected', 'superseded')),
  created_at timestamptz NOT NULL,
  order_code text,
  customer text,
  meta text NOT NULL,
  body bytea NOT NULL,
  superseded_by text, reviewed_by text, reviewed_at text, review_reason text,
  approved_sha256 text, approved_text text, findings text, findings_sha256 text,
  original_text text,
  push text, exported text,       -- what the helpdesk side recorded (drafts push / export)
  reviewer text,
  decided_at timestamptz,
  rev bigint NOT NULL DEFAULT 1,
  UNIQUE (ticket, saved_sha256)
);
CREATE INDEX agentcli_drafts_newest ON agentcli_drafts (created_at DESC, id DESC);
CREATE INDEX agentcli_drafts_status ON agentcli_drafts (status, created_at);
CREATE INDEX agentcli_drafts_ticket ON agentcli_drafts (ticket);
CREATE TABLE agentcli_draft_history (
  seq bigserial PRIMARY KEY,
  draft_id text NOT NULL REFERENCES agentcli_drafts (id),
  entry text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agentcli_draft_history_draft ON agentcli_draft_history (draft_id, seq);
CREATE TABLE agentcli_draft_claims (
  draft_id text PRIMARY KEY REFERENCES agentcli_drafts (id),
  token text NOT NULL,
  who text NOT NULL,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);
-- The staff's only writes to a saved draft: superseding it (a newer draft of its ticket) or
-- reviving it (saved again), and storing the findings of its text; each at the row's rev.
CREATE FUNCTION agentcli_supersede(p_id text, p_rev bigint, p_by text, p_entry text)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
  UPDATE agentcli_drafts SET status = 'superseded', superseded_by = p_by, rev = rev + 1
   WHERE id = p_id AND rev = p_rev AND status = 'pending_review';
  IF NOT FOUND THEN RETURN false; END IF;
  INSERT INTO agentcli_draft_history (draft_id, entry) VALUES (p_id, p_entry);
  RETURN true;
END $$;
CREATE FUNCTION agentcli_revive(p_id text, p_rev bigint, p_entry text)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
  UPDATE agentcli_drafts SET status = 'pending_review', superseded_by = NULL, rev = rev + 1
   WHERE id = p_id AND rev = p_rev AND status = 'superseded';
  IF NOT FOUND THEN RETURN false; END IF;
  INSERT INTO agentcli_draft_history (draft_id, entry) VALUES (p_id, p_entry);
  RETURN true;
END $$;
CREATE FUNCTION agentcli_set_findings(p_id text, p_rev bigint, p_findings text, p_sha text,
                                      p_entry text)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
  UPDATE agentcli_drafts SET findings = p_findings, findings_sha256 = p_sha, rev = rev + 1
   WHERE id = p_id AND rev = p_rev;
  IF NOT FOUND THEN RETURN false; END IF;
  IF p_entry IS NOT NULL THEN
    INSERT INTO agentcli_draft_history (draft_id, entry) VALUES (p_id, p_entry);
  END IF;
  RETURN true;
END $$;
REVOKE ALL ON FUNCTION agentcli_supersede(text, bigint, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agentcli_revive(text, bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agentcli_set_findings(text, bigint, text, text, text) FROM PUBLIC;
INSERT INTO agentcli_drafts_schema (version) VALUES (1);
"""

# The roles a team creates once (README "A drafts queue for a team"); a person's login role is
# then granted one of them: GRANT agentcli_staff TO ana; GRANT agentcli_reviewer TO kim;
ROLES_SQL = """\
CREATE ROLE agentcli_staff NOLOGIN;
GRANT SELECT ON agentcli_drafts_schema, agentcli_drafts, agentcli_draft_history,
  agentcli_draft_claims TO agentcli_staff;
GRANT INSERT (id, ticket, saved_sha256, created_at, order_code, customer, meta, body,
  findings, findings_sha256, original_text) ON agentcli_drafts TO agentcli_staff;
GRANT INSERT ON agentcli_draft_history TO agentcli_staff;
GRANT USAGE ON SEQUENCE agentcli_draft_history_seq_seq TO agentcli_staff;
GRANT EXECUTE ON FUNCTION agentcli_supersede(text, bigint, text, text),
  agentcli_revive(text, bigint, text),
  agentcli_set_findings(text, bigint, text, text, text) TO agentcli_staff;
CREATE ROLE agentcli_reviewer NOLOGIN IN ROLE agentcli_staff;
GRANT INSERT, UPDATE ON agentcli_drafts TO agentcli_reviewer;
GRANT INSERT, UPDATE, DELETE ON agentcli_draft_claims TO agentcli_reviewer;
"""

COLUMNS = ("id, ticket, status, created_at, meta, body, " + ", ".join(REVIEW_KEYS) + ", rev")
# What each operation needs, for the line that says which grant is missing.
NEEDS = {
    "read": ("read the drafts queue", "GRANT agentcli_staff TO {user}"),
    "save": ("save drafts in the queue", "GRANT agentcli_staff TO {user}"),
    "review": ("change a draft's status or text", "GRANT agentcli_reviewer TO {user}"),
    "claim": ("claim drafts for review", "GRANT agentcli_reviewer TO {user}"),
    "findings": ("store grounding findings", "GRANT agentcli_staff TO {user}"),
    "remote": ("record a helpdesk push or export", "GRANT agentcli_reviewer TO {user}"),
    "import": ("copy decided drafts into the queue (drafts migrate)",
               "GRANT agentcli_reviewer TO {user}"),
    "schema": ("create the queue's tables", "run it as the database's owner"),
}


def _modules() -> None:
    if psycopg is None:
        raise ConfigError("PostgreSQL support is not installed: pip install 'agentcli[postgres]' "
                          "(psycopg 3 and psycopg-pool)")


def _parsed_password(url: str) -> Any:
    """The password as psycopg's own parser reads URL (None when it cannot read it)."""
    with contextlib.suppress(Exception):
        return conninfo_to_dict(url).get("password")
    return None


def _passwords(url: str) -> list[str]:
    return dsn_passwords(url, _parsed_password(url))


def masked(url: str) -> str:
    return scrub_dsn(mask_dsn(url), url, _parsed_password(url))


def _reason(exc: BaseException, url: str) -> str:
    """One short line from a libpq error, without its password or its 'FATAL:' noise."""
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = lines[0] if lines and lines[0].lower().startswith("permission") else (
        lines[-1] if lines else type(exc).__name__)
    for noise in ("connection failed:", "FATAL:", "ERROR:"):
        line = line.replace(noise, "")
    return scrub_dsn(" ".join(line.split())[:200], url, _parsed_password(url))


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, allow_nan=False)


def _text_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _bytes_text(raw: Any) -> str:
    return bytes(raw).decode("utf-8", "surrogateescape")


def _created(meta: dict[str, Any]) -> datetime:
    try:
        t = datetime.fromisoformat(str(meta.get("created_at")))
    except ValueError:
        return datetime.now(timezone.utc)
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _plain(v: Any, limit: int = 320) -> str | None:
    """A filter column's value (customer, order code): text without NUL, or None."""
    return v.replace("\x00", "")[:limit] if isinstance(v, str) else None


class PgDraftStore:
    """The drafts queue of one PostgreSQL database (see the module docstring)."""

    kind = "postgresql"

    def __init__(self, url: str, *, pool_size: int = 4, check_schema: bool = True):
        _modules()
        for pw in _passwords(url):
            add_secret(pw)
        info = url_userinfo(url)
        if info and info[1] and any(c in info[1] for c in "@/#?"):
            raise ConfigError(f"the password in the drafts queue URL {masked(url)} holds a raw "
                              "'@', '/', '#' or '?': percent-encode it (%40, %2F, %23, %3F)")
        self.url = url
        self.location = masked(url)
        self.on_wait: Callable[[str | None], None] | None = None
        self.token = secrets.token_hex(8)
        self._kwargs = {"application_name": "agentcli-drafts", "connect_timeout": CONNECT_TIMEOUT,
                        "options": f"-c lock_timeout={LOCK_TIMEOUT_MS}"}
        self._listener: Any = None
        try:
            conn = psycopg.connect(url, autocommit=True, **self._kwargs)
        except psycopg.Error as e:
            raise self._unreachable(e) from None
        except Exception as e:  # a malformed URL: still one clear line
            raise ConfigError(f"invalid drafts queue URL {self.location}: "
                              f"{_reason(e, url)}") from None
        try:
            self.user = str(conn.info.user or "?")
            if check_schema:
                self._check_schema(conn)
        except BaseException:
            conn.close()
            raise
        conn.autocommit = False
        # One connection a store, one transaction at a time on it (a save takes a few ms; the
        # tools' threads and the checks' take turns): the connection that checked the schema
        # is the one that works, so a command connects once.
        self._conn: Any = conn
        self._lock = threading.RLock()
        self._used = time.monotonic()

    # ----------------------------------------------------------------- connections

    def _unreachable(self, e: BaseException) -> ConfigError:
        return ConfigError(f"cannot connect to the drafts queue {self.location}: "
                           f"{_reason(e, self.url)}; check {where_set('drafts_url', self.url)} "
                           "(host, port, user, password) and that the server is running")

    def _migrate_hint(self) -> str:
        return f"agentcli drafts migrate --schema --drafts-url {self.location}"

    def _check_schema(self, conn: Any) -> None:
        try:
            row = conn.execute("SELECT max(version) FROM agentcli_drafts_schema").fetchone()
        except psycopg.errors.UndefinedTable:
            raise ConfigError(f"the drafts queue {self.location} has no agentcli schema yet: "
                              f"create it with `{self._migrate_hint()}` (as the database's "
                              "owner)") from None
        except psycopg.errors.InsufficientPrivilege as e:
            raise self._denied("read", e) from None
        except psycopg.Error as e:
            raise ConfigError(f"cannot read the drafts queue {self.location}: "
                              f"{_reason(e, self.url)}") from None
        version = row[0] if row else None
        if version is None or version < SCHEMA_VERSION:
            raise ConfigError(f"the drafts queue {self.location} has schema version {version}, "
                              f"older than this agentcli's ({SCHEMA_VERSION}): run "
                              f"`{self._migrate_hint()}`")
        if version > SCHEMA_VERSION:
            raise ConfigError(f"the drafts queue {self.location} has schema version {version}, "
                              f"newer than this agentcli knows ({SCHEMA_VERSION}): upgrade "
                              "agentcli on this machine")

    def _denied(self, what: str, e: BaseException) -> DraftsFolderError:
        doing, fix = NEEDS[what]
        return DraftsFolderError(
            f"the role {self.user} may not {doing} in the drafts queue {self.location} "
            f"({_reason(e, self.url)}): {fix.format(user=self.user)} (see the README's "
            "roles)")

    @contextlib.contextmanager
    def _tx(self, what: str) -> Iterator[Any]:
        """One transaction on the store's connection; failures in a person's words."""
        if not self._lock.acquire(timeout=ACQUIRE_TIMEOUT):
            raise SaveFailed(11, f"the drafts queue {self.location} is busy in this process "
                                 f"for more than {ACQUIRE_TIMEOUT:g} s; try again")
        try:
            conn = self._live()
            with conn.transaction():
                yield conn
            self._used = time.monotonic()
        except psycopg.errors.InsufficientPrivilege as e:
            raise self._denied(what, e) from None
        except psycopg.errors.LockNotAvailable:
            raise SaveFailed(11, f"the drafts queue {self.location}: a teammate's change held "
                                 f"this draft for more than {LOCK_TIMEOUT_MS // 1000} s; try "
                                 "again") from None
        except psycopg.errors.UndefinedTable:
            raise DraftsFolderError(f"the drafts queue {self.location} has no agentcli schema: "
                                    f"run `{self._migrate_hint()}`") from None
        except psycopg.OperationalError as e:
            raise SaveFailed(None, f"the drafts queue {self.location} failed: "
                                   f"{_reason(e, self.url)}") from None
        except psycopg.Error as e:
            raise SaveFailed(None, f"the drafts queue {self.location} refused the change: "
                                   f"{_reason(e, self.url)}") from None
        finally:
            self._lock.release()

    def _live(self) -> Any:
        """The store's connection, made again when it broke, and tried first when it has been
        idle (a server restart or an idle timeout in between is a reconnect, not a failed
        save)."""
        conn = self._conn
        if conn is not None and not (conn.closed or conn.broken) \
                and time.monotonic() - self._used > IDLE_CHECK_S:
            try:
                conn.execute("SELECT 1")
                conn.rollback()
            except psycopg.Error:
                pass  # broken now: made again below
        if conn is None or conn.closed or conn.broken:
            with contextlib.suppress(Exception):
                conn.close()
            self._conn = None
            conn = self._conn = psycopg.connect(self.url, autocommit=False, **self._kwargs)
        return conn

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(Exception):
                if self._conn is not None:
                    self._conn.close()
            self._conn = None
        if self._listener is not None:
            with contextlib.suppress(Exception):
                self._listener.close()
            self._listener = None

    def exists(self) -> bool:
        return True  # the schema was checked when the store was opened

    def missing_message(self) -> str:
        return f"the drafts queue {self.location} has no schema: run `{self._migrate_hint()}`"

    # ----------------------------------------------------------------- rows <-> drafts

    @staticmethod
    def _draft(row: tuple, history: list[str]) -> Draft:
        did, ticket, status, _created_at, meta_j, body, *rest = row
        review, rev = rest[:len(REVIEW_KEYS)], rest[len(REVIEW_KEYS)]
        meta = json.loads(meta_j)
        meta["id"], meta["status"] = did, status
        for k, v in zip(REVIEW_KEYS, review):
            if v is not None:
                meta[k] = json.loads(v)
        hist = []
        for h in history:
            with contextlib.suppress(ValueError):
                hist.append(json.loads(h))
        meta["history"] = hist
        d = Draft(meta=meta, text=_bytes_text(body), path=Path(PREFIX) / did)
        d.rev = rev
        return reopen_check(d)

    @staticmethod
    def _review_values(d: Draft) -> list[str | None]:
        return [None if k not in d.meta else _j(d.meta[k]) for k in REVIEW_KEYS]

    def _history(self, conn: Any, ids: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {i: [] for i in ids}
        if ids:
            for did, entry in conn.execute(
                    "SELECT draft_id, entry FROM agentcli_draft_history WHERE draft_id = ANY(%s) "
                    "ORDER BY seq", (ids,)):
                out[did].append(entry)
        return out

    def _rows(self, conn: Any, sql: str, params: tuple = ()) -> list[Draft]:
        rows = conn.execute(sql, params).fetchall()
        hist = self._history(conn, [r[0] for r in rows])
        return [self._draft(r, hist[r[0]]) for r in rows]

    def _load(self, conn: Any, did: str, lock: bool = False) -> Draft | None:
        got = self._rows(conn, f"SELECT {COLUMNS} FROM agentcli_drafts WHERE id = %s"
                               + (" FOR UPDATE" if lock else ""), (did,))
        return got[0] if got else None

    # ----------------------------------------------------------------- reading

    def get(self, did: str) -> Draft:
        if not isinstance(did, str) or not ID_RE.match(did):
            raise UsageError(f"not a draft id: {did!r} (ids look like d-3f2a9c1b7e04)")
        with self._tx("read") as conn:
            d = self._load(conn, did)
        if d is None:
            raise UsageError(f"no draft {did} in {self.location}")
        return d

    def resolve_id(self, prefix: str) -> list[str]:
        with self._tx("read") as conn:
            rows = conn.execute("SELECT id FROM agentcli_drafts WHERE id LIKE %s ORDER BY id "
                                "LIMIT 20", (prefix.replace("%", "").replace("_", "\\_") + "%",))
            return [r[0] for r in rows]

    def iter(self) -> Iterator[Draft | Damaged]:
        yield from self.newest()

    def newest(self, status: str | None = None, ticket: str | None = None,
               since: datetime | None = None, batch: int = 200) -> Iterator[Draft | Damaged]:
        """Drafts newest first, fetched a page at a time (keyset paging): the first page of a
        queue of 100,000 reads a page. ``status``, ``ticket``, ``since`` narrow the query (the
        caller still filters)."""
        where, params = [], []
        if status is not None:
            where.append("status = %s")
            params.append(status)
        if ticket is not None:
            where.append("ticket = %s")
            params.append(_j(ticket))
        if since is not None:
            where.append("created_at >= %s")
            params.append(since)
        after: tuple | None = None
        while True:
            cond = list(where)
            args = list(params)
            if after is not None:
                cond.append("(created_at, id) < (%s, %s)")
                args.extend(after)
            sql = (f"SELECT {COLUMNS} FROM agentcli_drafts"
                   + (" WHERE " + " AND ".join(cond) if cond else "")
                   + " ORDER BY created_at DESC, id DESC LIMIT %s")
            with self._tx("read") as conn:
                raw = conn.execute(sql, (*args, batch)).fetchall()
                hist = self._history(conn, [r[0] for r in raw])
            for r in raw:
                yield self._draft(r, hist[r[0]])
            if len(raw) < batch:
                return
            after = (raw[-1][3], raw[-1][0])

    def in_ticket(self, ticket: str) -> list[Draft]:
        with self._tx("read") as conn:
            return self._in_ticket(conn, ticket)

    def _in_ticket(self, conn: Any, ticket: str) -> list[Draft]:
        out = self._rows(conn, f"SELECT {COLUMNS} FROM agentcli_drafts WHERE ticket = %s",
                         (_j(ticket),))
        out.sort(key=lambda d: (d.meta.get("created_at") or "", d.id))
        return out

    # ----------------------------------------------------------------- writing

    def save(self, *, text: str, ticket: str | None = None, order_code: str | None = None,
             customer: str | None = None, question: str | None = None,
             questions: list[str] | None = None, lookups: list[dict[str, Any]] | None = None,
             findings: list[dict[str, Any]] | None = None, model: str | None = None,
             provider: str | None = None, session_id: str | None = None,
             prompt_version: str | None = None, mode: str | None = None) -> tuple[Draft, bool]:
        """As ``DraftStore.save``: (draft, created); the same text in the same ticket is the
        same draft, on any machine; a new draft supersedes the ticket's earlier pending ones."""
        ticket, stored, fields = save_fields(text=text, ticket=ticket, order_code=order_code,
                                             customer=customer, question=question,
                                             questions=questions, lookups=lookups,
                                             findings=findings, model=model, provider=provider,
                                             session_id=session_id,
                                             prompt_version=prompt_version, mode=mode)
        with self._tx("save") as conn:
            return self._put(conn, ticket, stored, fields)

    def _put(self, conn: Any, ticket: str, text: str,
             fields: dict[str, Any]) -> tuple[Draft, bool]:
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))", (_j(ticket),))
        did = draft_id(ticket, text)
        # under the ticket's lock, before this reply becomes its live draft (new, or saved again):
        # that is not another customer's (else nothing changes)
        was = conn.execute("SELECT status, customer FROM agentcli_drafts WHERE id = %s", (did,)).fetchone()
        if was is None or was[0] == "superseded":
            same_customer(ticket, fields.get("customer") or (was[1] if was else None), conn.execute(
                "SELECT id, customer FROM agentcli_drafts WHERE ticket = %s AND status <> "
                "'rejected' AND id <> %s", (_j(ticket), did)).fetchall())
        history = fields.pop("history", [])
        meta = {"id": did, "status": "pending_review", "created_at": now_iso(), "ticket": ticket,
                **fields, "text_sha256": text_hash(text)}
        fixed = {k: v for k, v in meta.items() if k not in FIXED_OUT and k != "id"}
        row = conn.execute(
            "INSERT INTO agentcli_drafts (id, ticket, saved_sha256, created_at, order_code, "
            "customer, meta, body, findings, findings_sha256, original_text) VALUES (%s, %s, "
            "%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
            (did, _j(ticket), text_hash(text), _created(meta), _plain(meta.get("order_code")),
             _plain(meta.get("customer")), _j(fixed), _text_bytes(text),
             _j(meta.get("findings") or []), _j(meta.get("findings_sha256")),
             _j(meta["original_text"]) if "original_text" in meta else None)).fetchone()
        created = row is not None
        if created:
            for h in history:
                conn.execute("INSERT INTO agentcli_draft_history (draft_id, entry) VALUES (%s, %s)",
                             (did, _j(h)))
            conn.execute(f"NOTIFY {CHANNEL}")
            self._supersede(conn, ticket, did)
            # the row as written (nothing else can have changed it: it is not committed yet)
            new = Draft(meta={**meta, "history": list(history)}, text=text,
                        path=Path(PREFIX) / did, rev=1)
            return new, True
        d = self._load(conn, did)
        if d is None:  # a unique (ticket, text) row under another id: the same reply
            raise SaveFailed(None, f"the drafts queue {self.location} holds this reply under "
                                   "another id; nothing was saved")
        if not created and d.meta.get("status") == "superseded":
            # saved again: the latest save of a ticket is its live draft
            _record(d, "agentcli", "pending_review", "saved again in its ticket")
            conn.execute("SELECT agentcli_revive(%s, %s, %s)",
                         (did, d.rev, _j(d.meta["history"][-1])))
            created_again = True
        else:
            created_again = False
        if created or created_again:
            self._supersede(conn, ticket, did)
            d = self._load(conn, did) or d
        return d, created

    def _supersede(self, conn: Any, ticket: str, newer: str) -> None:
        others = [r[0] for r in conn.execute(
            "SELECT id FROM agentcli_drafts WHERE ticket = %s AND status = 'pending_review' "
            "AND id <> %s", (_j(ticket), newer))]
        for did in others:
            d = self._load(conn, did)
            if d is None or d.meta.get("status") != "pending_review":
                continue
            rev = d.rev
            before = list(d.meta.get("history") or [])
            _reopen(d)
            _record(d, "agentcli", "superseded", f"replaced by the newer draft {newer}")
            entries = new_entries(before, d)
            for h in entries[:-1]:  # a reopened draft's hand edit, first
                conn.execute("INSERT INTO agentcli_draft_history (draft_id, entry) VALUES (%s, %s)",
                             (d.id, _j(h)))
            conn.execute("SELECT agentcli_supersede(%s, %s, %s, %s)",
                         (d.id, rev, _j(newer), _j(entries[-1])))

    def import_draft(self, d: Draft) -> bool:
        """``drafts migrate``: ``d`` as it is (id, status, review fields, history, findings,
        text byte for byte); False when a draft of that id is already here."""
        meta = dict(d.meta)
        status = "approved" if d.reopened else meta.get("status")
        fixed = {k: v for k, v in meta.items() if k not in FIXED_OUT and k != "id"}
        review = [None if k not in meta else _j(meta[k]) for k in REVIEW_KEYS]
        ticket = _j(d.ticket or "")  # the ticket column is for filters: JSON, any text fits
        with self._tx("import") as conn:
            row = conn.execute(
                "INSERT INTO agentcli_drafts (id, ticket, saved_sha256, status, created_at, "
                "order_code, customer, meta, body, " + ", ".join(REVIEW_KEYS) + ") VALUES ("
                + ", ".join(["%s"] * (9 + len(REVIEW_KEYS))) + ") ON CONFLICT DO NOTHING "
                "RETURNING id",
                (d.id, ticket, str(meta.get("text_sha256") or text_hash(d.text)) + "/" + d.id,
                 status, _created(meta), _plain(meta.get("order_code")),
                 _plain(meta.get("customer")), _j(fixed), _text_bytes(d.text), *review)
            ).fetchone()
            if row is None:
                return False
            for h in meta.get("history") or []:
                conn.execute("INSERT INTO agentcli_draft_history (draft_id, entry) VALUES (%s, %s)",
                             (d.id, _j(h)))
            conn.execute(f"NOTIFY {CHANNEL}")
        return True

    def move(self, did: str, ticket: str, *, who: str) -> Draft | None:
        """As ``DraftStore.move``: the pending draft becomes ``ticket``'s live draft (a new id)
        and the old one is superseded by it; None when it is no longer pending."""
        ticket = safe_ticket(no_surrogates(ticket))
        with self._tx("save") as conn:
            d = self._load(conn, did)
            if d is None:
                raise UsageError(f"no draft {did} in {self.location}")
            if d.meta.get("status") != "pending_review":
                return None
            if d.ticket == ticket:
                return d
            moved, _ = self._put(conn, ticket, d.text, moved_fields(d, who))
            old = self._load(conn, did)
            if old is not None and old.meta.get("status") == "pending_review":
                before = list(old.meta.get("history") or [])
                _reopen(old)
                _record(old, who, "superseded", f"moved to ticket {ticket} as draft {moved.id}")
                entries = new_entries(before, old)
                conn.execute("SELECT agentcli_supersede(%s, %s, %s, %s)",
                             (did, old.rev, _j(moved.id), _j(entries[-1])))
            return moved

    def _change(self, did: str, what: str, apply: Callable[[Draft], bool],
                check: Callable[[Any, Draft, Any], None] | None = None) -> tuple[Draft, bool]:
        """Load ``did`` FOR UPDATE, apply a rule (then ``check(conn, draft, status before)``),
        write the row and the new history entries: one transaction."""
        if not isinstance(did, str) or not ID_RE.match(did):
            raise UsageError(f"not a draft id: {did!r} (ids look like d-3f2a9c1b7e04)")
        with self._tx(what) as conn:
            d = self._load(conn, did, lock=True)
            if d is None:
                raise UsageError(f"no draft {did} in {self.location}")
            before = list(d.meta.get("history") or [])
            was = d.meta.get("status")
            if not apply(d):
                return d, False
            if check is not None:
                check(conn, d, was)
            decided = d.meta.get("status") in ("approved", "rejected")
            conn.execute(
                "UPDATE agentcli_drafts SET status = %s, body = %s, "
                + ", ".join(f"{k} = %s" for k in REVIEW_KEYS)
                + ", reviewer = %s, decided_at = CASE WHEN %s THEN now() ELSE decided_at END, "
                "rev = rev + 1 WHERE id = %s",
                (d.meta["status"], _text_bytes(d.text), *self._review_values(d),
                 _plain(d.meta.get("reviewed_by"), 64), decided, did))
            for h in new_entries(before, d):
                conn.execute("INSERT INTO agentcli_draft_history (draft_id, entry) VALUES (%s, %s)",
                             (did, _j(h)))
            return self._load(conn, did) or d, True

    def set_status(self, did: str, status: str, *, reviewer: str | None,
                   reason: str | None = None, force: bool = False,
                   expect: str | None = None) -> tuple[Draft, bool]:
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r}")
        who = redact(reviewer if reviewer is not None else resolve_reviewer())
        reason = redact(reason) if reason is not None else None
        return self._change(did, "review", lambda d: apply_status(d, status, who, reason,
                                                                  force=force, expect=expect))

    def set_text(self, did: str, text: str, *, reviewer: str | None = None,
                 expect: str | None = None) -> tuple[Draft, bool]:
        text = clean_text(text)
        who = reviewer if reviewer is not None else resolve_reviewer()
        return self._change(did, "review", lambda d: apply_text(d, text, who, expect), check=self._one_live)

    @staticmethod
    def _one_live(conn: Any, d: Draft, was: Any) -> None:
        """An approved draft an edit puts back for review: not beside a newer live draft of its
        ticket (``one_live``), under the ticket's lock as a save takes it."""
        if was != "approved" or d.meta.get("status") != "pending_review":
            return
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))", (_j(d.ticket),))
        one_live(d, [r[0] for r in conn.execute(
            "SELECT id FROM agentcli_drafts WHERE ticket = %s AND status = 'pending_review' AND id <> %s",
            (_j(d.ticket), d.id)).fetchall()])

    def remote(self, did: str, field: str, value: dict[str, Any] | None, *, who: str,
               reason: str, expect: Any = ANY) -> tuple[Draft, bool]:
        """As ``DraftStore.remote``: the helpdesk side's record (``push``, ``exported``), a
        compare-and-set in one transaction, the row held ``FOR UPDATE``."""
        if field not in REMOTE_FIELDS:
            raise ValueError(f"not a remote field: {field!r}")
        value = redact_obj(bounded(value)) if value is not None else None
        return self._change(did, "remote",
                            lambda d: apply_remote(d, field, value, who=who, reason=reason, expect=expect))

    def set_findings(self, did: str, findings: list[dict[str, Any]], *, text: str) -> bool:
        """As ``DraftStore.set_findings``, through ``agentcli_set_findings`` at the row's rev
        (the staff may store findings, not decide): a draft changed meanwhile is loaded again."""
        text = redact(no_surrogates(text))
        clean = clean_findings(findings)
        for _ in range(3):
            with self._tx("findings") as conn:
                d = self._load(conn, did)
                if d is None:
                    raise UsageError(f"no draft {did} in {self.location}")
                before = list(d.meta.get("history") or [])
                done = apply_findings(d, clean, text)
                if done is None:
                    return False
                if not done:
                    return True
                entries = new_entries(before, d)
                for h in entries[:-1]:
                    conn.execute("INSERT INTO agentcli_draft_history (draft_id, entry) "
                                 "VALUES (%s, %s)", (did, _j(h)))
                last = _j(entries[-1]) if entries else None
                ok = conn.execute("SELECT agentcli_set_findings(%s, %s, %s, %s, %s)",
                                  (did, d.rev, _j(clean), _j(d.meta["findings_sha256"]),
                                   last)).fetchone()[0]
                if ok:
                    return True
        return False

    # ----------------------------------------------------------------- claims

    def claim(self, did: str, who: str, ttl_s: float = CLAIM_TTL_S) -> Claim | None:
        """Claim ``did`` for review (renewed by claiming again): None when it is ours now, else
        the teammate's claim in the way. One statement: of two reviewers, one gets it."""
        with self._tx("claim") as conn:
            row = conn.execute(
                "INSERT INTO agentcli_draft_claims AS c (draft_id, token, who, holder, "
                "expires_at) VALUES (%s, %s, %s, %s, now() + make_interval(secs => %s)) "
                "ON CONFLICT (draft_id) DO UPDATE SET token = excluded.token, who = excluded.who, "
                "holder = excluded.holder, expires_at = excluded.expires_at "
                "WHERE c.expires_at <= now() OR c.token = excluded.token RETURNING draft_id",
                (did, self.token, redact(who)[:64], claim_holder(), ttl_s)).fetchone()
            if row is not None:
                return None
            theirs = conn.execute("SELECT who, holder, expires_at FROM agentcli_draft_claims "
                                  "WHERE draft_id = %s", (did,)).fetchone()
        if theirs is None:
            return Claim("someone", "", "")
        return Claim(str(theirs[0]), str(theirs[1]), theirs[2].isoformat(timespec="seconds"))

    def claim_next(self, who: str, ttl_s: float = CLAIM_TTL_S) -> Draft | None:
        """The oldest pending draft nobody holds, claimed for ``who``: ``FOR UPDATE SKIP
        LOCKED``, so reviewers claiming at once each get a different one. None: none is free."""
        with self._tx("claim") as conn:
            row = conn.execute(
                "SELECT d.id FROM agentcli_drafts d LEFT JOIN agentcli_draft_claims c "
                "ON c.draft_id = d.id AND c.expires_at > now() AND c.token <> %s "
                "WHERE d.status = 'pending_review' AND c.draft_id IS NULL "
                "ORDER BY d.created_at, d.id LIMIT 1 FOR UPDATE OF d SKIP LOCKED",
                (self.token,)).fetchone()
            if row is None:
                return None
            conn.execute(
                "INSERT INTO agentcli_draft_claims AS c (draft_id, token, who, holder, "
                "expires_at) VALUES (%s, %s, %s, %s, now() + make_interval(secs => %s)) "
                "ON CONFLICT (draft_id) DO UPDATE SET token = excluded.token, who = excluded.who, "
                "holder = excluded.holder, expires_at = excluded.expires_at",
                (row[0], self.token, redact(who)[:64], claim_holder(), ttl_s))
            return self._load(conn, row[0])

    def release(self, did: str, who: str) -> None:
        with self._tx("claim") as conn:
            conn.execute("DELETE FROM agentcli_draft_claims WHERE draft_id = %s AND token = %s",
                         (did, self.token))

    def wait_for_new(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for a new draft (LISTEN/NOTIFY); True when one came."""
        try:
            if self._listener is None or self._listener.closed:
                self._listener = psycopg.connect(self.url, autocommit=True, **self._kwargs)
                self._listener.execute(f"LISTEN {CHANNEL}")
            got = list(self._listener.notifies(timeout=max(0.0, timeout_s), stop_after=1))
            return bool(got)
        except psycopg.Error:
            with contextlib.suppress(Exception):
                self._listener.close()
            self._listener = None
            return False

    # ----------------------------------------------------------------- doctor

    def probe(self) -> list[Probe]:
        """The server, the schema and the grants this role has, tried for real (nothing is
        changed): connection, schema version, SELECT, INSERT of a draft, a reviewer's UPDATE."""
        out = [Probe("drafts queue", True, f"{self.location} (schema version {SCHEMA_VERSION})")]
        try:
            with self._tx("read") as conn:
                rows = conn.execute(
                    "SELECT has_table_privilege('agentcli_drafts', 'SELECT'), "
                    "has_column_privilege('agentcli_drafts', 'body', 'INSERT'), "
                    "has_table_privilege('agentcli_drafts', 'UPDATE'), "
                    "has_function_privilege('agentcli_supersede(text, bigint, text, text)', "
                    "'EXECUTE')").fetchone()
        except (DraftsFolderError, SaveFailed) as e:
            return [Probe("drafts queue", False, e.message, None)]
        read, insert, update, supersede = rows
        fix = "see the README's roles: GRANT agentcli_staff (or agentcli_reviewer) TO " + self.user
        if not (read and insert and supersede):
            out.append(Probe("drafts grants", False, f"the role {self.user} may not "
                             + ("read the queue" if not read else "save drafts"), fix))
        else:
            out.append(Probe("drafts grants", True, f"the role {self.user} may save drafts"
                             + (" and review them" if update else " (not review them)")))
        return out

    def lock_holder(self) -> str | None:
        return None


def create_schema(url: str) -> str:
    """``drafts migrate --schema``: the queue's tables, functions and version, in one
    transaction; what was done, in words. An up-to-date schema is left as it is; a newer one
    is exit 3."""
    _modules()
    where = masked(url)
    try:
        conn = psycopg.connect(url, autocommit=False, application_name="agentcli-drafts",
                               connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as e:
        raise ConfigError(f"cannot connect to the drafts queue {where}: {_reason(e, url)}") from None
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('agentcli-schema', 7))")
            have = conn.execute("SELECT to_regclass('agentcli_drafts_schema') IS NOT NULL").fetchone()[0]
            if have:
                version = conn.execute("SELECT max(version) FROM agentcli_drafts_schema").fetchone()[0]
                if version is not None and version > SCHEMA_VERSION:
                    raise ConfigError(f"the drafts queue {where} has schema version {version}, "
                                      f"newer than this agentcli knows ({SCHEMA_VERSION}): "
                                      "upgrade agentcli")
                if version == SCHEMA_VERSION:
                    return f"the drafts queue {where} already has schema version {version}"
            conn.execute(SCHEMA_SQL)
        return f"created the drafts queue's schema (version {SCHEMA_VERSION}) in {where}"
    except psycopg.errors.InsufficientPrivilege as e:
        raise ConfigError(f"cannot create the drafts queue's schema in {where} "
                          f"({_reason(e, url)}): run it as the database's owner") from None
    except psycopg.Error as e:
        raise ConfigError(f"cannot create the drafts queue's schema in {where}: "
                          f"{_reason(e, url)}") from None
    finally:
        conn.close()

