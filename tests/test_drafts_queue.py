"""The drafts queue on PostgreSQL beside the folder (issue 26): one protocol, the same records.

Real parts: a real PostgreSQL server (``tests/pg.py``; CI's ``AGENTCLI_TEST_PG_DSN``: these
tests never skip there), real draft files, the CLI in-process, real processes where concurrency
and a kill are the point.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from agentcli.drafts.backends import create_schema, open_drafts
from agentcli.drafts.base import DraftChanged, OtherCustomersTicket, ReviewConflict
from agentcli.drafts.store import DraftStore

from .pg import fresh_database

# A long file (processes racing for claims, follow waits):
# started among the first (tests/conftest.py).
pytestmark = pytest.mark.long

Q = "Hi, where is my order ORD-20261234? Thanks"
VOLATILE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")


def _db(pg_dsn: str) -> str:
    url = fresh_database(pg_dsn, "q_" + uuid.uuid4().hex[:10])
    create_schema(url)
    return url


@pytest.fixture
def queue_url(pg_dsn):
    return _db(pg_dsn)


@pytest.fixture(params=["folder", "postgresql"])
def backend(request, tmp_path):
    """(kind, open a store, the CLI flags that name it)."""
    if request.param == "folder":
        folder = tmp_path / "drafts-b"
        folder.mkdir()
        return "folder", (lambda: DraftStore(folder)), ["--drafts-dir", str(folder)]
    url = _db(request.getfixturevalue("pg_dsn"))
    stores = []

    def make():
        s = open_drafts(url=url, folder=None)
        stores.append(s)
        return s

    request.addfinalizer(lambda: [s.close() for s in stores])
    return "postgresql", make, ["--drafts-url", url]


def _json(p):
    assert p.returncode == 0, p.err
    return json.loads(p.out)


def _norm(obj):
    """A record with what differs by time and place taken out (times, the path)."""
    text = VOLATILE.sub("<time>", json.dumps(obj, sort_keys=True))
    obj = json.loads(text)
    for r in obj if isinstance(obj, list) else [obj]:
        r.pop("path", None)
    return obj


# =========================================================================== one protocol

def _scenario(make, cli, env, flags):
    """The same operations through the store and the CLI; the records at the end."""
    s = make()
    a, created = s.save(text="Your order shipped on 2026-11-20.\n", ticket="T-1",
                        order_code="ORD-20261234", customer="ben@example.net", model="m1",
                        provider="offline", session_id="s-1", questions=[Q],
                        lookups=[{"name": "get_order_status", "input": {"order_code": "ORD-20261234"},
                                  "result": {"found": True, "status": "shipped"}}],
                        prompt_version="p-1234abcd", mode="agent")
    assert created
    again, created = s.save(text="Your order shipped on 2026-11-20.\n", ticket="T-1", model="m1")
    assert (again.id, created) == (a.id, False)  # the same reply in the same ticket: one draft
    # (a text the floor finds nothing in: its approval runs the floor again on it)
    b, _ = s.save(text="Shorter: a colleague is looking into it.", ticket="T-1", model="m1")
    assert s.get(a.id).meta["status"] == "superseded"  # one live draft per ticket
    c, _ = s.save(text="We refunded you sk-ant-api03-" + "x" * 40, ticket="T-2", model="m2")
    assert "sk-ant" not in s.get(c.id).text  # the sink redacts, whichever the backend
    assert s.set_findings(b.id, [{"kind": "unsupported_date", "severity": "warning",
                                  "message": "a date"}], text=b.text)
    d, _ = s.save(text="Hello\u2028there \x1b[31m[bold]x[/bold]", ticket="T\u00e9-3")
    assert cli(["drafts", "approve", b.id, "--version", s.get(b.id).version, *flags], env).returncode == 0
    p = cli(["drafts", "reject", c.id, "--reason", "wrong: we never refund", *flags], env)
    assert p.returncode == 0, p.err
    edited, changed = s.set_text(d.id, "Hello there, edited.", reviewer="kim",
                                 expect=s.get(d.id).version)
    assert changed and edited.meta["original_text"].startswith("Hello\u2028")
    with pytest.raises(DraftChanged):  # the version shown is gone: nothing changes
        s.set_status(d.id, "approved", reviewer="sam", expect=d.version)
    with pytest.raises(ReviewConflict):
        s.set_status(c.id, "approved", reviewer="sam")
    moved = s.move(d.id, "HD-9", who="kim")
    assert moved is not None and s.get(d.id).meta["superseded_by"] == moved.id
    listed = _json(cli(["drafts", "list", "--json", "--all", *flags], env))
    shown = _json(cli(["drafts", "show", b.id, "--json", *flags], env))
    return listed, shown


def test_the_same_operations_give_the_same_records(cli, cli_env, pg_dsn, tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    url = _db(pg_dsn)
    queue = []

    def make_q():
        queue.append(open_drafts(url=url, folder=None))
        return queue[-1]

    try:
        f_list, f_show = _scenario(lambda: DraftStore(folder), cli, cli_env, ["--drafts-dir", str(folder)])
        q_list, q_show = _scenario(make_q, cli, cli_env, ["--drafts-url", url])
    finally:
        for s in queue:
            s.close()
    assert len(f_list) == 5
    for fr, qr in zip(_norm(f_list), _norm(q_list)):
        assert {k: v for k, v in fr.items() if fr.get(k) != qr.get(k)} == {k: v for k, v in qr.items() if fr.get(k) != qr.get(k)}
    assert _norm(f_list) == _norm(q_list)
    assert _norm(f_show) == _norm(q_show)
    assert {r["status"] for r in q_list} == {"superseded", "approved", "rejected", "pending_review"}
    assert all(r["path"].startswith("drafts-queue/") for r in q_list)  # never the URL
    assert url.split("@")[0].split(":")[-1] not in json.dumps(q_list)


def test_claims_two_reviewers_never_hold_one_draft(backend):
    kind, make, _ = backend
    kim, sam = make(), make()
    d, _ = kim.save(text="One.", ticket="T-1")
    assert kim.claim(d.id, "kim") is None
    theirs = sam.claim(d.id, "sam")
    assert theirs is not None and theirs.who == "kim"
    assert kim.claim(d.id, "kim") is None  # renewed by its holder
    kim.release(d.id, "kim")
    assert sam.claim(d.id, "sam") is None
    # a claim nobody renews expires: a closed terminal frees its draft
    e, _ = kim.save(text="Two.", ticket="T-2")
    assert kim.claim(e.id, "kim", ttl_s=0.0) is None
    assert sam.claim(e.id, "sam") is None


def test_hostile_tickets_and_texts_round_trip(backend):
    kind, make, _ = backend
    s = make()
    ticket = "T\x00-\u2028\ud800-\x1b]0;x\x07"
    d, created = s.save(text="nul \x00 and \udcff and \u202e", ticket=ticket)
    assert created and [x.id for x in s.in_ticket(d.ticket)] == [d.id]
    again, created = s.save(text="nul \x00 and \udcff and \u202e", ticket=ticket)
    assert (again.id, created) == (d.id, False)
    got = s.get(d.id)
    assert got.text == d.text and got.ticket == d.ticket
    assert s.set_status(d.id, "rejected", reviewer="k\x00im", reason="r\x00")[1]


def test_a_ticket_whose_live_draft_is_another_customers_takes_no_draft_of_this_one(backend):
    """One ticket is one customer's, at the store, under its lock: every path that saves (ask,
    chat, batch, mcp, a move) checked, if at all, before it saved, and a batch line's id put
    ben's draft into ana's ticket as its live draft (ana's superseded)."""
    _, make, _ = backend
    s = make()
    ana, _ = s.save(text="Your order GH56JK78MN waits for payment.", ticket="HD-1",
                    order_code="GH56JK78MN", customer="ana.silva@example.com")
    bens, _ = s.save(text="Your order ORD-20261234 shipped.", ticket="HD-2",
                     order_code="ORD-20261234", customer="ben.okafor@example.net")
    with pytest.raises(OtherCustomersTicket) as e:
        s.save(text="Your order ORD-20261234 shipped.", ticket="HD-1", customer="ben.okafor@example.net")
    assert str(e.value).startswith(f"ticket HD-1's draft {ana.id} is for ana.silva@example.com, "
                                   "and this reply is for ben.okafor@example.net"), e.value
    with pytest.raises(OtherCustomersTicket):  # nor moved in
        s.move(bens.id, "HD-1", who="kim")
    assert [(d.id, d.meta["status"]) for d in s.in_ticket("HD-1")] == [(ana.id, "pending_review")]
    assert s.get(bens.id).meta["status"] == "pending_review"
    # the same customer in another case of letters or as "Name <address>", or a reply for no
    # customer: it goes on
    b, _ = s.save(text="Shorter: it waits for payment.", ticket="HD-1", customer="Ana.Silva@Example.com")
    b2, _ = s.save(text="Shorter still.", ticket="HD-1", customer="Ana Silva <ana.silva@example.com>")
    c, _ = s.save(text="We are looking into it.", ticket="HD-1")
    assert s.get(ana.id).meta["status"] == s.get(b.id).meta["status"] == "superseded"
    # a reply for no customer opens the ticket to no other one, nor does a decided draft: the
    # ticket is the customer's its replies were for (ben's after a reply for no one; after ana's
    # approved)
    with pytest.raises(OtherCustomersTicket):
        s.save(text="Your order ORD-20261234 shipped.", ticket="HD-1", customer="ben.okafor@example.net")
    s.set_status(c.id, "approved", reviewer="kim")
    with pytest.raises(OtherCustomersTicket):
        s.save(text="Your order ORD-20261234 shipped.", ticket="HD-1", customer="ben.okafor@example.net")
    # a superseded reply saved again is the live draft again: not when the ticket is another's
    s.save(text="Your order ORD-20261234 is ben's.", ticket="HD-3", customer="ben.okafor@example.net")
    s.save(text="We are looking into it.", ticket="HD-3")
    with pytest.raises(OtherCustomersTicket):
        s.save(text="Ana's reply.", ticket="HD-3", customer="ana.silva@example.com")
    # only when every reply for ana was rejected (wrong replies) is the ticket free for another
    for x in (ana, b, b2):
        s.set_status(x.id, "rejected", reviewer="kim", reason="wrong customer", force=True)
    d, created = s.save(text="Your order ORD-20261234 shipped.", ticket="HD-1",
                        customer="ben.okafor@example.net")
    assert created and d.meta["status"] == "pending_review"


def test_an_edit_never_makes_an_approved_draft_live_beside_a_newer_one(backend):
    """Approved, then a newer draft of the ticket saved (the live one): an edit of the approved
    draft put it back for review beside the newer one, two live drafts in one ticket."""
    _, make, _ = backend
    s = make()
    old, _ = s.save(text="Your order GH56JK78MN waits for payment.", ticket="HD-1", customer="ana.silva@example.com")
    s.set_status(old.id, "approved", reviewer="kim")
    new, _ = s.save(text="Your payment has arrived; it is being matched.", ticket="HD-1",
                    customer="ana.silva@example.com")
    with pytest.raises(ReviewConflict) as e:
        s.set_text(old.id, "Your order GH56JK78MN waits for payment (edited).", reviewer="kim")
    assert f"live draft is now {new.id}" in str(e.value) and "two live drafts" in str(e.value), e.value
    assert s.get(old.id).meta["status"] == "approved" and s.get(old.id).text == old.text
    assert [d.id for d in s.in_ticket("HD-1") if d.meta["status"] == "pending_review"] == [new.id]
    # with the newer one decided, the approved draft may be edited (and is for review again)
    s.set_status(new.id, "rejected", reviewer="kim", reason="not yet")
    d, changed = s.set_text(old.id, "Your order GH56JK78MN waits for payment (edited).", reviewer="kim")
    assert changed and d.meta["status"] == "pending_review"


def test_a_push_record_is_claimed_once_and_filters_on_both_backends(backend, cli, cli_env):
    """The helpdesk side's record (``remote``): a compare-and-set, the same on both backends."""
    kind, make, flags = backend
    s, t = make(), make()
    d, _ = s.save(text="Approved reply.", ticket="HD-1")
    s.set_status(d.id, "approved", reviewer="kim")
    other, _ = s.save(text="Another.", ticket="HD-2")
    s.set_status(other.id, "approved", reviewer="kim")
    _, ok = s.remote(d.id, "push", {"state": "pending", "key": "k1"}, who="kim",
                     reason="pushing", expect=None)
    assert ok
    _, ok = t.remote(d.id, "push", {"state": "pending", "key": "k2"}, who="sam",
                     reason="pushing", expect=None)
    assert not ok  # a teammate's claim: never a second push
    got, ok = t.remote(d.id, "push", {"state": "done", "key": "k1", "id": "zd-9"}, who="kim",
                       reason="pushed", expect="k1")
    assert ok and got.meta["push"]["id"] == "zd-9" and got.meta["history"][-1]["push"]["state"] == "done"
    pushed = _json(cli(["drafts", "list", "--json", "--status", "approved", "--pushed", *flags], cli_env))
    assert [r["id"] for r in pushed] == [d.id] and pushed[0]["push"]["state"] == "done"
    rest = _json(cli(["drafts", "list", "--json", "--status", "approved", "--not-pushed", *flags], cli_env))
    assert [r["id"] for r in rest] == [other.id]


def test_paging_reads_newest_first(backend, cli, cli_env):
    kind, make, flags = backend
    s = make()
    ids = [s.save(text=f"Reply {i}.", ticket=f"T-{i}")[0].id for i in range(7)]
    recs = _json(cli(["drafts", "list", "--json", "-n", "3", "--page", "2", *flags], cli_env))
    assert [r["id"] for r in recs] == list(reversed(ids))[3:6]
    p = cli(["drafts", "list", "-n", "3", "--page", "3", *flags], cli_env)
    assert p.returncode == 0 and "the last page" in p.err and len(p.out.splitlines()) == 2


def test_stats_counts_outcomes_edits_reasons_and_groups(backend, cli, cli_env):
    kind, make, flags = backend
    s = make()
    a, _ = s.save(text="As written.", ticket="T-1", model="m1", provider="anthropic",
                  prompt_version="p-aaaa", mode="agent")
    b, _ = s.save(text="Needs an edit here.", ticket="T-2", model="m1", provider="anthropic",
                  prompt_version="p-aaaa", mode="agent")
    c, _ = s.save(text="Wrong.", ticket="T-3", model="m2", provider="openai",
                  prompt_version="p-bbbb", mode="workflow")
    s.save(text="Waiting.", ticket="T-4", model="m2", prompt_version="p-bbbb")
    s.set_status(a.id, "approved", reviewer="kim")
    s.set_text(b.id, "Needs an edit there.", reviewer="sam")
    s.set_status(b.id, "approved", reviewer="sam")
    s.set_status(c.id, "rejected", reviewer="kim", reason="promised a refund")
    st = _json(cli(["drafts", "stats", "--json", *flags], cli_env))
    assert st["pending"]["count"] == 1 and st["pending"]["oldest_s"] is not None
    assert st["decided"] == {"approved_as_written": 1, "approved_after_edit": 1, "rejected": 1}
    assert st["edit_size"]["max_chars"] == 1  # "here" -> "there": one character inserted
    assert st["reject_reasons"] == [{"reason": "promised a refund", "count": 1}]
    by_pv = {r["name"]: r for r in st["by_prompt_version"]}
    assert by_pv["p-aaaa"]["approval_rate"] == 1.0 and by_pv["p-bbbb"]["approval_rate"] == 0.0
    assert {r["name"] for r in st["by_reviewer"]} == {"kim", "sam"}
    assert st["review_target_s"] == 4 * 3600
    p = cli(["drafts", "stats", "--since", "1d", *flags], cli_env)
    assert p.returncode == 0 and "pending: 1" in p.out and "1 rejected" in p.out


# =========================================================================== the queue itself

def test_no_schema_an_old_one_or_a_newer_one_is_one_line_exit_3(cli, cli_env, pg_dsn):
    url = fresh_database(pg_dsn, "q_" + uuid.uuid4().hex[:10])
    p = cli(["drafts", "list", "--drafts-url", url], cli_env)
    assert p.returncode == 3 and len(p.err.strip().splitlines()) == 1
    assert "drafts migrate --schema" in p.err
    pw = url.split("@")[0].rsplit(":", 1)[-1]
    assert pw not in p.err  # the password never
    p = cli(["drafts", "migrate", "--schema", "--drafts-url", url], cli_env)
    assert p.returncode == 0 and "created" in p.out
    p = cli(["drafts", "migrate", "--schema", "--drafts-url", url], cli_env)
    assert p.returncode == 0 and "already has schema version 1" in p.out
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        c.execute("INSERT INTO agentcli_drafts_schema (version) VALUES (99)")
    p = cli(["drafts", "list", "--drafts-url", url], cli_env)
    assert p.returncode == 3 and "newer than this agentcli knows" in p.err
    assert len(p.err.strip().splitlines()) == 1


def test_ask_and_mcp_settings_write_into_the_queue(cli, cli_env, queue_url, tmp_path):
    p = cli(["ask", "--provider", "offline", "--ticket", "HD-7", "--json", "--drafts-url",
             queue_url, Q], cli_env)
    r = _json(p)
    [rec] = _json(cli(["drafts", "list", "--json", "--drafts-url", queue_url], cli_env))
    assert rec["id"] == r["drafts"][0]["id"] and rec["ticket"] == "HD-7"
    assert rec["prompt_version"].startswith("p-") and rec["mode"] == "agent"
    assert not list(Path(cli_env["AGENTCLI_DRAFTS_DIR"]).glob("d-*.md"))  # not the folder
    # the same from the environment, and a follow-up resumes the ticket's live draft
    env = {**cli_env, "AGENTCLI_DRAFTS_URL": queue_url}
    p = cli(["ask", "--provider", "offline", "--ticket", "HD-7", "--json", Q], env)
    assert _json(p)["drafts"][0]["id"] == rec["id"]
    p = cli(["doctor", "--provider", "offline"], env)
    assert "drafts queue" in p.out + p.err


def test_migrate_folder_to_queue_and_back_losslessly_twice(cli, cli_env, queue_url, tmp_path):
    folder = tmp_path / "team"
    folder.mkdir()
    s = DraftStore(folder)
    a, _ = s.save(text="Line one\r\nline two\x00 \u2028 trailing  \n\n", ticket="T-1",
                  questions=["q?"], lookups=[{"name": "get_order_status", "result": {"x": [1, {"y": None}]}}])
    b, _ = s.save(text="Other.", ticket="T-1")
    c, _ = s.save(text="Third.", ticket="T-2")
    s.set_findings(b.id, [{"kind": "k", "severity": "error", "message": "m"}], text=b.text)
    s.set_status(c.id, "rejected", reviewer="kim", reason="no")
    (folder / "d-0000000000ff.md").write_text("garbage")
    before = _json(cli(["drafts", "list", "--json", "--all", "--drafts-dir", str(folder)], cli_env))
    p = cli(["drafts", "migrate", "--drafts-dir", str(folder), "--to", queue_url], cli_env)
    assert p.returncode == 1 and "copied 3 drafts" in p.out and "d-0000000000ff" in p.err
    p = cli(["drafts", "migrate", "--drafts-dir", str(folder), "--to", queue_url], cli_env)
    assert "copied 0 drafts" in p.out and "3 already there" in p.out
    queued = _json(cli(["drafts", "list", "--json", "--all", "--drafts-url", queue_url], cli_env))
    assert _norm([r for r in before if r["status"] != "damaged"]) == _norm(queued)
    back = tmp_path / "back"
    for _ in range(2):
        p = cli(["drafts", "migrate", "--drafts-url", queue_url, "--to", str(back)], cli_env)
        assert p.returncode == 0, p.err
    assert sorted(x.name for x in back.glob("d-*.md")) == sorted(f"{r['id']}.md" for r in queued)
    again = _json(cli(["drafts", "list", "--json", "--all", "--drafts-dir", str(back)], cli_env))
    assert _norm(again) == _norm(queued)
    raw = (back / f"{a.id}.md").read_bytes()
    assert raw.endswith("Line one\r\nline two\x00 \u2028 trailing  \n\n".encode())  # byte for byte


# =========================================================================== least privilege

def _roles(pg_dsn, url):
    """The README's roles, and two logins: ana (staff) and kim (reviewer)."""
    import psycopg

    from agentcli.drafts.postgres import ROLES_SQL

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert ROLES_SQL.strip() in readme  # the README gives exactly this SQL
    tag = uuid.uuid4().hex[:6]
    with psycopg.connect(url, autocommit=True) as c:
        if not c.execute("SELECT 1 FROM pg_roles WHERE rolname = 'agentcli_staff'").fetchone():
            c.execute(ROLES_SQL)
        else:  # roles belong to the server: an earlier test's database made them; grant here
            grants = ROLES_SQL.replace("CREATE ROLE agentcli_staff NOLOGIN;", "").replace(
                "CREATE ROLE agentcli_reviewer NOLOGIN IN ROLE agentcli_staff;", "")
            c.execute(grants)
        c.execute(f"CREATE ROLE ana_{tag} LOGIN PASSWORD 'pw-ana-{tag}' IN ROLE agentcli_staff")
        c.execute(f"CREATE ROLE kim_{tag} LOGIN PASSWORD 'pw-kim-{tag}' IN ROLE agentcli_reviewer")
        c.execute(f"CREATE ROLE lee_{tag} LOGIN PASSWORD 'pw-lee-{tag}'")  # no grant at all
    from urllib.parse import urlsplit, urlunsplit

    def as_user(user, pw):
        p = urlsplit(url)
        return urlunsplit(p._replace(netloc=f"{user}:{pw}@{p.hostname}:{p.port}"))

    return (as_user(f"ana_{tag}", f"pw-ana-{tag}"), as_user(f"kim_{tag}", f"pw-kim-{tag}"),
            as_user(f"lee_{tag}", f"pw-lee-{tag}"))


def test_staff_and_reviewers_work_with_exactly_the_readme_grants(cli, cli_env, pg_dsn, queue_url):
    ana, kim, lee = _roles(pg_dsn, queue_url)
    p = cli(["drafts", "list", "--drafts-url", lee], cli_env)  # a login with no grant
    assert p.returncode == 3 and "GRANT agentcli_staff TO lee_" in p.err
    assert len(p.err.strip().splitlines()) == 1 and "pw-lee" not in p.err
    # staff: ask (a draft), a second draft in the ticket supersedes the first, findings stored
    p = cli(["ask", "--provider", "offline", "--ticket", "HD-1", "--json", "--drafts-url", ana, Q], cli_env)
    first = _json(p)["drafts"][0]["id"]
    s = open_drafts(url=ana, folder=None)
    try:
        d, _ = s.save(text="A better reply.", ticket="HD-1")
        assert s.get(first).meta["status"] == "superseded"
        assert s.set_findings(d.id, [{"kind": "k", "severity": "warning"}], text=d.text)
        assert s.move(d.id, "HD-2", who="ana") is not None
    finally:
        s.close()
    listed = _json(cli(["drafts", "list", "--json", "--drafts-url", ana], cli_env))
    live = listed[0]["id"]
    # staff may not decide: one line naming the grant, exit 3, nothing changed
    p = cli(["drafts", "approve", live, "--drafts-url", ana], cli_env)
    assert p.returncode == 3 and "GRANT agentcli_reviewer TO ana_" in p.err, p.err
    assert "pw-ana" not in p.err and len(p.err.strip().splitlines()) == 1
    # a reviewer may
    p = cli(["drafts", "approve", live, "--drafts-url", kim], cli_env)
    assert p.returncode == 0, p.err
    p = cli(["drafts", "stats", "--json", "--drafts-url", ana], cli_env)
    assert _json(p)["decided"]["approved_as_written"] == 1
    # staff cannot write a status by inserting a row either: the column is not theirs
    import psycopg

    with psycopg.connect(ana) as c, pytest.raises(psycopg.errors.InsufficientPrivilege):
        c.execute("INSERT INTO agentcli_drafts (id, ticket, saved_sha256, status, created_at, "
                  "meta, body) VALUES ('d-000000000001', 't', 'x', 'approved', now(), '{}', '')")
    with psycopg.connect(kim) as c, pytest.raises(psycopg.errors.InsufficientPrivilege):
        c.execute("UPDATE agentcli_draft_history SET entry = '{}'")  # append-only for everyone


# =========================================================================== real processes

def _worker(url, role, did_list, n, out):
    """One process: approve / reject / edit / draft at once on the same drafts."""
    import random

    from agentcli.drafts.backends import open_drafts
    from agentcli.drafts.base import DraftChanged, ReviewConflict

    s = open_drafts(url=url, folder=None)
    rnd = random.Random(role)
    done = []
    try:
        for i in range(n):
            did = rnd.choice(did_list)
            try:
                d = s.get(did)
                if role % 4 == 0:
                    _, ch = s.set_status(did, "approved", reviewer=f"r{role}", expect=d.version)
                    done.append(("approved", did, ch))
                elif role % 4 == 1:
                    _, ch = s.set_status(did, "rejected", reviewer=f"r{role}", reason="no",
                                         expect=d.version)
                    done.append(("rejected", did, ch))
                elif role % 4 == 2:
                    _, ch = s.set_text(did, d.text + f" edit {role}.{i}", reviewer=f"r{role}",
                                       expect=d.version)
                    done.append(("edited", did, ch))
                else:  # drafting: the same reply in the same ticket from every drafter
                    d2, created = s.save(text=f"Shared reply {i % 3}.", ticket="T-shared")
                    done.append(("saved", d2.id, created))
            except (DraftChanged, ReviewConflict):
                done.append(("refused", did, False))
    finally:
        s.close()
    out.put(done)


@pytest.mark.timeout(120)
def test_several_processes_at_once_lose_no_update(queue_url):
    s = open_drafts(url=queue_url, folder=None)
    ids = [s.save(text=f"Draft {i}.", ticket=f"T-{i}")[0].id for i in range(6)]
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(queue_url, role, ids, 25, out)) for role in range(8)]
    for p in procs:
        p.start()
    results = [out.get(timeout=100) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    try:
        decided = {}
        for res in results:
            for what, did, changed in res:
                if what in ("approved", "rejected") and changed:
                    decided.setdefault(did, []).append(what)
        for did in ids:
            d = s.get(did)
            hist = d.meta["history"]
            # every change that said it changed is in the history, in order, nothing lost
            changes = [h for h in hist if h["from"] != h["to"] or h["reason"] == "edited the text"]
            n_changed = sum(1 for res in results for w, x, ch in res if x == did and ch and w != "saved")
            assert len(changes) == n_changed, (did, hist)
            # each entry starts from the status the one before left: no write over another
            for prev, h in zip(hist, hist[1:]):
                assert h["from"] == prev["to"], hist
            # the text is every accepted edit, one after the other
            edits = [h for h in hist if h["reason"] == "edited the text"
                     or h["reason"] == "the text was edited after approval"]
            assert d.text.count(" edit ") == len(edits)
        shared = [d for d in s.in_ticket("T-shared")]
        assert len(shared) == 3  # three texts from four drafters: three drafts, no duplicate
        assert sum(d.meta["status"] == "pending_review" for d in shared) == 1  # one live
    finally:
        s.close()


@pytest.mark.timeout(90)
def test_a_process_killed_mid_transaction_leaves_nothing_half_done(queue_url):
    s = open_drafts(url=queue_url, folder=None)
    old, _ = s.save(text="The old reply.", ticket="T-9")
    code = textwrap.dedent(f"""
        import sys, time
        from agentcli.drafts import postgres
        from agentcli.drafts.backends import open_drafts
        def hang(self, conn, ticket, newer):   # the new row is inserted, not yet committed
            print("inserted", flush=True)
            time.sleep(60)
        postgres.PgDraftStore._supersede = hang
        s = open_drafts(url={queue_url!r}, folder=None)
        s.save(text="The new reply.", ticket="T-9")
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         cwd=str(Path(__file__).parent.parent))
    try:
        assert p.stdout.readline().strip() == "inserted"
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    try:
        assert [d.id for d in s.in_ticket("T-9")] == [old.id]  # the new row never committed
        assert s.get(old.id).meta["status"] == "pending_review"
        new, created = s.save(text="The new reply.", ticket="T-9")  # the ticket's lock is free
        assert created and s.get(old.id).meta["status"] == "superseded"
        assert s.set_status(new.id, "approved", reviewer="kim")[1]
    finally:
        s.close()


# =========================================================================== review, claimed

def _spawn(args, env, cols=80):
    pexpect = pytest.importorskip("pexpect")
    from .conftest import agentcli_exe

    return pexpect.spawn(agentcli_exe(), args, env={**env, "COLUMNS": str(cols), "LINES": "24"},
                         encoding="utf-8", timeout=30, dimensions=(24, cols))


@pytest.mark.timeout(120)
def test_two_reviewers_are_never_shown_the_same_draft_and_follow_waits(backend, cli_env):
    import pexpect

    kind, make, flags = backend
    s = make()
    first, _ = s.save(text="The oldest reply.", ticket="T-1")
    second, _ = s.save(text="The next reply.", ticket="T-2")
    kim = _spawn(["review", *flags], {**cli_env, "AGENTCLI_REVIEWER": "kim"})
    sam = None
    try:
        kim.expect_exact("draft 1 of 2")
        kim.expect_exact(first.id)
        kim.expect_exact("[q] quit")
        sam = _spawn(["review", "--follow", *flags], {**cli_env, "AGENTCLI_REVIEWER": "sam"})
        sam.expect_exact(second.id)
        sam.expect_exact("is being reviewed by kim")  # kim has the oldest on screen
        sam.expect_exact("[q] quit")
        sam.send("a")
        # at the end of the queue sam waits for new drafts instead of ending
        sam.expect_exact("waiting for new drafts")
        third, _ = s.save(text="A reply that came in later.", ticket="T-3")
        sam.expect_exact(third.id)
        sam.expect_exact("[q] quit")
        sam.send("r")
        sam.expect_exact("reason")
        sam.sendline("too late")
        sam.expect_exact("waiting for new drafts")
        sam.send("q")
        sam.expect_exact("1 approved, 1 rejected")
        sam.expect(pexpect.EOF)
        kim.send("a")
        kim.expect_exact("draft 2 of 2")  # sam decided it meanwhile: shown as it is now
        kim.send("q")
        kim.expect(pexpect.EOF)
    finally:
        kim.close(force=True)
        if sam is not None:
            sam.close(force=True)
    assert s.get(first.id).meta["reviewed_by"] == "kim"
    assert s.get(second.id).meta["reviewed_by"] == "sam"
    assert s.get(third.id).meta["status"] == "rejected"


# =========================================================================== the folder's index

def test_a_folder_without_an_index_or_with_files_copied_in_is_indexed_again(tmp_path, cli, cli_env):
    """The index is a cache: a folder written before it existed, or a draft copied in by hand,
    is listed newest first, and its ticket's drafts are still superseded by a new save."""
    old = tmp_path / "old"
    s = DraftStore(old)
    drafts = [s.save(text=f"Reply {i}.", ticket=f"T-{i % 3}")[0] for i in range(6)]
    for name in (".index", ".index-state"):
        (old / name).unlink()
    import shutil

    shutil.rmtree(old / ".tickets")
    other = tmp_path / "other"
    o = DraftStore(other)
    stray, _ = o.save(text="Copied in by hand.", ticket="T-0")
    shutil.copy(other / f"{stray.id}.md", old / f"{stray.id}.md")
    flags = ["--drafts-dir", str(old)]
    recs = _json(cli(["drafts", "list", "--json", "--all", *flags], cli_env))
    assert [r["id"] for r in recs] == [stray.id] + [d.id for d in reversed(drafts)]
    assert [r["id"] for r in _json(cli(["drafts", "list", "--json", "-n", "2", *flags], cli_env))] \
        == [stray.id, drafts[5].id]
    new, _ = s.save(text="Newest of T-0.", ticket="T-0")  # the save indexes the folder first
    t0 = DraftStore(old).in_ticket("T-0")
    assert [d.meta["status"] for d in t0 if d.id != new.id] == ["superseded"] * (len(t0) - 1)
    assert (old / ".index").read_text().splitlines()[-1].split("\t")[1] == new.id
    page = _json(cli(["drafts", "list", "--json", "-n", "3", *flags], cli_env))
    assert [r["id"] for r in page] == [new.id, drafts[5].id, drafts[4].id]


@pytest.mark.timeout(90)
def test_review_follow_ends_on_sigterm_and_frees_its_claim(backend, cli_env):
    import pexpect

    kind, make, flags = backend
    s = make()
    d, _ = s.save(text="Held, then let go.", ticket="T-1")
    child = _spawn(["review", "--follow", *flags], {**cli_env, "AGENTCLI_REVIEWER": "kim"})
    try:
        child.expect_exact(d.id)
        child.expect_exact("[q] quit")
        assert make().claim(d.id, "sam") is not None  # kim's screen holds it
        child.send("s")
        child.expect_exact("waiting for new drafts")
        child.kill(signal.SIGTERM)
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 143 or child.signalstatus == signal.SIGTERM
    assert make().claim(d.id, "sam") is None  # skipped: kim's claim was let go


def test_an_unreachable_queue_is_one_line_exit_3_without_the_password(cli, cli_env):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://kim:pw-secret-123@127.0.0.1:{port}/support"
    for argv in (["drafts", "list"], ["ask", "--provider", "offline", "hi"], ["review"]):
        p = cli([*argv, "--drafts-url", url], cli_env)
        assert p.returncode == 3, (argv, p.err)
        assert len(p.err.strip().splitlines()) == 1 and "pw-secret-123" not in p.err + p.out
        assert "drafts queue" in p.err


def test_a_lost_connection_is_one_clear_failure_then_the_store_reconnects(queue_url):
    import psycopg

    from agentcli.drafts.base import SaveFailed

    s = open_drafts(url=queue_url, folder=None)
    try:
        d, _ = s.save(text="Before the server dropped us.", ticket="T-1")
        with psycopg.connect(queue_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE application_name = 'agentcli-drafts' AND pid <> pg_backend_pid()")
        with pytest.raises(SaveFailed) as e:
            s.save(text="During.", ticket="T-2")
        assert "drafts queue" in str(e.value) and "pw-" not in str(e.value)
        assert s.get(d.id).text == "Before the server dropped us."  # a new connection
        again, created = s.save(text="During.", ticket="T-2")  # nothing half-saved before
        assert created
    finally:
        s.close()
