"""Adversarial pass over tickets: resumed the next day, moved with `/ticket ID`, scoped to a
customer. Demo data: GH56JK78MN is ana.silva@example.com's order, ORD-20261234 ben.okafor's."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess

import pytest

from agentcli.app import App
from agentcli.config import resolve
from agentcli.testing.fake_anthropic import message, text, tool_use_block
from agentcli.tools import default_registry

from .conftest import agentcli_exe, as_a_user, saved_drafts
from .test_repl import GUARD_S, piped_repl, type_lines

ANA, BEN = "ana.silva@example.com", "ben.okafor@example.net"


def ask(cli, env, ticket, code, *flags):
    """The reviewer's ``Q``: one offline question about order ``code`` that drafts a reply."""
    return cli(["ask", "--provider", "offline", "--ticket", ticket, *flags,
                f"Hi, where is my order {code}? please reply"], env)


def chat(keys: str, ticket: str | None = None, **settings) -> tuple[int, str]:
    """``agentcli chat --provider offline [--ticket ID]`` in this process, ``keys`` typed one
    line per prompt; (exit code, screen)."""

    async def main():
        app = App.open(resolve(provider="offline", **settings), registry=default_registry())
        try:
            with piped_repl(app, ticket=ticket) as (repl, inp, buf):
                running = asyncio.create_task(repl.run())
                await type_lines(repl, inp, keys)
                return await asyncio.wait_for(running, GUARD_S), buf.getvalue()
        finally:
            await app.aclose()

    return asyncio.run(main())


# --------------------------------------------------------------------------- the history found

def test_a_resumed_conversation_moved_by_slash_ticket_brings_its_earlier_days_along(cli, cli_env):
    """HD-7 resumed, asked again and moved into HD-8: HD-8's log continues the resumed log, and
    that one was resumed from HD-7's first log. Only `continues` was followed: `chat --ticket
    HD-8` came back with the resumed session's question alone, the first day's lost."""
    assert ask(cli, cli_env, "HD-7", "GH56JK78MN").returncode == 0
    code, screen = chat("Is the license for GH56JK78MN there yet? please reply\r/ticket HD-8\r/exit\r",
                        ticket="HD-7")
    assert code == 0 and "moved into it" in screen, screen
    code, screen = chat("/exit\r", ticket="HD-8")
    assert code == 0 and "resumed ticket HD-8: 2 earlier questions" in screen, screen
    sessions = json.loads(cli(["log", "list", "--json", "--ticket", "HD-8"], cli_env).out)
    assert len(sessions) == 3, sessions


def _list_and_resume_unreadable(log, env):
    """`log list --ticket HD-7` and a resume of HD-7 with LOG unreadable (real processes: the
    permission must bite) -> (listed, asked)."""
    log.chmod(0o000)
    try:
        listed = subprocess.run(as_a_user([agentcli_exe(), "log", "list", "--ticket", "HD-7"]),
                                env=env, capture_output=True, text=True, timeout=60)
        asked = subprocess.run(as_a_user([agentcli_exe(), "ask", "--provider", "offline", "-q",
                                          "--ticket", "HD-7", "make it shorter"]),
                               env=env, capture_output=True, text=True, timeout=60)
    finally:
        log.chmod(0o600)
    return listed, asked


def test_an_unreadable_log_of_the_ticket_is_said_not_skipped(cli, cli_env, home):
    """A log that cannot be read may hold part of the ticket: `log list --ticket` said "no
    sessions match" and a resume came back with less, both without a word."""
    assert ask(cli, cli_env, "HD-7", "GH56JK78MN").returncode == 0
    (log,) = (home / "sessions").glob("*.jsonl")
    listed, asked = _list_and_resume_unreadable(log, cli_env)
    assert listed.returncode == 0, listed.stderr
    assert f"warning: {log.name}: cannot read it (Permission denied)" in listed.stderr, listed.stderr
    assert asked.returncode == 0 and "Traceback" not in asked.stderr, asked.stderr  # the draft gives the rest
    (line,) = [x for x in asked.stderr.splitlines() if "warning" in x]
    assert "part of ticket HD-7's history may be missing" in line and log.name in line, line


