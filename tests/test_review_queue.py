"""Review at team scale (issue 16): tickets on every draft, lists that fit, show/edit, several
drafts at once, the `review` command in a pseudo-terminal.

Real parts: drafts written by real runs (offline, and the real SDK against the fake Messages
API), real draft files, the console script in a pseudo-terminal where a terminal is the point.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import pytest

from agentcli.drafts.store import DraftStore
from agentcli.testing.fake_anthropic import message, text, tool_use_block

from .conftest import agentcli_exe

Q = "Hi, where is my order ORD-20261234? Thanks"


def _json(p):
    assert p.returncode == 0, p.err
    return json.loads(p.out)


def _drafts(drafts_dir):
    return sorted(p.name for p in drafts_dir.glob("d-*.md"))


# =========================================================================== tickets

def test_ticket_flag_records_the_ticket_its_questions_lookups_and_customer(cli, cli_env):
    p = cli(["ask", "--provider", "offline", "--ticket", "T-1042", "--json", Q], cli_env)
    r = _json(p)
    [rec] = _json(cli(["drafts", "list", "--json", "--ticket", "T-1042"], cli_env))
    assert rec["id"] == r["drafts"][0]["id"] and rec["ticket"] == "T-1042"
    assert rec["questions"] == [Q]
    assert [x["input"]["order_code"] for x in rec["lookups"]] == ["ORD-20261234"]
    assert rec["lookups"][0]["result"]["status"] == "shipped"
    # no --customer: the customer comes from the order that was looked up
    assert rec["customer"] == "ben.okafor@example.net"
    assert [d["id"] for d in _json(cli(["drafts", "list", "--json", "--customer",
                                        "BEN.okafor@example.net"], cli_env))] == [rec["id"]]
    assert _json(cli(["drafts", "list", "--json", "--ticket", "T-9"], cli_env)) == []
    # the model never sees the customer's address it was not given
    assert "ben.okafor" not in json.dumps(r["tool_calls"])
    # a hostile ticket id is a usage error, not a header
    p = cli(["ask", "--provider", "offline", "--ticket", "T\u2028x", Q], cli_env)
    assert p.returncode == 2 and "--ticket" in p.err


def test_provenance_is_the_whole_ticket_and_lookups_of_earlier_turns_only(cli, anthropic_env,
                                                                          fake_anthropic, drafts_dir):
    fake_anthropic.queue(
        text("Which order is it?"),
        message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"})),
        # a new lookup and a draft in ONE response: the draft is refused (written before the
        # result existed) ...
        message(tool_use_block("get_order_status", {"order_code": "ORD-20261234"}),
                tool_use_block("draft_reply", {"text": "Your payment is being matched."})),
        # ... and saved beside a repeat of a lookup already read: it relied on earlier turns only
        message(tool_use_block("get_order_status", {"order_code": "ORD-20261234"}),
                tool_use_block("draft_reply", {"text": "Your payment is being matched."})),
        text("Saved a draft."),
    )
    p = cli(["chat", "--ticket", "HD-7"], anthropic_env, input="where is my order?\nit is GH56JK78MN\n")
    assert p.returncode == 0, p.err
    [rec] = _json(cli(["drafts", "list", "--json"], anthropic_env))
    assert rec["ticket"] == "HD-7"
    assert rec["questions"] == ["where is my order?", "it is GH56JK78MN"]
    assert [x["input"]["order_code"] for x in rec["lookups"]] == ["GH56JK78MN", "ORD-20261234"]
    assert rec["customer"] is None  # two customers' orders were looked up: none is guessed


def _batch_reply(fake, delay_second=0.0, fail_second=False):
    from agentcli.testing.fake_anthropic import error

    fake.queue(message(tool_use_block("draft_reply", {"text": "We are on it.", "order_code": "GH56JK78MN"})),
               error(500, "boom") if fail_second else text("Drafted.", delay=delay_second))


def test_batch_resume_after_a_500_reuses_the_draft(cli, anthropic_env, fake_anthropic, tmp_path, drafts_dir):
    f = tmp_path / "q.jsonl"
    f.write_text(json.dumps({"id": "T-1", "question": "order GH56JK78MN?"}) + "\n")
    out = tmp_path / "out.jsonl"
    _batch_reply(fake_anthropic, fail_second=True)
    p = cli(["batch", str(f), "--output", str(out), "--retries", "0"], anthropic_env)
    assert p.returncode != 0 and '"status": "error"' in out.read_text()
    first = _drafts(drafts_dir)
    assert len(first) == 1
    _batch_reply(fake_anthropic)
    p = cli(["batch", str(f), "--output", str(out), "--resume"], anthropic_env)
    assert p.returncode == 0, p.err
    assert _drafts(drafts_dir) == first  # the same draft, not a second pending one
    [rec] = _json(cli(["drafts", "list", "--json", "--all"], anthropic_env))
    assert rec["ticket"] == "T-1" and rec["status"] == "pending_review"


def _batch_reply_openai(fake, delay_second=0.0):
    """``_batch_reply`` in Chat Completions terms."""
    from agentcli.testing import fake_openai as fo

    fake.queue(fo.completion(fo.tool_call("draft_reply", {"text": "We are on it.", "order_code": "GH56JK78MN"})),
               fo.text("Drafted.", delay=delay_second))


@pytest.mark.slow
def test_batch_resume_after_a_kill_between_the_draft_and_the_record(cli, openai_env, fake_openai,
                                                                    tmp_path, drafts_dir):
    # the model is the openai provider's: the kill and the resume are the point, and its SDK
    # loads in ~0.95 s of CPU against anthropic's ~1.6 s
    f = tmp_path / "q.jsonl"
    f.write_text(json.dumps({"id": 42, "question": "order GH56JK78MN?"}) + "\n")
    out = tmp_path / "out.jsonl"
    _batch_reply_openai(fake_openai, delay_second=60)
    proc = subprocess.Popen([agentcli_exe(), "batch", str(f), "--output", str(out)], env=openai_env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        # the draft is on disk and the run is waiting for its (delayed) second answer
        while not (_drafts(drafts_dir) and len(fake_openai.requests) >= 2) and time.monotonic() < deadline:
            assert proc.poll() is None, "the batch ended before it could be killed"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    first = _drafts(drafts_dir)
    # the draft is saved, the record is not: --output is opened (created) before the first
    # question and holds nothing yet
    assert len(first) == 1 and out.read_text() == ""
    fake_openai.queue()  # the delayed reply was consumed by the killed run
    _batch_reply_openai(fake_openai)
    p = cli(["batch", str(f), "--output", str(out), "--resume"], openai_env)
    assert p.returncode == 0, p.err
    assert _drafts(drafts_dir) == first
    assert json.loads(out.read_text().splitlines()[-1])["drafts"][0]["id"] == first[0][:-3]


# =========================================================================== lists

def _store_with(drafts_dir, n, **kw):
    store = DraftStore(drafts_dir)
    return store, [store.save(text=f"Reply number {i}.", ticket=f"T-{i}", **kw)[0] for i in range(n)]


def test_superseded_flagged_damaged_and_missing_folder(cli, cli_env, drafts_dir, home):
    p = cli(["drafts", "list"], cli_env)
    assert p.returncode == 3 and "does not exist" in p.err and len(p.err.splitlines()) == 1
    # the session logs say where the most recent drafts went
    other = home / "elsewhere"
    assert cli(["ask", "--provider", "offline", "--drafts-dir", str(other), "-q", Q], cli_env).returncode == 0
    p = cli(["drafts", "list"], cli_env)
    assert p.returncode == 3 and str(other) in p.err

    store = DraftStore(drafts_dir)
    old, _ = store.save(text="First try.", ticket="T-5")
    new, _ = store.save(text="Shorter.", ticket="T-5")
    store.set_findings(new.id, [{"kind": "unsupported_date", "severity": "error", "message": "x"}],
                       text=new.text)
    (drafts_dir / "d-0000000000ff.md").write_text("garbage")
    recs = _json(cli(["drafts", "list", "--json"], cli_env))
    assert [(r["id"], r["status"]) for r in recs] == [(new.id, "pending_review"), ("d-0000000000ff", "damaged")]
    assert {r["id"] for r in _json(cli(["drafts", "list", "--json", "--all"], cli_env))} >= {old.id, new.id}
    assert [r["id"] for r in _json(cli(["drafts", "list", "--json", "--flagged"], cli_env))
            if r["status"] != "damaged"] == [new.id]
    assert [r["findings"][0]["kind"] for r in _json(cli(["drafts", "list", "--json", "--flagged"], cli_env))
            if r["status"] != "damaged"] == ["unsupported_date"]


def test_pipe_limit_pages(cli, cli_env, drafts_dir):
    _, drafts = _store_with(drafts_dir, 5)
    newest = [d.id for d in reversed(drafts)]
    p = cli(["drafts", "list", "-n", "3"], cli_env)
    assert p.returncode == 0 and len(p.out.splitlines()) == 4
    assert "drafts 1–3; more: --page 2 --limit 3" in p.err
    assert [ln.split("\t")[0] for ln in p.out.splitlines()[1:]] == newest[:3]
    p = cli(["drafts", "list", "-n", "3", "--page", "2"], cli_env)
    assert [ln.split("\t")[0] for ln in p.out.splitlines()[1:]] == newest[3:]
    assert "drafts 4–5; the last page" in p.err
    p = cli(["drafts", "list", "-n", "3", "--page", "3"], cli_env)
    assert p.returncode == 0 and "no drafts on page 3" in p.err
    recs = json.loads(cli(["drafts", "list", "-n", "2", "--page", "2", "--json"], cli_env).out)
    assert [r["id"] for r in recs] == newest[2:4]


def _spawn(args, env, cols):
    pexpect = pytest.importorskip("pexpect")
    return pexpect.spawn(agentcli_exe(), args, env={**env, "COLUMNS": str(cols), "LINES": "24"},
                         encoding="utf-8", timeout=30, dimensions=(24, cols))


@pytest.mark.parametrize("cols", [40, 80, 120])
def test_table_keeps_whole_ids_escapes_hostile_text_and_pages(cli_env, drafts_dir, tmp_path, cols):
    store, drafts = _store_with(drafts_dir, 30, customer="[link=http://x]ana[/link]@example.com")
    # a hostile created_at (escape sequences and rich markup) in a hand-edited header
    p = drafts[0].path
    p.write_text(p.read_text().replace(drafts[0].meta["created_at"], "[bold]\\u001b]0;PWN\\u0007"))
    pager = tmp_path / "pager.sh"
    pager.write_text("#!/bin/sh\necho PAGER-RAN\ncat\n")
    pager.chmod(0o755)
    child = _spawn(["drafts", "list", "-n", "25"], {**cli_env, "PAGER": str(pager)}, cols)
    out = child.read()
    child.close()
    assert child.exitstatus == 0, out
    assert "PAGER-RAN" in out  # 25 rows on a 24-line terminal
    assert "25 pending drafts (drafts 1–25; more: --page 2 --limit 25)" in re.sub(r"\s+", " ", out)
    flat = re.sub(r"\x1b\[[0-9;]*m", "", out)
    for d in drafts[6:]:  # the 24 newest and drafts[0] (its created_at sorts first)
        assert d.id in flat, (d.id, flat)  # never cut, never split across lines
    assert "\x1b]" not in out and "\x07" not in out  # the planted title escape never reaches it
    header = next(ln for ln in flat.splitlines() if ln.split()[:1] == ["id"])
    assert "status" not in header and "25 pending drafts" in flat  # one status: in the title
    assert all(len(ln) <= cols for ln in flat.replace("\r", "").split("\n"))
    if "customer" in header:  # the column fits: the markup in it is shown as text, not applied
        assert "[link=http://x]ana" in flat
    else:
        assert cols < 80 and "[link=" not in flat


# =========================================================================== show, edit, decide

def test_show_text_last_and_history(cli, cli_env, drafts_dir):
    store, (a, b) = _store_with(drafts_dir, 2)
    store.set_status(a.id, "rejected", reviewer="kim", reason="wrong order")
    p = cli(["drafts", "show", b.id, "--text"], cli_env)
    assert p.returncode == 0 and p.out == "Reply number 1."  # exactly the reply
    p = cli(["drafts", "show", "last"], cli_env)
    assert p.returncode == 0 and b.id in p.out
    p = cli(["drafts", "show", a.id], cli_env)
    assert "kim: pending_review → rejected — wrong order" in p.out


def test_edit_keeps_the_edit_and_reopens_an_approved_draft(cli, cli_env, drafts_dir, tmp_path):
    store, (d,) = _store_with(drafts_dir, 1)
    store.set_status(d.id, "approved", reviewer="kim")
    script = tmp_path / "ed.py"
    script.write_text("import sys\np = sys.argv[1]\ns = open(p).read()\n"
                      "open(p, 'w').write(s.replace('number 0', 'zero'))\n")
    env = {**cli_env, "EDITOR": f"{sys.executable} {script}", "VISUAL": "", "AGENTCLI_REVIEWER": "lee"}
    p = cli(["drafts", "edit", d.id], env)
    assert p.returncode == 0, p.err
    assert "-Reply number 0." in p.out and "+Reply zero." in p.out
    d2 = store.get(d.id)
    assert d2.text == "Reply zero." and d2.meta["status"] == "pending_review"
    assert d2.meta["approved_text"] == "Reply number 0." and d2.meta["history"][-1]["who"] == "lee"


def test_approve_and_reject_several_by_id_and_filter(cli, cli_env, drafts_dir):
    store, ds = _store_with(drafts_dir, 4)
    env = {**cli_env, "AGENTCLI_REVIEWER": "kim"}
    p = cli(["drafts", "approve", ds[0].id, ds[1].id], env)
    assert p.returncode == 0, p.err
    assert [store.get(d.id).meta["status"] for d in ds[:2]] == ["approved", "approved"]
    assert store.get(ds[0].id).meta["reviewed_by"] == "kim"
    # a decided draft changes again only with --force
    p = cli(["drafts", "reject", ds[0].id, "--reason", "no"], env)
    assert p.returncode == 2 and "--force" in p.err and store.get(ds[0].id).meta["status"] == "approved"
    assert cli(["drafts", "reject", ds[0].id, "--reason", "no", "--force"], env).returncode == 0
    # by filter: a script must say --yes
    p = cli(["drafts", "reject", "--ticket", "T-2", "--reason", "dup"], env)
    assert p.returncode == 2 and "--yes" in p.err and store.get(ds[2].id).meta["status"] == "pending_review"
    p = cli(["drafts", "reject", "--ticket", "T-2", "--reason", "dup", "--yes"], env)
    assert p.returncode == 0 and store.get(ds[2].id).meta["status"] == "rejected"
    assert store.get(ds[3].id).meta["status"] == "pending_review"
    assert cli(["drafts", "approve"], env).returncode == 2


def test_reviewer_from_agentcli_toml(cli, cli_env, drafts_dir, tmp_path):
    store, (d,) = _store_with(drafts_dir, 1)
    (tmp_path / "agentcli.toml").write_text('reviewer = "sam"\n')
    assert cli(["drafts", "approve", d.id], cli_env, cwd=tmp_path).returncode == 0
    assert store.get(d.id).meta["reviewed_by"] == "sam"


# =========================================================================== review

def test_review_steps_through_pending_drafts_in_a_terminal(cli_env, drafts_dir):
    store, ds = _store_with(drafts_dir, 3)
    child = _spawn(["review"], {**cli_env, "AGENTCLI_REVIEWER": "kim"}, 80)
    try:
        child.expect_exact("draft 1 of 3")
        child.expect_exact("[a] approve")
        child.send("a")
        child.expect_exact("draft 2 of 3")
        child.expect_exact("[q] quit")
        child.send("s")
        child.expect_exact("draft 3 of 3")
        child.expect_exact("[q] quit")
        child.send("b")
        child.expect_exact("draft 2 of 3")
        child.expect_exact("[q] quit")
        child.send("r")
        child.expect_exact("reason")
        child.sendline("wrong order")
        child.expect_exact("draft 3 of 3")
        child.expect_exact("[q] quit")
        child.send("q")
        child.expect_exact("1 approved, 1 rejected, 1 left pending")
        child.expect(__import__("pexpect").EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    st = [store.get(d.id).meta for d in ds]  # saved oldest first
    assert st[0]["status"] == "approved" and st[0]["reviewed_by"] == "kim"
    assert st[1]["status"] == "rejected" and st[1]["review_reason"] == "wrong order"
    assert st[2]["status"] == "pending_review"


def test_review_needs_a_terminal(cli, cli_env, drafts_dir):
    _store_with(drafts_dir, 1)
    p = cli(["review"], cli_env)
    assert p.returncode == 2 and "terminal" in p.err


def test_a_bulk_approval_leaves_a_draft_not_fully_checked_for_a_person(cli, cli_env, drafts_dir):
    store = DraftStore(drafts_dir)
    d, _ = store.save(text="Thanks, a colleague is looking into it.", ticket="T-1")
    store.set_findings(d.id, [{"kind": "not_fully_checked", "severity": "warning", "where": d.id,
                               "message": "the draft was not fully checked"}], text=d.text)
    p = cli(["drafts", "approve", "--ticket", "T-1", "--yes"], cli_env)
    assert p.returncode == 1 and f"{d.id} left pending: its text was not fully checked" in p.err
    assert DraftStore(drafts_dir).get(d.id).meta["status"] == "pending_review"
    assert cli(["drafts", "approve", d.id, "--force"], cli_env).returncode == 0  # a person's call


def test_a_bulk_approval_leaves_flagged_drafts_for_a_person(cli, cli_env, drafts_dir):
    store = DraftStore(drafts_dir)
    ok, _ = store.save(text="Thanks, a colleague is looking into it.", ticket="T-1")
    bad, _ = store.save(text="We have approved your full refund.", ticket="T-2")
    store.set_findings(bad.id, [{"kind": "forbidden_promise", "severity": "error",
                                 "message": "promises a refund", "where": bad.id}], text=bad.text)
    # --force re-decides a decided draft by id; a filter never approves a flagged one with it
    p = cli(["drafts", "approve", "--status", "pending", "--yes", "--force"], cli_env)
    assert p.returncode == 1, p.err  # the others approved; a human must look at this one
    assert f"{bad.id} left pending: error-level grounding finding forbidden_promise" in p.err
    assert "1 draft with error-level grounding findings" in p.err
    assert DraftStore(drafts_dir).get(ok.id).meta["status"] == "approved"
    assert DraftStore(drafts_dir).get(bad.id).meta["status"] == "pending_review"
    p = cli(["drafts", "approve", "--status", "pending", "--yes"], cli_env)
    assert p.returncode == 1 and "nothing else to approve" in p.err
    # by id, from a script: a person must confirm on a terminal, or say --force
    p = cli(["drafts", "approve", bad.id], cli_env)
    assert p.returncode == 2 and "--force" in p.err and "forbidden_promise" in p.err
    assert DraftStore(drafts_dir).get(bad.id).meta["status"] == "pending_review"
    p = cli(["drafts", "approve", bad.id, "--force"], cli_env)
    assert p.returncode == 0, p.err
    assert DraftStore(drafts_dir).get(bad.id).meta["status"] == "approved"
