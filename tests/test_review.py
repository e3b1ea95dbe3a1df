"""The drafts queue (`agentcli drafts ...`) and session replay (`agentcli log ...`).

Real parts only: draft files written by ``DraftStore`` or by a real `agentcli ask`, session logs
written by real runs (offline, and through the real SDK against the fake Messages API), and the
installed console script as a subprocess.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from agentcli.drafts import store as drafts_mod
from agentcli.drafts.queue import provenance
from agentcli.drafts.store import DraftStore, parse, render
from agentcli.errors import UsageError
from agentcli.sessions.replay import list_sessions, open_session
from agentcli.testing.fake_anthropic import message, text, text_block, tool_use_block
from agentcli.vocab import parse_since

from .conftest import TEST_KEY, agentcli_exe

CUSTOMER_Q = "Hi, where is my order ORD-20261234? Thanks"


def _json(p):
    assert p.returncode == 0, p.err
    return json.loads(p.out)


def _no_traceback(p):
    assert "Traceback" not in p.err and "Traceback" not in p.out


def _one_line_error(p, code, *needles):
    assert p.returncode == code, (p.returncode, p.out, p.err)
    _no_traceback(p)
    lines = [ln for ln in p.err.splitlines() if ln.strip()]
    assert len(lines) == 1, p.err
    for n in needles:
        assert n in lines[0], lines[0]


def ask(question=CUSTOMER_Q, **settings):
    """One question through the real App in this process (env from cli_env / anthropic_env)."""
    from agentcli.app import App
    from agentcli.config import resolve

    settings.setdefault("provider", "offline")

    async def go():
        app = App.open(resolve(**settings))
        try:
            return (await app.run(app.conversation(), question, [])).result()
        finally:
            await app.aclose()

    return asyncio.run(go())


def _save(store: DraftStore, monkeypatch, *, text_: str, created: datetime, order=None, customer=None,
          session="20261101-000000-aaaaaa", conv=None):
    monkeypatch.setattr(drafts_mod, "now_iso", lambda: created.isoformat(timespec="seconds"))
    # one ticket per text: drafts of one ticket supersede each other
    d, created_ok = store.save(text=text_, ticket=conv or f"conv-{text_}", order_code=order, customer=customer,
                               question="q?", model="m", provider="offline", session_id=session)
    assert created_ok
    return d


# =========================================================================== drafts list

def test_drafts_list_newest_first_filters_and_pipe_format(cli, cli_env, drafts_dir, monkeypatch):
    store = DraftStore(drafts_dir)
    now = datetime.now(timezone.utc)
    old = _save(store, monkeypatch, text_="Old reply", created=now - timedelta(days=10),
                order="GH56JK78MN", customer="ana.silva@example.com")
    mid = _save(store, monkeypatch, text_="Middle reply\twith a tab", created=now - timedelta(days=2),
                order="ORD-20261234", customer="ben.okafor@example.net")
    new = _save(store, monkeypatch, text_="New reply", created=now - timedelta(hours=1),
                order="ORD-20261234", customer="Ana.Silva@example.com")
    store.set_status(mid.id, "approved", reviewer="kim")

    recs = _json(cli(["drafts", "list", "--json"], cli_env))
    assert [r["id"] for r in recs] == [new.id, mid.id, old.id]
    for r in recs:
        for k in ("id", "status", "path", "order_code", "created_at", "text"):
            assert k in r
    assert recs[1]["status"] == "approved" and recs[1]["reviewed_by"] == "kim"
    assert recs[0]["text"] == "New reply" and Path(recs[0]["path"]).is_file()

    # Every filter through the command: all of them in one call, then each alone.
    def ids(*flags):
        return [r["id"] for r in _json(cli(["drafts", "list", "--json", *flags], cli_env))]

    assert ids("--status", "pending", "--order", " ord-20261234 ", "--customer", "ANA.silva@example.com",
               "--since", "1d") == [new.id]
    assert ids("--status", "pending") == [new.id, old.id]
    assert ids("--status", "approved") == [mid.id]
    assert ids("--order", "ord-20261234") == [new.id, mid.id]
    assert ids("--customer", "ana.silva@EXAMPLE.com") == [new.id, old.id]
    assert ids("--since", "1d") == [new.id]
    assert ids("--since", "2026-01-01") == [new.id, mid.id, old.id]
    assert ids("--since", (now - timedelta(days=5)).isoformat()) == [new.id, mid.id]
    assert ids("--since", "3w") == [new.id, mid.id, old.id]
    assert ids("-n", "1") == [new.id]

    # In a pipe: a header line, then one tab-separated line per draft, text on one line.
    p = cli(["drafts", "list"], cli_env)
    assert p.returncode == 0, p.err
    header, *lines = p.out.splitlines()
    assert header.split("\t") == ["id", "status", "created", "ticket", "order", "customer",
                                   "reviewed_by", "edited", "findings", "text"]
    assert [ln.split("\t")[0] for ln in lines] == [new.id, mid.id, old.id]
    assert all(len(ln.split("\t")) == 10 for ln in lines)
    assert "Middle reply with a tab" in lines[1] and lines[1].split("\t")[6] == "kim"


def test_drafts_list_empty_damaged_and_bad_filters(cli, cli_env, drafts_dir):
    drafts_dir.mkdir(parents=True, exist_ok=True)
    p = cli(["drafts", "list"], cli_env)
    assert p.returncode == 0 and p.out == "" and "no drafts" in p.err

    (drafts_dir / "d-0123456789ab.md").write_text("not a draft at all")
    p = cli(["drafts", "list", "--json"], cli_env)
    assert p.returncode == 0
    assert [(r["id"], r["status"]) for r in json.loads(p.out)] == [("d-0123456789ab", "damaged")]
    assert "d-0123456789ab.md" in p.err and "warning" in p.err
    _no_traceback(p)

    _one_line_error(cli(["drafts", "list", "--status", "bogus"], cli_env), 2, "unknown status")
    for bad in ("yesterday", "5x", ""):
        if bad:
            with pytest.raises(UsageError, match="--since"):
                parse_since(bad)


# =========================================================================== show / provenance

def test_drafts_show_has_text_metadata_and_provenance(cli, cli_env):
    r = ask()
    did = r["drafts"][0]["id"]
    rec = _json(cli(["drafts", "show", did, "--json"], cli_env))
    assert rec["id"] == did and rec["status"] == "pending_review" and rec["edited"] is False
    assert rec["session_id"] == r["session_id"] and "ORD-20261234" in rec["text"]
    prov = rec["provenance"]
    assert prov["found"] is True and prov["question"] == CUSTOMER_Q
    assert [c["name"] for c in prov["tool_calls"]] == ["get_order_status"]
    call = prov["tool_calls"][0]
    assert call["input"] == {"order_code": "ORD-20261234"}
    assert call["result"]["status"] == "shipped" and call["is_error"] is False
    assert isinstance(call["duration_ms"], (int, float))
    assert prov["original_text"] == rec["text"]

    p = cli(["drafts", "show", did[:8]], cli_env)  # a unique prefix is enough
    assert p.returncode == 0, p.err
    for needle in (did, "pending_review", CUSTOMER_Q, "→ get_order_status", "ORD-20261234 shipped",
                   rec["text"].splitlines()[-1], "nothing has been sent", r["session_id"]):
        assert needle in p.out, needle
    assert "EDITED" not in p.out


def test_drafts_show_without_its_session_log(cli, cli_env, drafts_dir, home, monkeypatch):
    d = _save(DraftStore(drafts_dir), monkeypatch, text_="Hello", created=datetime.now(timezone.utc),
              session="20200101-000000-abcdef")
    prov = provenance(d, home / "sessions")
    assert prov["found"] is False and "not in" in prov["note"]
    p = cli(["drafts", "show", d.id], cli_env)
    assert p.returncode == 0 and "session log 20200101-000000-abcdef is not in" in p.out
    assert "Hello" in p.out


def test_hand_edit_is_marked_and_kept_through_approve(cli, cli_env):
    r = ask()
    did, path = r["drafts"][0]["id"], Path(r["drafts"][0]["path"])
    raw = path.read_text()
    path.write_text(raw.replace("has shipped.", "has shipped (checked with the carrier)."))

    rec = _json(cli(["drafts", "show", did, "--json"], cli_env))
    assert rec["edited"] is True and "checked with the carrier" in rec["text"]
    assert "checked with the carrier" not in rec["provenance"]["original_text"]
    p = cli(["drafts", "show", did], cli_env)
    assert "edited after it was saved" in p.out and "+" in p.out and "checked with the carrier" in p.out

    env = {**cli_env, "USER": "kim.reviewer"}
    p = cli(["drafts", "approve", did], env)
    assert p.returncode == 0, p.err
    assert p.out.startswith(f"approved {did}") and "kim.reviewer" in p.out and "nothing was sent" in p.out
    assert f"agentcli drafts push --to HELPDESK {did}" in p.out  # where an approved draft goes next
    d = parse(path.read_text(), path)
    assert d.meta["status"] == "approved" and d.meta["reviewed_by"] == "kim.reviewer"
    datetime.fromisoformat(d.meta["reviewed_at"])
    assert "checked with the carrier" in d.text and d.edited  # the edit survives, still marked

    before = path.read_bytes()
    p = cli(["drafts", "approve", did], {**cli_env, "USER": "someone.else"})
    assert p.returncode == 0 and p.out == ""
    assert "already approved" in p.err and "kim.reviewer" in p.err
    assert path.read_bytes() == before  # a no-op really changes nothing


def test_reject_with_reason_prefixes_and_unknown_ids(cli, cli_env, drafts_dir, monkeypatch):
    d0 = _save(DraftStore(drafts_dir), monkeypatch, text_="Hello there", created=datetime.now(timezone.utc))
    did, path = d0.id, d0.path
    p = cli(["drafts", "reject", did[:9], "--reason", "too vague about the delivery"], {**cli_env, "USER": "lee"})
    assert p.returncode == 0 and p.out.startswith(f"rejected {did}"), p.err
    d = parse(path.read_text(), path)
    assert (d.meta["status"], d.meta["review_reason"], d.meta["reviewed_by"]) == \
        ("rejected", "too vague about the delivery", "lee")

    _one_line_error(cli(["drafts", "approve", "d-000000000000"], cli_env), 2, "no draft d-000000000000")
    _one_line_error(cli(["drafts", "show", "../../etc/passwd"], cli_env), 2, "not a draft id")

    # Two ids sharing a prefix: the prefix is ambiguous.
    for did2 in ("d-abcd00000001", "d-abcd00000002"):
        meta = {"id": did2, "status": "pending_review", "created_at": "2026-11-01T00:00:00+00:00"}
        (drafts_dir / f"{did2}.md").write_text(render(meta, "x"))
    _one_line_error(cli(["drafts", "approve", "d-abcd"], cli_env), 2, "matches 2 drafts")


def test_concurrent_approve_of_the_same_draft(cli_env, drafts_dir, monkeypatch):
    d0 = _save(DraftStore(drafts_dir), monkeypatch, text_="Hello there", created=datetime.now(timezone.utc))
    did, path = d0.id, d0.path
    procs = []
    for i in range(4):
        env = {**cli_env, "USER": f"reviewer{i}"}
        procs.append(subprocess.Popen([agentcli_exe(), "drafts", "approve", did], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      stdin=subprocess.DEVNULL))
    outs = [(p.communicate(timeout=60), p.returncode) for p in procs]
    assert all(code == 0 for _, code in outs), outs
    winners = [i for i, ((out, _), _) in enumerate(outs) if out.startswith(b"approved ")]
    notes = [i for i, ((out, err), _) in enumerate(outs) if b"already approved" in err]
    assert len(winners) == 1 and len(notes) == 3, outs
    d = parse(path.read_text(), path)  # whole and parseable: no torn write
    assert d.meta["status"] == "approved" and d.meta["reviewed_by"] == f"reviewer{winners[0]}"
    assert not [f for f in path.parent.iterdir() if f.name.startswith(".tmp-")]


# =========================================================================== log replay

def _scripted_session(fake):
    """One question through the real SDK and the fake API: 2 lookups (one invalid), a draft, an answer."""
    fake.queue(
        message(text_block("Let me check that order."),
                tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}),
                tool_use_block("get_order_status", {"order_code": "NOT-A-CODE"}),
                usage={"input_tokens": 100, "output_tokens": 20}),
        message(tool_use_block("draft_reply", {"text": "Hello, your payment is not matched yet.",
                                               "order_code": "GH56JK78MN"}),
                usage={"input_tokens": 200, "output_tokens": 30}),
        text("The payment is not matched yet; I saved a draft.",
             usage={"input_tokens": 300, "output_tokens": 40, "cache_read_input_tokens": 50}),
    )
    r = ask(f"Hi, my order GH56JK78MN has no license (my key is {TEST_KEY})", provider="anthropic")
    assert r["status"] == "ok" and len(r["tool_calls"]) == 3, r
    return r


def test_log_show_replays_a_session_recorded_through_the_fake_api(cli, anthropic_env, fake_anthropic):
    r = _scripted_session(fake_anthropic)
    sid = r["session_id"]
    p = cli(["log", "show", sid], anthropic_env)
    assert p.returncode == 0, p.err
    out = p.out
    for needle in (f"session {sid}", "anthropic/", "? Hi, my order GH56JK78MN has no license",
                   "Let me check that order.",
                   '→ get_order_status {"order_code": "GH56JK78MN"}',
                   "← get_order_status ok (", "GH56JK78MN pending_payment",
                   "✗ get_order_status invalid_input (", "is not a valid order code",
                   "→ draft_reply", f"✎ draft {r['drafts'][0]['id']} saved", "  │ ",
                   "The payment is not matched yet; I saved a draft.",
                   "■ ok (end_turn)", "3 model calls", "tokens in 600 / out 90", "cache read 50",
                   "3 tool calls (1 failed) · 1 draft · status ok"):
        assert needle in out, (needle, out)
    assert out.index("Let me check") < out.index("→ get_order_status") < out.index("→ draft_reply") \
        < out.index("The payment is not matched yet") < out.index("■ ok")
    assert TEST_KEY not in out and TEST_KEY not in p.err and "***" in out  # redacted in the log

    dump = _json(cli(["log", "show", sid, "--json"], anthropic_env))
    assert dump["session_id"] == sid and dump["warnings"] == []
    types = [e["type"] for e in dump["events"]]
    assert types[0] == "session_start" and types[-1] == "checked" and "turn_finished" in types
    assert types.count("tool_result") == 3 and types.count("draft_saved") == 1
    errs = [e for e in dump["events"] if e["type"] == "tool_result" and e["is_error"]]
    assert len(errs) == 1 and errs[0]["input"] == {"order_code": "NOT-A-CODE"}

    p = cli(["log", "show", sid, "--errors"], anthropic_env)
    assert "✗ get_order_status invalid_input" in p.out and "← get_order_status ok" not in p.out
    assert "→ draft_reply" not in p.out and "showing 1 tool call" in p.out
    p = cli(["log", "show", sid, "--tool", "draft_reply"], anthropic_env)
    assert "→ draft_reply" in p.out and "get_order_status" not in p.out.split("■")[0]

    # The draft's provenance comes from the same log: both lookups, the failed one flagged.
    rec = _json(cli(["drafts", "show", r["drafts"][0]["id"], "--json"], anthropic_env))
    calls = rec["provenance"]["tool_calls"]
    assert [(c["input"]["order_code"], c["is_error"]) for c in calls] == \
        [("GH56JK78MN", False), ("NOT-A-CODE", True)]


class _RemovedAfterListing(type(Path())):
    """A log a teammate removed between the folder's listing and its sort: it was there a moment
    ago, and a stat of it now finds nothing."""

    def exists(self, **kw):
        return True

    def stat(self, **kw):
        raise FileNotFoundError(2, "No such file or directory", str(self))


def test_a_log_removed_while_the_logs_are_sorted_is_sorted_as_the_oldest_not_a_crash(tmp_path):
    from agentcli.sessions.replay import _newest_first

    gone = _RemovedAfterListing(tmp_path / "20261130-100000-aaaaaaaaaaaa.jsonl")
    here = tmp_path / "20261130-100000-bbbbbbbbbbbb.jsonl"
    here.write_text("")
    assert sorted([gone, here], key=_newest_first, reverse=True) == [here, gone]


def test_log_list_newest_first_counts_and_filters(cli, cli_env, anthropic_env, fake_anthropic, home):
    first = ask("What are your opening hours?")
    incomplete = ask(CUSTOMER_Q, max_turns=1)
    assert incomplete["status"] == "incomplete"
    scripted = _scripted_session(fake_anthropic)

    recs = _json(cli(["log", "list", "--json"], cli_env))
    assert [s["id"] for s in recs] == [scripted["session_id"], incomplete["session_id"], first["session_id"]]
    top = recs[0]
    assert top["provider"] == "anthropic" and top["model"]
    assert (top["tool_calls"], top["tool_errors"], top["drafts"], top["status"]) == (3, 1, 1, "ok")
    assert top["question"].startswith("Hi, my order GH56JK78MN") and TEST_KEY not in json.dumps(top)
    datetime.fromisoformat(top["started_at"])
    assert recs[1]["status"] == "incomplete" and recs[1]["tool_calls"] == 1
    assert (recs[2]["tool_calls"], recs[2]["drafts"], recs[2]["status"]) == (0, 0, "ok")

    assert [s["id"] for s in _json(cli(["log", "list", "--json", "--errors"], cli_env))] == \
        [scripted["session_id"], incomplete["session_id"]]

    def ids(**kw):
        return [s.id for s in list_sessions(home / "sessions", **kw)]

    assert ids(tool="draft_reply") == [scripted["session_id"]]
    assert ids(tool="get_order_status", limit=1) == [scripted["session_id"]]
    assert ids(tool="no_such_tool") == []

    p = cli(["log", "list", "--tool", "get_order_status"], cli_env)  # pipe: tab-separated, newest first
    assert p.returncode == 0
    header, *rows = [ln.split("\t") for ln in p.out.splitlines()]
    assert header == ["session", "started", "question", "questions", "provider/model", "tools",
                      "failed", "drafts", "status"]  # the table's columns
    assert [r[0] for r in rows] == [scripted["session_id"], incomplete["session_id"]]
    assert rows[0][8] == "ok" and rows[1][8] == "incomplete"
    assert rows[0][4].startswith("anthropic/") and rows[0][5:8] == ["3", "1", "1"]


def test_damaged_log_lines_are_skipped_with_a_warning(cli, cli_env, home):
    r = ask()
    path = home / "sessions" / f"{r['session_id']}.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(3, "this is {not json\n")
    lines.insert(5, '{"type": "tool_result", "id": "x"}\n')  # valid JSON, incomplete record
    path.write_text("".join(lines) + lines[-1][: len(lines[-1]) // 2])  # a cut last line

    p = cli(["log", "show", r["session_id"]], cli_env)
    assert p.returncode == 0, p.err
    _no_traceback(p)
    assert "line 4 is damaged" in p.err and f"line {len(lines) + 1} is damaged" in p.err
    assert "incomplete" in p.err
    assert "← get_order_status ok" in p.out and r["drafts"][0]["id"] in p.out

    dump = _json(cli(["log", "show", r["session_id"], "--json"], cli_env))
    assert len(dump["warnings"]) == 2
    p = cli(["log", "list", "--json"], cli_env)
    assert p.returncode == 0 and json.loads(p.out)[0]["damaged_lines"] == 2 and "damaged" in p.err
    rec = _json(cli(["drafts", "show", r["drafts"][0]["id"], "--json"], cli_env))
    assert rec["provenance"]["found"] is True  # provenance survives a damaged line too


def test_log_show_unknown_or_unsafe_session(cli, cli_env, home):
    p = cli(["log", "list"], cli_env)
    assert p.returncode == 0 and "no sessions" in p.err
    _one_line_error(cli(["log", "show", "20990101-000000-ffffff"], cli_env), 2, "no session")
    _one_line_error(cli(["log", "show", "../../etc/passwd"], cli_env), 2, "not a session id")
    r = ask()
    p = cli(["log", "show", "last"], cli_env)
    assert p.returncode == 0 and f"session {r['session_id']}" in p.out
    copied = home / "copy.jsonl"
    copied.write_bytes((home / "sessions" / f"{r['session_id']}.jsonl").read_bytes())
    p = cli(["log", "show", str(copied)], cli_env)  # a log copied from elsewhere
    assert p.returncode == 0 and "← get_order_status ok" in p.out
    assert open_session(home / "sessions", r["session_id"][:17]).stem == r["session_id"]  # a prefix


# =========================================================================== startup and terminal

def test_tables_on_a_terminal(cli_env):
    pexpect = pytest.importorskip("pexpect")
    r = ask()
    env = {**cli_env, "COLUMNS": "160", "LINES": "50", "USER": "kim"}
    for args, needles in ((["drafts", "list"], ["1 draft in", "status", "pending", r["drafts"][0]["id"]]),
                          (["log", "list"], ["sessions (newest first) in", "provider/model", r["session_id"], "offline"])):
        child = pexpect.spawn(agentcli_exe(), args, env=env, encoding="utf-8", timeout=30,
                              dimensions=(50, 160))
        out = child.read()
        child.close()
        assert child.exitstatus == 0, out
        # a table on a terminal (a header row over a rule of the table's width, one row each),
        # not tab-separated lines
        lines = [ln for ln in out.replace("\r", "").split("\n")]
        header, rule = lines[2], lines[3]
        assert header.split()[0] in ("id", "session") and set(rule) == {"─"}, out
        assert len(rule) >= len(header.rstrip()) and len(rule) <= 160, out
        for n in needles:
            assert n in out, (n, out)
        assert "\t" not in out


def test_hand_edited_headers_are_damaged_drafts_not_crashes(cli, cli_env, drafts_dir):
    drafts_dir.mkdir(parents=True, exist_ok=True)
    good = ('---\nid: "d-00000000000a"\nstatus: "pending_review"\ncreated_at: "2026-11-30T10:00:00+00:00"\n'
            '---\nHello.\n')
    (drafts_dir / "d-00000000000a.md").write_text(good)
    bad = {  # file name -> header that must not reach a terminal or a sort
        "d-00000000000b": '---\nid: "d-00000000000b\\u001b]0;PWNED\\u0007"\nstatus: "pending_review"\n---\nx\n',
        "d-00000000000c": '---\nid: "d-00000000000c"\nstatus: "\\u001b[2J"\n---\nx\n',
        "d-00000000000d": '---\nid: "d-00000000000d"\nstatus: "approved"\ncreated_at: 7\n---\nx\n',
        "d-00000000000e": '---\nstatus: "approved"\n---\nx\n',
    }
    for name, content in bad.items():
        (drafts_dir / f"{name}.md").write_text(content)
    (drafts_dir / "d-00000000000f.md").mkdir()
    p = cli(["drafts", "list", "--json"], cli_env)
    assert p.returncode == 0, p.err
    recs = json.loads(p.out)
    assert [d["id"] for d in recs if d["status"] != "damaged"] == ["d-00000000000a"]
    assert sorted(d["id"] for d in recs if d["status"] == "damaged") == sorted([*bad, "d-00000000000f"])
    assert all(name in p.err for name in bad)
    _no_traceback(p)
    for name in [*bad, "d-00000000000f"]:
        p = cli(["drafts", "show", name], cli_env)
        _one_line_error(p, 2, name)
        assert "\x1b" not in p.err and "\x1b" not in p.out


def test_orders_show_redacts_secrets_held_in_the_database(cli, cli_env, tmp_path):
    import sqlite3

    from agentcli.stores import init_sqlite
    from tests.conftest import TEST_KEY

    db = tmp_path / "leaky.sqlite3"
    init_sqlite(db, 10)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE orders SET status_detail = ? WHERE code = 'GH56JK78MN'",
                  (f"ops note: key {TEST_KEY}, db password=hunter2hunter2",))
    env = {**cli_env, "ANTHROPIC_API_KEY": TEST_KEY}
    for args in (["orders", "show", "GH56JK78MN", "--db", str(db)],
                 ["orders", "show", "GH56JK78MN", "--db", str(db), "--json"]):
        p = cli(args, env)
        assert p.returncode == 0, p.err
        assert "ops note" in p.out
        assert TEST_KEY not in p.out + p.err and "hunter2hunter2" not in p.out + p.err


def test_key_value_dsn_passwords_and_a_home_that_is_a_file(cli, cli_env, tmp_path):
    p = cli(["orders", "show", "GH56JK78MN", "--db", "host=127.0.0.1 port=9 password=s3cr3tPW99"], cli_env)
    _one_line_error(p, 3)
    assert "s3cr3tPW99" not in p.err and "password=***" in p.err
    home = tmp_path / "a-file"
    home.write_text("")
    env = {k: v for k, v in cli_env.items() if k != "AGENTCLI_DB"}
    env["AGENTCLI_HOME"] = str(home)
    for args in (["orders", "show", "GH56JK78MN"], ["db", "init"]):
        _one_line_error(cli(args, env), 3, "AGENTCLI_HOME")


def test_log_show_skips_records_of_the_wrong_shape(cli, cli_env, home):
    sessions = home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    sid = "20261130-100000-aaaaaaaaaaaa"
    (sessions / f"{sid}.jsonl").write_text("\n".join(json.dumps(e) for e in [
        {"type": "session_start", "session_id": sid, "ts": 1},
        {"type": "tool_call", "id": 1, "name": {"a": 1}, "input": "x", "session_id": sid, "turn": 1},
        {"type": "turn_finished", "status": "ok", "stop_reason": "end_turn", "turns": 1, "usage": "u",
         "answer": "a", "session_id": sid},
    ]) + "\n")
    for args in (["log", "show", sid], ["log", "list"], ["log", "show", sid, "--json"]):
        p = cli(args, cli_env)
        assert p.returncode == 0, (args, p.err)
        _no_traceback(p)
        assert "internal error" not in p.err
    p = cli(["log", "show", sid], cli_env)
    assert "damaged" in p.err and "skipped" in p.err


@pytest.mark.parametrize("since", ["99999999999d", "0001-01-01", "0001-01-01T00:00:00", "999999999999w"])
def test_since_out_of_the_calendar_is_a_usage_error(cli, cli_env, since):
    p = cli(["drafts", "list", "--since", since], cli_env)
    assert p.returncode == 2, p.err
    assert "--since" in p.err and "internal error" not in p.err and len(p.err.strip().splitlines()) == 1