@pytest.mark.parametrize("damage", ["first", "question"])
def test_a_damaged_line_of_the_tickets_log_is_said_on_a_resume_and_in_log_list(cli, cli_env, home, damage):
    """A resume dropped what a damaged line held without a word: a damaged first line (the
    session's start) lost the whole earlier session, a damaged question line that question, and
    `log list --ticket` listed less, while plain `log show` did warn."""
    assert ask(cli, cli_env, "DMG-1", "ORD-20261234").returncode == 0
    (log,) = (home / "sessions").glob("*.jsonl")
    lines = log.read_text().split("\n")
    i = 0 if damage == "first" else next(n for n, x in enumerate(lines) if '"type": "question"' in x)
    lines[i] = lines[i][:40] + "\x00garbage"
    log.write_text("\n".join(lines))
    asked = cli(["ask", "--provider", "offline", "-q", "--ticket", "DMG-1", "make it shorter"], cli_env)
    assert "Traceback" not in asked.err
    warned = [x for x in asked.err.splitlines() if "history may be missing" in x]
    assert len(warned) == 1 and log.name in warned[0], asked.err
    listed = cli(["log", "list", "--ticket", "DMG-1"], cli_env)
    assert listed.returncode == 0 and log.name in listed.err and "warning" in listed.err, listed.err


# --------------------------------------------------------------------------- the customer scope

def test_a_resumed_ticket_keeps_its_customer_scope(cli, cli_env, drafts_dir, home):
    """`ask --customer ana --ticket HD-20` then `ask --ticket HD-20` about ben's order: the
    second ran with no scope, drafted ben's order into ana's ticket and superseded ana's draft,
    exit 0."""
    assert ask(cli, cli_env, "HD-20", "GH56JK78MN", "--customer", ANA).returncode == 0
    again = ask(cli, cli_env, "HD-20", "ORD-20261234", "--json")
    doc = json.loads(again.out)
    assert doc["customer"] == ANA, doc
    (lookup,) = [c for c in doc["tool_calls"] if c["name"] == "get_order_status"]
    assert lookup["result"] == {"found": False, "order_code": "ORD-20261234"}, lookup
    assert f"goes on scoped to {ANA}" in again.err, again.err
    customers = {d.meta.get("customer") for d in saved_drafts(drafts_dir)}
    assert customers == {ANA}, customers
    # another customer named on the ticket: refused, one line, nothing run
    n = len(list((home / "sessions").glob("*.jsonl")))
    for argv in (["ask", "--provider", "offline", "--customer", BEN, "--ticket", "HD-20", "and now?"],
                 ["chat", "--provider", "offline", "--customer", BEN, "--ticket", "HD-20"]):
        p = cli(argv, cli_env, input="and now?\n")
        assert p.returncode == 2, (argv, p.err)
        (line,) = [x for x in p.err.splitlines() if "offline workflow" not in x]
        assert f"ticket HD-20 is scoped to {ANA}" in line and BEN in line, line
    assert len(list((home / "sessions").glob("*.jsonl"))) == n
    # the same customer, in another case: the ticket goes on
    same = ask(cli, cli_env, "HD-20", "GH56JK78MN", "--customer", ANA.upper())
    assert same.returncode == 0, same.err


def test_a_live_draft_of_another_customer_is_no_ticket_for_this_scope(cli, cli_env):
    """A ticket worked on without a scope whose live draft is ben's: resumed with --customer
    ana it would have gone on with ben's reply as its live draft."""
    assert ask(cli, cli_env, "HD-21", "ORD-20261234").returncode == 0
    p = ask(cli, cli_env, "HD-21", "GH56JK78MN", "--customer", ANA)
    assert p.returncode == 2 and f"is for {BEN}, not {ANA}" in p.err, p.err


