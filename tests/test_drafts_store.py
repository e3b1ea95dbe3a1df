"""Drafts on disk and the SQLite orders store: atomic, idempotent, read-only, scoped."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sqlite3

import pytest

from agentcli.drafts.store import Draft, DraftStore, draft_id
from agentcli.errors import ConfigError, UsageError
from agentcli.stores import init_sqlite, mask_dsn, open_store
from agentcli.stores.sqlite import SQLiteStore


def test_draft_file_is_readable_and_roundtrips(tmp_path):
    ds = DraftStore(tmp_path / "drafts")
    text = "Hello Ana,\n\n---\nyour order: GH56JK78MN\n\u00e9\u4e2d\n"
    d, created = ds.save(text=text, ticket="s1", order_code="GH56JK78MN",
                         customer="ana.silva@example.com", question="why?", model="m", session_id="s1")
    assert created and d.path.parent == tmp_path / "drafts"
    raw = d.path.read_text()
    assert raw.startswith("---\n") and 'status: "pending_review"' in raw and raw.endswith(text)
    oct_mode = d.path.stat().st_mode & 0o777
    assert oct_mode == 0o600
    again = ds.get(d.id)
    assert again.text == text and again.meta["order_code"] == "GH56JK78MN" and not again.edited
    rec = again.record()
    for k in ("id", "status", "path", "order_code", "created_at", "text"):
        assert k in rec


def test_same_text_same_conversation_is_one_draft(tmp_path):
    ds = DraftStore(tmp_path)
    a, c1 = ds.save(text="Hi", ticket="conv-1")
    b, c2 = ds.save(text="Hi", ticket="conv-1")
    c, c3 = ds.save(text="Hi", ticket="conv-2")
    assert a.id == b.id != c.id and (c1, c2, c3) == (True, False, True)
    assert len(list(tmp_path.glob("d-*.md"))) == 2


def test_status_change_in_place_and_hand_edit_detected(tmp_path):
    ds = DraftStore(tmp_path)
    d, _ = ds.save(text="Original", ticket="c")
    d.path.write_text(d.path.read_text().replace("Original", "Edited by hand"))
    d2, changed = ds.set_status(d.id, "approved", reviewer="lead")
    assert changed and d2.text == "Edited by hand" and d2.edited
    assert ds.get(d.id).meta["status"] == "approved" and ds.get(d.id).meta["reviewed_by"] == "lead"
    _, changed = ds.set_status(d.id, "approved", reviewer="lead")
    assert not changed
    with pytest.raises(UsageError):
        ds.get("d-ffffffffffff")
    with pytest.raises(UsageError):
        ds.get("../../etc/passwd")


def _writer(directory, worker, n):
    ds = DraftStore(directory)
    for i in range(n):
        ds.save(text=f"draft {i % 10} " + "body " * 200, ticket=f"conv-{i % 3}")
        ds.save(text=f"worker {worker} draft {i}", ticket="shared")


def test_concurrent_processes_never_clobber_or_duplicate(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(tmp_path, w, 15)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    ds = DraftStore(tmp_path)
    drafts = [d for d in ds.iter() if isinstance(d, Draft)]
    # the 4 x 15 saves of "draft {i % 10}" in conversation i % 3 dedupe to the 15 distinct
    # (text, conversation) pairs of i = 0..14; plus 4 x 15 unique ones
    assert len(drafts) == 15 + 60
    for d in drafts:
        assert d.id == draft_id(d.meta["ticket"], d.text) and not d.edited
    assert not list(tmp_path.glob(".tmp-*"))


def test_a_draft_of_the_ticket_that_cannot_be_read_stops_a_new_one(tmp_path):
    """A ticket has at most one live draft. A teammate's draft file this process cannot read may
    be the live one, and a new draft beside it would make two: the save is refused, naming the
    file, and nothing is written."""
    import subprocess
    import sys

    from tests.conftest import as_a_user

    ds = DraftStore(tmp_path)
    first, _ = ds.save(text="Your order GH56JK78MN is waiting for its payment.", ticket="HD-7")
    first.path.chmod(0)
    script = ("import sys\nfrom agentcli.drafts.store import DraftStore\nfrom agentcli.errors import AgentcliError\n"
              "try:\n    DraftStore(sys.argv[1]).save(text='Your order ORD-20261234 has shipped.', ticket='HD-7')\n"
              "except AgentcliError as e:\n    print(e)\n    sys.exit(3)\n")
    try:
        p = subprocess.run(as_a_user([sys.executable, "-c", script, str(tmp_path)]),
                           capture_output=True, text=True, timeout=60)
    finally:
        first.path.chmod(0o600)
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert first.path.name in p.stdout and "Permission denied" in p.stdout and "two" in p.stdout
    assert [d.id for d in ds.in_ticket("HD-7")] == [first.id]
    assert ds.get(first.id).meta["status"] == "pending_review"


# --------------------------------------------------------------------------- SQLite store

def test_store_is_read_only(demo_db, tmp_path):
    db = tmp_path / "rw.sqlite3"
    shutil.copy(demo_db, db)
    db.chmod(0o644)  # writable on disk, still read-only through the store
    store = SQLiteStore(db)
    conn = store._conn()
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("UPDATE orders SET status = 'refunded'")
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM orders")
    assert store.lookup("GH56JK78MN", None, False)["status"] == "pending_payment"


def test_customer_filter_is_in_the_query(demo_db):
    store = SQLiteStore(demo_db)
    assert store.lookup("GH56JK78MN", "ANA.SILVA@example.com", False)["found"]
    assert store.lookup("GH56JK78MN", "ben.okafor@example.net", False) is None


def test_missing_or_foreign_database_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        open_store(str(tmp_path / "nope.sqlite3"))
    other = tmp_path / "other.sqlite3"
    sqlite3.connect(other).executescript("CREATE TABLE orders (id INTEGER);")
    with pytest.raises(ConfigError, match="not an orders database"):
        open_store(f"sqlite:///{other}")
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError):
        open_store(str(junk))
    with pytest.raises(ConfigError, match=r"\*\*\*"):
        open_store("mysql://root:hunter2@db/orders")


def test_demo_database_has_every_status_and_the_spec_orders(tmp_path):
    path = tmp_path / "demo.sqlite3"
    assert init_sqlite(path, 300) == 300
    conn = sqlite3.connect(path)
    statuses = {r[0] for r in conn.execute("SELECT DISTINCT status FROM orders")}
    assert statuses == {"pending_payment", "paid", "license_issued", "shipped", "delivered",
                        "cancelled", "refunded"}
    assert conn.execute("SELECT count(DISTINCT customer_email) FROM orders").fetchone()[0] >= 5
    assert conn.execute("SELECT count(*) FROM order_lines").fetchone()[0] >= 300
    store = SQLiteStore(path)
    gh = store.lookup("GH56JK78MN", None, False)
    assert (gh["status"], gh["license_issued"]) == ("pending_payment", False)
    assert "not yet matched" in gh["status_detail"]
    o = store.lookup("ORD-20261234", None, False)
    assert o["status"] == "shipped" and o["estimated_delivery"]
    with pytest.raises(ConfigError, match="already exists"):
        init_sqlite(path, 10)


def test_mask_dsn():
    assert mask_dsn("postgresql://app:s3cr%40t@db.example:5432/shop") == "postgresql://app:***@db.example:5432/shop"
    assert mask_dsn("postgresql://db/shop") == "postgresql://db/shop"


# --------------------------------------------------------------- replace_file, every file's rewrite
def test_replace_file_leaves_the_old_file_and_no_temporary_one_whatever_fails(tmp_path):
    from agentcli.errors import replace_file

    target = tmp_path / "state.json"
    target.write_bytes(b"old")

    def refuse(fd: int) -> None:  # the temporary file exists and is open: then the write fails
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        replace_file(target, b"new", prefix=".state.", on_fd=refuse)
    assert target.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["state.json"]

    folder = tmp_path / "a-folder"  # the rename itself fails: a non-empty folder is in the way
    folder.mkdir()
    (folder / "x").write_bytes(b"")
    with pytest.raises(OSError):
        replace_file(folder, b"new", prefix=".state.")
    assert sorted(os.listdir(tmp_path)) == ["a-folder", "state.json"]

    replace_file(target, b"new", prefix=".state.")
    assert target.read_bytes() == b"new" and sorted(os.listdir(tmp_path)) == ["a-folder", "state.json"]
    assert target.stat().st_mode & 0o777 == 0o600  # mkstemp's mode: private until a caller widens it


def test_a_wait_for_the_lock_held_by_another_thread_of_this_process_is_no_notice(tmp_path):
    """A batch's workers wait on each other's saves: 'held by pid <its own pid>' read as if
    someone else held the folder (37 such lines in a 400-question batch)."""
    import threading

    from agentcli.drafts.store import DraftStore, LOCK_NOTICE_AFTER

    said: list = []
    store = DraftStore(tmp_path / "drafts", on_wait=said.append)
    store.save(text="first", ticket="T-0")
    held, done = threading.Event(), threading.Event()

    def hold():
        with store._locked():
            held.set()
            done.wait(LOCK_NOTICE_AFTER * 4)

    t = threading.Thread(target=hold)
    t.start()
    assert held.wait(10)
    try:
        threading.Timer(LOCK_NOTICE_AFTER * 3, done.set).start()
        store.save(text="second", ticket="T-1")  # waits ~3 notice delays for the other thread
    finally:
        done.set()
        t.join(10)
    assert said == []
