"""The ticket as the unit of work (issue 22 items 1-3): one home for a conversation's state,
the same provenance in agent and workflow mode, tickets resumed the next day and found by
`log list`, `/ticket ID` moving the live draft, and one order-code pattern everywhere."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli.app import App
from agentcli.checks.claims import codes_in
from agentcli.checks.normalize import fold
from agentcli.config import resolve
from agentcli.loop import workflow_calls
from agentcli.providers.offline import find_codes as offline_codes
from agentcli.sessions.log import read_events
from agentcli.testing.fake_anthropic import message, text, tool_use_block
from agentcli.testing.scripted import Reply, ScriptedProvider
from agentcli.tools import default_registry, order_code_arg
from agentcli.vocab import OrderCode, ToolName, find_codes

from .conftest import saved_drafts
from .test_repl import GUARD_S, piped_repl, type_lines

DRAFT = "Your order GH56JK78MN is waiting for its payment to be matched; a colleague is checking it."


def draft_lookups(d) -> list[tuple[str, str]]:
    """(order code, status) of the lookups a draft file records as its provenance."""
    return [(x["input"]["order_code"], x["result"].get("status")) for x in d.meta["lookups"]]


# --------------------------------------------------------------------------- provenance

@pytest.mark.parametrize("mode", ["agent", "workflow"])
def test_a_draft_records_the_lookups_it_was_written_from_in_both_modes(cli_env, drafts_dir, mode):
    def model(history, turn):
        if mode == "agent" and turn == 1:
            return Reply(calls=[(ToolName.LOOKUP, {"order_code": "GH56JK78MN"})])
        if turn == (2 if mode == "agent" else 1):
            return Reply(calls=[(ToolName.DRAFT, {"text": DRAFT, "order_code": "GH56JK78MN"})])
        return Reply("Draft saved.")

    async def go():
        app = App.open(resolve(provider="offline", mode=mode), registry=default_registry())
        app.provider = ScriptedProvider(model)
        conv = app.conversation()
        run = await app.run(conv, "Customer: why is there no license for GH56JK78MN yet?")
        await app.aclose()
        return conv.ticket, run.result()

    ticket, result = asyncio.run(go())
    assert result["status"] == "ok", result
    (d,) = saved_drafts(drafts_dir)
    # the file and the ticket say the same: one lookup read before the draft
    assert draft_lookups(d) == [("GH56JK78MN", "pending_payment")]
    assert [(r.order_code, r.result["status"]) for r in ticket.lookups] == draft_lookups(d)
    assert ticket.live.id == d.id and ticket.live.text == DRAFT
    assert d.meta["questions"] == ticket.questions


# --------------------------------------------------------------------------- resuming

def queue_first_day(fake):
    fake.queue(message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"})),
               message(tool_use_block("draft_reply", {"text": DRAFT, "order_code": "GH56JK78MN"})),
               text("Looked it up and saved a draft."))


SHORT = "Your payment for GH56JK78MN is being matched; a colleague is on it."


def test_ask_with_an_existing_ticket_brings_back_its_questions_lookups_and_draft(
        cli, anthropic_env, fake_anthropic, drafts_dir, home):
    queue_first_day(fake_anthropic)
    first = cli(["ask", "--ticket", "HD-7", "Customer asks why GH56JK78MN has no license"], anthropic_env)
    assert first.returncode == 0, first.err
    (old,) = saved_drafts(drafts_dir)

    # the next day: a follow-up that only makes sense with the ticket's context
    fake_anthropic.queue(message(tool_use_block("draft_reply", {"text": SHORT, "order_code": "GH56JK78MN"})),
                         text("Shortened."))
    n = len(fake_anthropic.requests)
    second = cli(["ask", "--json", "--ticket", "HD-7", "make it shorter"], anthropic_env)
    assert second.returncode == 0, second.err
    result = json.loads(second.out)
    assert result["status"] == "ok" and result["checks"] == []
    sent = json.dumps(fake_anthropic.requests[n]["messages"])
    # its first request carries the earlier question, the lookup's result and the live draft
    assert "Customer asks why GH56JK78MN has no license" in sent
    assert "pending_payment" in sent and DRAFT in sent and "make it shorter" in sent
    # the shorter draft was written from the resumed lookup (not refused as premature) and is
    # now the ticket's only live draft
    new, older = saved_drafts(drafts_dir)
    assert older.id == old.id and older.meta["status"] == "superseded"
    assert new.text == SHORT and new.meta["status"] == "pending_review" and new.ticket == "HD-7"
    assert draft_lookups(new) == [("GH56JK78MN", "pending_payment")]
    assert new.meta["questions"][-1] == "make it shorter" and len(new.meta["questions"]) == 2
    # the session log says where the ticket came from
    sessions = json.loads(cli(["log", "list", "--json", "--ticket", "HD-7"], anthropic_env).out)
    assert [s["ticket"] for s in sessions] == ["HD-7", "HD-7"]
    start = next(read_events(home / "sessions" / f"{sessions[0]['id']}.jsonl"))
    assert start["resumed_from"] == [sessions[1]["id"]]


def test_a_ticket_nobody_worked_on_starts_empty(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(text("Which order?"))
    p = cli(["ask", "--ticket", "HD-NEW", "hello"], anthropic_env)
    assert p.returncode == 0, p.err
    assert [m["role"] for m in fake_anthropic.requests[0]["messages"]] == ["user"]
    assert json.dumps(fake_anthropic.requests[0]["messages"]).count("worked on before") == 0


def test_chat_on_a_pipe_resumes_a_ticket(cli, anthropic_env, fake_anthropic, drafts_dir):
    queue_first_day(fake_anthropic)
    assert cli(["ask", "--ticket", "HD-8", "Customer asks about GH56JK78MN"], anthropic_env).returncode == 0
    fake_anthropic.queue(text("Here is a shorter version."))
    n = len(fake_anthropic.requests)
    p = cli(["chat", "--ticket", "HD-8"], anthropic_env, input="make it shorter\n")
    assert p.returncode == 0, p.err
    sent = json.dumps(fake_anthropic.requests[n]["messages"])
    assert DRAFT in sent and "Customer asks about GH56JK78MN" in sent


def test_resume_without_session_logs_uses_the_drafts_provenance(cli, anthropic_env, fake_anthropic,
                                                                 drafts_dir, home):
    queue_first_day(fake_anthropic)
    assert cli(["ask", "--ticket", "HD-9", "Customer asks about GH56JK78MN"], anthropic_env).returncode == 0
    shutil.rmtree(home / "sessions")  # another machine's logs (and their ticket index), or removed
    fake_anthropic.queue(text("ok"))
    n = len(fake_anthropic.requests)
    assert cli(["ask", "--ticket", "HD-9", "make it shorter"], anthropic_env).returncode == 0
    sent = json.dumps(fake_anthropic.requests[n]["messages"])
    assert DRAFT in sent and "pending_payment" in sent and "Customer asks about GH56JK78MN" in sent


def test_a_decided_draft_is_not_brought_back_as_live(cli, anthropic_env, fake_anthropic, drafts_dir):
    queue_first_day(fake_anthropic)
    assert cli(["ask", "--ticket", "HD-10", "Customer asks about GH56JK78MN"], anthropic_env).returncode == 0
    (d,) = saved_drafts(drafts_dir)
    assert cli(["drafts", "approve", d.id], anthropic_env).returncode == 0
    fake_anthropic.queue(text("ok"))
    n = len(fake_anthropic.requests)
    assert cli(["ask", "--ticket", "HD-10", "anything else?"], anthropic_env).returncode == 0
    sent = json.dumps(fake_anthropic.requests[n]["messages"])
    assert "Customer asks about GH56JK78MN" in sent and "waiting for a person's review" not in sent


# --------------------------------------------------------------------------- /ticket ID

def test_slash_ticket_after_a_draft_moves_it_into_the_ticket(anthropic_env, fake_anthropic, drafts_dir, cli):
    queue_first_day(fake_anthropic)

    async def main():
        app = App.open(resolve(), registry=default_registry())
        try:
            with piped_repl(app) as (repl, inp, buf):
                running = asyncio.create_task(repl.run())
                await type_lines(repl, inp, "Customer asks about GH56JK78MN\r/ticket ZD-501\r/drafts\r/exit\r")
                return await asyncio.wait_for(running, GUARD_S), buf.getvalue()
        finally:
            await app.aclose()

    code, screen = asyncio.run(main())
    assert code == 0, screen
    moved, old = saved_drafts(drafts_dir)
    assert moved.ticket == "ZD-501" and moved.text == old.text == DRAFT
    assert old.meta["status"] == "superseded" and old.meta["superseded_by"] == moved.id
    assert moved.meta["status"] == "pending_review" and draft_lookups(moved) == draft_lookups(old)
    assert "moved from ticket" in moved.meta["history"][0]["reason"]
    pending = json.loads(cli(["drafts", "list", "--json", "--ticket", "ZD-501"], anthropic_env).out)
    assert [r["id"] for r in pending] == [moved.id]
    assert f"moved into it as {moved.id}" in screen
    # both logs of the conversation belong to the ticket
    sessions = json.loads(cli(["log", "list", "--json", "--ticket", "ZD-501"], anthropic_env).out)
    assert len(sessions) == 2 and sessions[0]["ticket"] == "ZD-501"


def test_slash_ticket_before_any_question_resumes_that_ticket(anthropic_env, fake_anthropic, cli):
    queue_first_day(fake_anthropic)
    assert cli(["ask", "--ticket", "ZD-600", "Customer asks about GH56JK78MN"], anthropic_env).returncode == 0
    fake_anthropic.queue(text("Sure."))
    n = len(fake_anthropic.requests)

    async def main():
        app = App.open(resolve(), registry=default_registry())
        try:
            with piped_repl(app) as (repl, inp, buf):
                running = asyncio.create_task(repl.run())
                await type_lines(repl, inp, "/ticket ZD-600\rmake it shorter\r/exit\r")
                return await asyncio.wait_for(running, GUARD_S), buf.getvalue()
        finally:
            await app.aclose()

    code, screen = asyncio.run(main())
    assert code == 0 and "resumed ticket ZD-600" in screen
    assert DRAFT in json.dumps(fake_anthropic.requests[n]["messages"])


# --------------------------------------------------------------------------- log list filters

def test_log_list_filters_by_ticket_order_and_age(cli, cli_env):
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    assert cli(["ask", "--ticket", "A-1", "Where is GH56JK78MN?"], env).returncode == 0
    assert cli(["ask", "--ticket", "B-2", "Where is ORD-20261234?"], env).returncode == 0

    def ids(*flags):
        p = cli(["log", "list", "--json", *flags], env)
        assert p.returncode == 0, p.err
        return [s["ticket"] for s in json.loads(p.out)]

    assert ids() == ["B-2", "A-1"]
    assert ids("--ticket", "A-1") == ["A-1"]
    assert ids("--order", "ord 20261234") == ["B-2"]          # a customer's way of writing it
    assert ids("--order", "gh56-jk78-mn", "--since", "1h") == ["A-1"]
    assert ids("--since", "2099-01-01") == []
    assert ids("--ticket", "nobody") == []
    bad = cli(["log", "list", "--order", "not a code"], env)
    assert bad.returncode == 2 and "not a valid order code" in bad.err


# --------------------------------------------------------------------------- one pattern

code10 = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", min_size=10, max_size=10).filter(
    lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s))
ord8 = st.text(alphabet="0123456789", min_size=8, max_size=8)


@st.composite
def written(draw):
    """(canonical code, as a customer writes it)."""
    if draw(st.booleans()):
        c = draw(code10)
        form = draw(st.sampled_from(["plain", "lower", "dashed", "spaced", "underscored", "wide"]))
        if form == "spaced":
            # spaced groups are taken as a code only in capitals with a group mixing both
            c = "GH56" + c[4:]
        w = {"plain": c, "lower": c.lower(), "dashed": f"{c[:4]}-{c[4:8]}-{c[8:]}",
             "spaced": f"{c[:4]} {c[4:8]} {c[8:]}", "underscored": f"{c[:4]}_{c[4:8]}_{c[8:]}",
             "wide": _wide(c)}[form]
        return c, w
    d = draw(ord8)
    sep = draw(st.sampled_from(["-", " ", "", "\u2011", "_"]))
    mid = draw(st.sampled_from(["", "-", " "]))  # the 8 digits grouped 4 + 4
    w = draw(st.sampled_from(["ORD", "ord", "Ord"])) + sep + d[:4] + mid + d[4:]
    return "ORD-" + d, _wide(w) if draw(st.booleans()) and not mid else w


# What a paste or another keyboard leaves in a code: a character that shows as nothing, a letter of
# another script that looks the same, a styled ("fancy text") letter or digit.
INVISIBLES = ["\u200b", "\u00ad", "\ufeff", "\u2060", "\u200e", "\u2066"]
LOOKALIKES = {"A": "\u0410", "B": "\u0412", "E": "\u0415", "H": "\u041d", "K": "\u041a", "M": "\u041c",
              "O": "\u041e", "P": "\u0420", "C": "\u0421", "T": "\u0422", "X": "\u0425", "N": "\u039d", "Z": "\u0396"}


@st.composite
def disguised(draw):
    """(canonical code, as written, with one character that shows as nothing inside or beside it,
    or one letter of another script or in a styled form)."""
    code, w = draw(written())
    how = draw(st.sampled_from(["invisible", "lookalike", "styled"]))
    if how == "invisible":
        i = draw(st.integers(0, len(w)))
        return code, w[:i] + draw(st.sampled_from(INVISIBLES)) + w[i:]
    spots = [i for i, c in enumerate(w) if (c in LOOKALIKES if how == "lookalike" else c.isascii() and c.isalnum())]
    if not spots:
        return code, w
    i = draw(st.sampled_from(spots))
    c = w[i]
    if how == "lookalike":
        r = LOOKALIKES[c]
    else:  # MATHEMATICAL BOLD capitals and digits
        r = chr(0x1D400 + ord(c) - 65) if c.isupper() else chr(0x1D7CE + ord(c) - 48) if c.isdigit() else c
    return code, w[:i] + r + w[i + 1:]


def _wide(s: str) -> str:
    """``s`` as a full-width keyboard types it (ＧＨ５６ＪＫ７８ＭＮ)."""
    return "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in s)


@settings(max_examples=200, deadline=None)
@given(pair=written(), before=st.sampled_from(["", "Order ", "my order: ", "(", "re "]),
       after=st.sampled_from(["", "?", ".", ", thanks", ")"]))
def test_every_consumer_finds_the_same_code_in_what_a_customer_writes(pair, before, after):
    code, w = pair
    prose = f"{before}{w}{after}"
    assert [f.code for f in find_codes(prose)] == [code]
    assert order_code_arg(w) == code                            # the tool
    assert [a["order_code"] for _, a in workflow_calls(prose, [ToolName.LOOKUP])] == [code]
    assert offline_codes(prose) == [code]                        # the offline workflow
    assert [c for _, c, _ in codes_in(fold(prose))] == [code]   # the checks, which read folded text
    assert OrderCode.parse(code) == code


@settings(max_examples=200, deadline=None)
@given(pair=disguised(), before=st.sampled_from(["", "Order ", "Bestellung ", "("]),
       after=st.sampled_from(["", "?", ".", "-Bestellung", "-Lizenz", ")"]))
def test_a_code_with_invisible_lookalike_or_styled_characters_is_the_code_it_shows(pair, before, after):
    """Pasted from a mail or typed on another keyboard, a code is the code a reader sees, to
    every consumer alike; and where it stands in the text is where it was written."""
    code, w = pair
    prose = f"{before}{w}{after}"
    found = find_codes(prose)
    assert [f.code for f in found] == [code]
    assert prose[found[0].start:found[0].end].strip("".join(INVISIBLES)) == w.strip("".join(INVISIBLES))
    assert order_code_arg(w) == code
    assert [a["order_code"] for _, a in workflow_calls(prose, [ToolName.LOOKUP])] == [code]
    assert offline_codes(prose) == [code]
    assert [c for _, c, _ in codes_in(fold(prose))] == [code]


@pytest.mark.parametrize("code", ["CR3D1T9999", "D15C0UNT12", "5H1PP3D123", "R3FUND0001", "C4NC3L0001"])
def test_a_code_that_reads_as_a_claim_word_in_leetspeak_stays_the_code(code):
    """The checks read "r3fund3d" as "refunded"; an order code of that shape is a code, so a
    correct draft about it is not flagged and a made-up one is still an order nobody looked up."""
    from .test_checks import run

    found = {"name": "get_order_status", "input": {"order_code": code}, "is_error": False, "outcome": "ok",
             "result": {"found": True, "order_code": code, "status": "pending_payment",
                        "status_detail": "payment received, not yet matched to the order", "product": "PhotoFlux Pro",
                        "placed_on": "2026-11-20", "estimated_delivery": None, "license_issued": False}}
    draft = f"Your order {code} is waiting for its payment to be matched; a colleague is checking it."
    assert [f.kind for f in run(draft=draft, lookups=[found]) if f.severity == "error"] == []
    other = {**found, "input": {"order_code": "GH56JK78MN"}, "result": {**found["result"], "order_code": "GH56JK78MN"}}
    assert "unverified_order" in {f.kind for f in run(draft=draft, lookups=[other])}


@pytest.mark.parametrize("prose, codes", [
    ("ORD-20261234-GH56JK78MN", ["ORD-20261234", "GH56JK78MN"]),
    ("GH56JK78MN-ORD-20261234", ["GH56JK78MN", "ORD-20261234"]),
    ("gh56jk78mn-kl12mn34pq", ["GH56JK78MN", "KL12MN34PQ"]),
    ("GH56-JK78-MN-ORD 2026 1234", ["GH56JK78MN", "ORD-20261234"]),
    ("Bestellungen ORD-20261234-GH56JK78MN-Lizenz?", ["ORD-20261234", "GH56JK78MN"]),
    ("x-ORD-20261234-GH56JK78MN", []),          # the tail of one word, however long
    ("GH56JK78MN-x-KL12MN34PQ", []),             # as "GH56JK78MN-X2": a short tail is one word
])
def test_codes_joined_by_a_hyphen_are_each_a_code_in_either_order(prose, codes):
    """A customer pasting two references joined by a hyphen names both, whichever comes first:
    before, "ORD-20261234-GH56JK78MN" held no code and the reverse only its first one."""
    assert [str(f.code) for f in find_codes(prose)] == codes
    assert [a["order_code"] for _, a in workflow_calls(prose, [ToolName.LOOKUP])] == codes
    assert offline_codes(prose) == codes
    assert [c for _, c, _ in codes_in(fold(prose))] == codes


@pytest.mark.parametrize("prose, codes", [
    ("Your customer number is KD12345678.", []), ("Ihre Kundennummer lautet KD12345678.", []),
    ("Ihre Rechnungsnummer ist RE20261234.", []), ("Transaction ID TX98765432 was received.", []),
    ("Kundennr. KD12345678", []), ("invoice no. RE20261234", []), ("tracking number 1Z99AA1012", []),
    # an ORD- code is always ours, and a label needs its number word ("Ticket:" may name the order)
    ("Ticket: ORD-20261234 - where is my package?", ["ORD-20261234"]), ("Case #ORD-20261234 still open", ["ORD-20261234"]),
    ("Transaction ID: ORD-20261234 was charged twice", ["ORD-20261234"]), ("Ticket: GH56JK78MN", ["GH56JK78MN"]),
    # the order's own code after words that are no such label, a payment reference included:
    # a bank transfer's reference is the order's code
    ("payment reference GH56JK78MN", ["GH56JK78MN"]), ("Reference: GH56JK78MN", ["GH56JK78MN"]),
    ("in any case GH56JK78MN is late", ["GH56JK78MN"]), ("order number GH56JK78MN", ["GH56JK78MN"]),
    ("customer number KD12345678, order GH56JK78MN", ["GH56JK78MN"]),
])
def test_a_reference_of_another_kind_is_no_order_code(prose, codes):
    """Ten letters and digits after "customer number" or "Rechnungsnummer" are that reference:
    the checks flagged them as orders never looked up, the workflow looked them up."""
    assert [str(f.code) for f in find_codes(prose)] == codes
    assert [a["order_code"] for _, a in workflow_calls(prose, [ToolName.LOOKUP])] == codes
    assert [c for _, c, _ in codes_in(fold(prose))] == codes


@pytest.mark.parametrize("prose", [
    "everything is fine", "EVERYTHING", "from 2026 to 2027", "FROM 2026 TO 2027", "call 0123456789",
    "the TEST 2026 IN", "x-GH56JK78MN", "GH56JK78MN-2", "ORD-2026123", "ord-202612345",
    "ORD-2026-123", "ORD-20261-234", "ORD-2026 12345", "\uff21\uff22\uff23\uff24\uff25\uff26\uff27\uff28\uff29\uff2a",
    "ORD-20261234-5", "GH56JK78MN-X2", "GH56-JK78-MN-XY", "GH56JK78MN-ab",
])
def test_words_and_numbers_are_not_order_codes(prose):
    assert find_codes(prose) == []


def test_a_hostile_session_log_of_the_ticket_does_not_break_the_resume(cli, anthropic_env,
                                                                      fake_anthropic, home):
    sessions = home / "sessions"
    sessions.mkdir()
    lines = [{"type": "session_start", "session_id": "20261130-100000-aaaaaaaaaaaa", "ticket": "HD-X"},
             {"type": "question", "text": {"not": "text"}},
             {"type": "question"},
             {"type": "tool_result", "name": ["x"], "input": 1},
             {"type": "tool_result", "id": "t1", "name": "get_order_status",
              "input": {"order_code": "gh56-jk78-mn"}, "result": {"found": True, "order_code": "GH56JK78MN",
                                                                   "status": "pending_payment"},
              "is_error": False, "duration_ms": "NaN", "outcome": "ok", "customer": 7},
             {"type": "draft_saved", "id": 5},
             {"type": "question", "text": "the real question about GH56JK78MN"}]
    body = "\n".join(json.dumps(x) for x in lines) + "\n" + "[" * 100_000 + "\n{cut"
    (sessions / "20261130-100000-aaaaaaaaaaaa.jsonl").write_text(body)
    fake_anthropic.queue(text("ok"))
    p = cli(["ask", "--ticket", "HD-X", "and now?"], anthropic_env)
    assert p.returncode == 0, p.err
    sent = json.dumps(fake_anthropic.requests[0]["messages"])
    assert "the real question about GH56JK78MN" in sent and "pending_payment" in sent


def test_every_order_of_the_demo_database_can_be_asked_about_in_prose(tmp_path):
    """A demo order whose code prose cannot find (ten letters: "everything" is no code) could be
    shown by `orders show` but never asked about; the demo holds none."""
    import sqlite3

    from agentcli.stores import init_sqlite

    db = tmp_path / "orders.sqlite3"
    init_sqlite(db, 300)
    codes = [r[0] for r in sqlite3.connect(db).execute("SELECT code FROM orders")]
    assert len(codes) == 300
    assert [c for c in codes if [f.code for f in find_codes(f"Where is my order {c}?")] != [c]] == []


@pytest.mark.parametrize("written", ["ana.silva@example.com\u200b", "\ufeffAna.Silva@example.com",
                                     "Ana Silva <ana.silva@example.com\u2060>"])
def test_a_customer_written_with_invisible_characters_is_that_customer(written):
    """A scope pasted with a zero-width space was another customer: "ticket HD-1 is scoped to
    ana..., not ana...", and a false refusal whose two addresses read the same."""
    from agentcli.drafts.base import customer_key
    from agentcli.vocab import customer_address

    assert customer_address(written).casefold() == "ana.silva@example.com"
    assert customer_key(written) == customer_key("ana.silva@example.com")