def test_lookups_outside_the_scope_do_not_come_back(cli, anthropic_env, fake_anthropic):
    """A ticket that looked up ben's order and then ana's, resumed scoped to ana: ben's lookup
    came back into the context and the checks, so a draft stating ben's order's status passed
    (status ok) where a fresh ticket gets an error-level finding. (Ben's draft is rejected
    before ana's is drafted: a ticket with a reply for ben takes no draft of ana's.)"""
    assert ask(cli, anthropic_env, "HD-30", "ORD-20261234").returncode == 0
    assert cli(["drafts", "reject", "--ticket", "HD-30", "--yes", "--reason", "wrong customer"],
               anthropic_env).returncode == 0
    assert ask(cli, anthropic_env, "HD-30", "GH56JK78MN").returncode == 0
    fake_anthropic.queue(message(tool_use_block("draft_reply", {
        "text": "Your order ORD-20261234 has shipped and is on its way.", "order_code": "ORD-20261234"})),
        text("Saved."), text("That order is not one of this customer's."))  # the repair turn's answer
    p = cli(["ask", "--json", "--customer", ANA, "--ticket", "HD-30", "tell them about the other order"],
            anthropic_env)
    doc = json.loads(p.out)
    sent = json.dumps(fake_anthropic.requests[0]["messages"])
    assert "handed to the carrier" not in sent and "pending_payment" in sent, sent
    assert doc["status"] == "incomplete", (doc["error"], p.err)
    assert any(f["severity"] == "error" and "ORD-20261234" in f["message"] for f in doc["checks"]), doc




# --------------------------------------------------------------------------- /ticket ID

def test_slash_ticket_before_the_first_question_of_a_resumed_ticket_resumes_the_other(cli, cli_env,
                                                                                  drafts_dir):
    """`chat --ticket HD-7` then `/ticket HD-8` before any question: the resumed HD-7 had
    questions (from its logs), so it was taken as "after a draft": ana's HD-7 draft moved into
    HD-8 and superseded ben's draft there."""
    assert ask(cli, cli_env, "HD-7", "GH56JK78MN").returncode == 0
    assert ask(cli, cli_env, "HD-8", "ORD-20261234").returncode == 0
    before = {d.id: (d.ticket, d.meta["customer"]) for d in saved_drafts(drafts_dir)}
    code, screen = chat("/ticket HD-8\r/exit\r", ticket="HD-7")
    assert code == 0 and "resumed ticket HD-8: 1 earlier question, 1 lookup, live draft" in screen, screen
    after = saved_drafts(drafts_dir)
    assert {d.id: (d.ticket, d.meta["customer"]) for d in after} == before
    assert {d.meta["status"] for d in after} == {"pending_review"}
    assert "moved" not in screen, screen
    # a question now is HD-8's
    code, screen = chat("/ticket HD-8\rand the license? please reply\r/ticket\r/exit\r", ticket="HD-7")
    assert code == 0 and "ticket: HD-8" in screen, screen


def test_slash_ticket_into_another_customers_ticket_before_a_question_is_refused(cli, cli_env,
                                                                                 drafts_dir):
    assert ask(cli, cli_env, "HD-8", "ORD-20261234", "--customer", BEN).returncode == 0
    code, screen = chat("/ticket HD-8\r/ticket\r/exit\r", customer=ANA)
    assert code == 0 and f"ticket HD-8 is scoped to {BEN}" in screen, screen
    assert "the ticket is unchanged" in screen and "resumed ticket" not in screen, screen
    assert "ticket: HD-8" not in screen.split("is unchanged", 1)[1], screen


def test_slash_ticket_after_a_draft_never_moves_it_into_another_customers_ticket(cli, cli_env,
                                                                               drafts_dir):
    """ana's draft moved by `/ticket HD-8` into a ticket whose live draft is ben's superseded
    ben's draft without a word (the message named only the moved one)."""
    assert ask(cli, cli_env, "HD-8", "ORD-20261234").returncode == 0
    (bens,) = saved_drafts(drafts_dir)
    code, screen = chat("Hi, where is my order GH56JK78MN? please reply\r/ticket HD-8\r/ticket\r/exit\r")
    assert code == 0, screen
    (line,) = [x for x in screen.splitlines() if "could not be moved" in x]
    assert f"ticket HD-8's live draft {bens.id} is for {BEN}" in line and ANA in line, line
    assert line.endswith("the ticket is unchanged"), line
    assert "ticket: HD-8" not in screen and "(the session id; /ticket ID to set one)" in screen
    drafts = saved_drafts(drafts_dir)
    assert len(drafts) == 2 and {d.meta["status"] for d in drafts} == {"pending_review"}
    assert {d.ticket for d in drafts if d.id != bens.id} != {"HD-8"}
    # nor into a ticket scoped to another customer, a draft or not
    assert ask(cli, cli_env, "HD-9", "GH56JK78MN", "--customer", BEN).returncode == 0
    code, screen = chat("Where is GH56JK78MN? please reply\r/ticket HD-9\r/exit\r", customer=ANA)
    assert f"ticket HD-9 is scoped to {BEN}" in screen and "the ticket is unchanged" in screen, screen


def test_slash_ticket_names_the_draft_of_the_ticket_it_supersedes(cli, cli_env, drafts_dir):
    assert ask(cli, cli_env, "HD-9", "GH56JK78MN", "--customer", ANA).returncode == 0
    (old,) = saved_drafts(drafts_dir)
    code, screen = chat("Hi, where is my order ORD-20261234? please reply\r/ticket HD-9\r/exit\r",
                        customer=ANA)
    assert code == 0 and f"and so is HD-9's pending draft {old.id}" in screen, screen
    assert next(d for d in saved_drafts(drafts_dir) if d.id == old.id).meta["status"] == "superseded"


# --------------------------------------------------------------------------- drafts of the session

def test_drafts_a_resume_brings_back_are_not_saved_in_this_session(cli, cli_env, drafts_dir, home):
    """`chat --ticket HD-7` on a ticket with a draft: the exit summary and /drafts said "1 draft
    saved in this session", and a draft_saved line of an old log (path /etc/passwd) was listed
    as one of ours."""
    assert ask(cli, cli_env, "HD-7", "GH56JK78MN").returncode == 0
    (d,) = saved_drafts(drafts_dir)
    (log,) = (home / "sessions").glob("*.jsonl")
    with log.open("a") as f:
        f.write(json.dumps({"type": "draft_saved", "id": "d-0123456789ab", "path": "/etc/passwd",
                            "order_code": "GH56JK78MN", "created": True}) + "\n")
    code, screen = chat("/drafts\r/exit\r", ticket="HD-7")
    assert code == 0, screen
    assert "saved in this session" not in screen and "/etc/passwd" not in screen, screen
    assert "d-0123456789ab" not in screen, screen
    assert "no drafts saved in this ticket in this session yet" in screen, screen
    assert "brought back from earlier sessions of ticket HD-7: 1 waiting for review" in screen, screen
    assert f"{d.id}  pending_review  GH56JK78MN  {d.path}" in screen, screen
    assert screen.rstrip().splitlines()[-2].startswith(
        "1 draft brought back from earlier sessions, still waiting for review; review them"), screen
    # the same reply saved again now is this session's, and listed once
    code, screen = chat("Is the license for GH56JK78MN there yet? please reply\r/exit\r", ticket="HD-7")
    assert code == 0, screen
    assert "1 draft saved in this session (1 waiting for review)" in screen, screen
    assert "brought back from earlier sessions, still" not in screen, screen


# --------------------------------------------------------------------------- many logs

def _newer_logs(home, n: int) -> None:
    """N session logs of other tickets, all newer than any the test made."""
    sessions = home / "sessions"
    for i in range(n):
        sid = f"20991231-{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}-{i:012x}"
        (sessions / f"{sid}.jsonl").write_text(json.dumps(
            {"type": "session_start", "session_id": sid, "ts": 4102444800 + i, "ticket": f"B-{i}"}) + "\n")


def test_a_ticket_older_than_the_newest_logs_searched_is_found_through_its_index(cli, cli_env, home,
                                                                               monkeypatch):
    """A night's batch writes thousands of logs: a ticket whose logs are older than the newest
    searched was not found at all ("no sessions match", a resume with nothing), without a word."""
    from agentcli.sessions import replay

    monkeypatch.setattr(replay, "MAX_TICKET_SCAN", 20)
    assert ask(cli, cli_env, "HD-7", "GH56JK78MN").returncode == 0
    _newer_logs(home, 30)
    listed = json.loads(cli(["log", "list", "--json", "--ticket", "HD-7"], cli_env).out)
    assert [s["ticket"] for s in listed] == ["HD-7"]
    # resumed: "make it shorter" names no order, and the offline workflow takes the ticket's own
    again = json.loads(cli(["ask", "--provider", "offline", "--json", "--ticket", "HD-7", "make it shorter"],
                           cli_env).out)
    assert [c["input"]["order_code"] for c in again["tool_calls"]] == ["GH56JK78MN"], again
    # without its index (logs from before there was one) the search says what it did not search
    shutil.rmtree(home / "sessions" / ".tickets")
    _newer_logs(home, 30)
    gone = cli(["log", "list", "--ticket", "HD-7"], cli_env)
    assert "no log of ticket HD-7 among the newest 20 of" in gone.err, gone.err


# --------------------------------------------------------------------------- one customer a ticket

def test_a_batch_line_never_drafts_into_a_ticket_whose_live_draft_is_another_customers(cli, cli_env,
                                                                                     drafts_dir):
    """A batch line's id names its drafts but resumes nothing: ben's draft became HD-1's live
    draft, ana's superseded, status ok."""
    assert ask(cli, cli_env, "HD-1", "GH56JK78MN", "--customer", ANA).returncode == 0
    (anas,) = saved_drafts(drafts_dir)
    line = json.dumps({"id": "HD-1", "question": "Where is my order ORD-20261234? please reply"})
    p = cli(["batch", "--provider", "offline"], cli_env, input=line + "\n")
    (rec,) = [json.loads(x) for x in p.out.splitlines()]
    assert p.returncode == 1 and rec["status"] != "ok" and rec["drafts"] == [], (rec, p.err)
    (draft,) = [c for c in rec["tool_calls"] if c["name"] == "draft_reply"]
    assert draft["is_error"] and f"ticket HD-1's draft {anas.id} is for {ANA}" in draft["result"], draft
    assert [(d.id, d.meta["status"]) for d in saved_drafts(drafts_dir)] == [(anas.id, "pending_review")]


def test_a_conversation_without_a_scope_moved_into_a_scoped_ticket_takes_on_its_scope(cli, cli_env,
                                                                                    drafts_dir):
    """A chat with no scope drafts for no customer (ZZ99ZZ99ZZ: not found), then `/ticket HD-1`
    (ana's): the move went through and the conversation went on unscoped, so ben's draft became
    HD-1's live draft, and `ask --ticket HD-1` the next day was exit 2."""
    assert ask(cli, cli_env, "HD-1", "GH56JK78MN", "--customer", ANA).returncode == 0
    code, screen = chat("Hi, where is my order ZZ99ZZ99ZZ? please reply\r/ticket HD-1\r"
                        "Hi, where is my order ORD-20261234? please reply\r/exit\r")
    assert code == 0 and "moved into it" in screen, screen
    assert f"scoped to {ANA} (the scope ticket HD-1 was worked on under)" in screen, screen
    assert {d.meta.get("customer") for d in saved_drafts(drafts_dir)} <= {ANA, None}
    again = ask(cli, cli_env, "HD-1", "GH56JK78MN")
    assert again.returncode == 0 and f"goes on scoped to {ANA}" in again.err, again.err


def test_a_conversation_holding_two_customers_orders_is_not_moved_into_a_scoped_ticket(cli, cli_env,
                                                                                     drafts_dir):
    """Its lookups span ana's and ben's orders (its draft has no customer): `/ticket HD-1`
    moved it into ana's ticket all the same."""
    assert ask(cli, cli_env, "HD-1", "GH56JK78MN", "--customer", ANA).returncode == 0
    before = {d.id: d.meta["status"] for d in saved_drafts(drafts_dir)}
    code, screen = chat("Where are my orders GH56JK78MN and ORD-20261234? please reply\r/ticket HD-1\r"
                        "/ticket\r/exit\r")
    assert code == 0, screen
    (line,) = [x for x in screen.splitlines() if "the ticket is unchanged" in x]
    assert f"ticket HD-1 is scoped to {ANA}, and this ticket holds orders of" in line and BEN in line, line
    assert "ticket: HD-1" not in screen, screen
    after = {d.id: d.meta["status"] for d in saved_drafts(drafts_dir)}
    assert {k: v for k, v in after.items() if k in before} == before


# --------------------------------------------------------------------------- /customer

def test_slash_customer_gives_a_ticket_of_one_customer_no_other_scope(cli, cli_env, drafts_dir):
    """`chat --ticket HD-1` (ana's), `/customer ben`, a question about ben's order: ben's draft
    superseded ana's live draft, exit 0 (`--customer ben --ticket HD-1` is exit 2); `/customer`
    alone, then the same question, ended the same way."""
    assert ask(cli, cli_env, "HD-1", "GH56JK78MN", "--customer", ANA).returncode == 0
    for typed, said in ((f"/customer {BEN}", f"not {BEN}'s: one ticket is one customer's"),
                        ("/customer", f"its customer scope stays {ANA}")):
        code, screen = chat(f"{typed}\rHi, where is my order ORD-20261234? please reply\r/exit\r",
                            ticket="HD-1")
        assert code == 0, screen
        (line,) = [x for x in screen.splitlines() if said in x]
        assert line.startswith(f"ticket HD-1 is {ANA}'s (the scope it was worked on under)"), line
    assert {d.meta.get("customer") for d in saved_drafts(drafts_dir)} == {ANA}
    # a ticket whose live draft is ana's, made in this session: the same
    code, screen = chat(f"/customer {ANA}\rHi, where is my order GH56JK78MN? please reply\r"
                        f"/customer {BEN}\r/customer\r/exit\r")
    assert code == 0 and screen.count(f"is {ANA}'s (the customer of its live draft d-") == 2, screen
    # the same customer in another case of letters is no other
    code, screen = chat(f"/customer {ANA.upper()}\r/exit\r", ticket="HD-1")
    assert f"customer scope: {ANA.upper()}" in screen, screen


def test_the_scope_typed_before_slash_ticket_goes_along(cli, cli_env, drafts_dir):
    """`chat --ticket HD-1` (ana's scope brought back), `/customer ana` typed, `/ticket HD-40`
    before the first question: the scope typed was dropped (the resumed ticket's was taken for
    it) and HD-40 went on unscoped; into ben's ticket it went on as ben's."""
    assert ask(cli, cli_env, "HD-1", "GH56JK78MN", "--customer", ANA).returncode == 0
    assert ask(cli, cli_env, "HD-2", "ORD-20261234").returncode == 0
    code, screen = chat(f"/customer {ANA}\r/ticket HD-40\rHi, where is my order ORD-20261234? "
                        "please reply\r/exit\r", ticket="HD-1")
    assert code == 0, screen
    (d,) = [d for d in saved_drafts(drafts_dir) if d.ticket == "HD-40"]
    assert d.meta["customer"] == ANA, d.meta
    code, screen = chat(f"/customer {ANA}\r/ticket HD-2\r/ticket\r/exit\r", ticket="HD-1")
    (line,) = [x for x in screen.splitlines() if "the ticket is unchanged" in x]
    assert f"is for {BEN}, not {ANA}" in line and "clear the scope with /new, then /customer alone" in line, line
    assert "ticket: HD-1" in screen.split("is unchanged", 1)[1], screen


def test_a_scope_a_resume_brought_back_is_not_the_persons_after_slash_new(cli, cli_env):
    """`chat --ticket HD-1` (ana's scope brought back), `/new`, `/ticket HD-2` (ben's): refused
    as "(the customer scope given): resume it without a customer scope", of a scope the person
    never gave, in a REPL where the way out is /customer."""
    assert ask(cli, cli_env, "HD-1", "GH56JK78MN", "--customer", ANA).returncode == 0
    assert ask(cli, cli_env, "HD-2", "ORD-20261234").returncode == 0
    code, screen = chat("/new\r/ticket HD-2\r/exit\r", ticket="HD-1")
    assert code == 0 and "resumed ticket HD-2: 1 earlier question" in screen, screen
    assert "customer scope given" not in screen and "unchanged" not in screen, screen
    # a scope the person typed is theirs: refused, with the REPL's way out
    code, screen = chat(f"/customer {ANA}\r/ticket HD-2\r/exit\r")
    (line,) = [x for x in screen.splitlines() if "the ticket is unchanged" in x]
    assert "(the customer scope given): clear the scope with /customer alone, or use" in line, line
    assert "resume it" not in line, line


# --------------------------------------------------------------------------- what comes back

BENS_WORDS = "Hi, this is Ben Okafor, 12 Elm St, where is my order ORD-20261234? please reply"


def test_another_customers_questions_do_not_come_back_into_a_scoped_ticket(cli, anthropic_env,
                                                                          fake_anthropic, drafts_dir):
    """Ben's question (his name, his address) asked in HD-30 without a scope, his draft
    rejected (a wrong reply: the ticket is ana's), then `ask --customer ana --ticket HD-30`: ana's
    draft recorded ben's question in its `questions`, and the model was given it. Lookups were kept out; questions were not, from
    the logs nor from the live draft's provenance."""
    def offline(*args):
        p = cli(["ask", "--provider", "offline", "--json", "--ticket", "HD-30", *args], anthropic_env)
        assert p.returncode == 0, p.err
        return json.loads(p.out)

    offline(BENS_WORDS)
    assert cli(["drafts", "reject", "--ticket", "HD-30", "--yes", "--reason", "wrong customer"],
               anthropic_env).returncode == 0
    # a day without a scope drafts ana's order: its `questions` hold ben's (no scope: all of it)
    unscoped = offline("Hi, and my order GH56JK78MN? please reply")
    (draft,) = [d for d in saved_drafts(drafts_dir) if d.id == unscoped["drafts"][0]["id"]]
    assert draft.meta["customer"] == ANA and BENS_WORDS in draft.meta["questions"], draft.meta
    fake_anthropic.queue(text("Looking into it."))
    p = cli(["ask", "--customer", ANA, "--ticket", "HD-30", "Where is my order GH56JK78MN?"], anthropic_env)
    assert p.returncode == 0, p.err
    sent = json.dumps(fake_anthropic.requests[0]["messages"])
    assert "Ben Okafor" not in sent and "ORD-20261234" not in sent, sent
    assert "Hi, and my order GH56JK78MN?" in sent, sent  # ana's own questions do come back
    again = offline("--customer", ANA, "And my orders GH56JK78MN and 4P4NNC7UX6? please reply")
    (latest,) = [d for d in saved_drafts(drafts_dir) if d.id == again["drafts"][0]["id"]]
    assert latest.meta["customer"] == ANA, latest.meta
    assert not any("Ben Okafor" in q for q in latest.meta["questions"]), latest.meta["questions"]
    assert "Hi, and my order GH56JK78MN? please reply" in latest.meta["questions"]


# --------------------------------------------------------------------------- what is said

def test_drafts_brought_back_are_not_said_to_be_of_the_ticket_moved_into(cli, cli_env, drafts_dir):
    """`chat --ticket HD-7`, a question, `/ticket HD-8`: `/drafts` listed HD-7's draft under
    "brought back from earlier sessions of ticket HD-8"."""
    assert ask(cli, cli_env, "HD-7", "GH56JK78MN").returncode == 0
    code, screen = chat("Is the license for GH56JK78MN there yet?\r/ticket HD-8\r/drafts\r/exit\r",
                        ticket="HD-7")
    assert code == 0 and "moved into it" in screen, screen
    assert "of ticket HD-8" not in screen, screen
    (moved,) = [d for d in saved_drafts(drafts_dir) if d.ticket == "HD-8"]
    assert f"{moved.id}  pending_review" in screen.split("/drafts", 1)[-1], screen


def test_chat_on_a_pipe_says_the_scope_a_resume_brought_back(cli, cli_env):
    """`ask --ticket HD-1` says "goes on scoped to ..." on stderr; `chat --ticket HD-1` on a
    pipe restored the scope without a word."""
    assert ask(cli, cli_env, "HD-1", "GH56JK78MN", "--customer", ANA).returncode == 0
    p = cli(["chat", "--provider", "offline", "--ticket", "HD-1"], cli_env,
            input="Where is my order ORD-20261234? please reply\n")
    assert p.returncode == 0, p.err
    (line,) = [x for x in p.err.splitlines() if "scoped" in x]
    assert line == (f"agentcli: ticket HD-1 goes on scoped to {ANA} (the scope it was worked on "
                    "under): other customers' orders read as not found"), line
    q = cli(["chat", "--provider", "offline", "-q", "--ticket", "HD-1"], cli_env, input="make it shorter\n")
    assert q.returncode == 0 and "scoped" not in q.err, q.err


def test_an_unreadable_log_is_one_warning_not_two(cli, cli_env, home):
    """HD-7 asked twice (the second log resumed from the first), the first log unreadable: the
    ticket search and the read each said it, so `log list --ticket HD-7` warned twice and the
    resume's note said "and 1 more" of the same log."""
    assert ask(cli, cli_env, "HD-7", "GH56JK78MN").returncode == 0
    (log,) = (home / "sessions").glob("*.jsonl")
    assert cli(["ask", "--provider", "offline", "--ticket", "HD-7", "make it shorter"], cli_env).returncode == 0
    listed, asked = _list_and_resume_unreadable(log, cli_env)
    assert listed.returncode == 0, listed.stderr
    assert [x for x in listed.stderr.splitlines() if "warning" in x] == [
        f"agentcli: warning: {log.name}: cannot read it (Permission denied)"], listed.stderr
    (line,) = [x for x in asked.stderr.splitlines() if "warning" in x]
    assert log.name in line and "more" not in line, line


def test_drafts_edit_refuses_before_the_editor_opens_an_edit_that_would_make_two_live_drafts(
        cli, cli_env, drafts_dir, tmp_path):
    """Ana's draft approved, a newer one of her ticket saved: `drafts edit` of the approved one
    put it back for review beside the newer one. It is refused in one line, before the editor
    opens (nothing typed is lost), and the draft is unchanged."""
    assert ask(cli, cli_env, "HD-1", "GH56JK78MN").returncode == 0
    (old,) = saved_drafts(drafts_dir)
    assert cli(["drafts", "approve", old.id], cli_env).returncode == 0
    assert ask(cli, cli_env, "HD-1", "4P4NNC7UX6").returncode == 0  # another of ana's orders
    (new,) = [d for d in saved_drafts(drafts_dir) if d.id != old.id]
    opened = tmp_path / "opened"
    editor = tmp_path / "ed.sh"
    editor.write_text(f'#!/bin/sh\ntouch "{opened}"\necho edited >> "$1"\n')
    editor.chmod(0o755)
    p = cli(["drafts", "edit", old.id], {**cli_env, "EDITOR": str(editor), "VISUAL": str(editor)})
    assert p.returncode == 2 and not opened.exists(), (p.out, p.err)
    assert f"live draft is now {new.id}" in p.err and len(p.err.strip().splitlines()) == 1, p.err
    statuses = {d.id: d.meta["status"] for d in saved_drafts(drafts_dir)}
    assert statuses == {old.id: "approved", new.id: "pending_review"}
