"""``drafts export`` and ``drafts push`` (issue 28): the requests, once and recorded, the faults,
the configuration, the token nowhere.

In-process CLI runs (the ``cli`` fixture) with real draft files, against the fake helpdesks of
``agentcli.testing.fake_helpdesk`` on 127.0.0.1 through the real HTTP client.
"""

from __future__ import annotations

import base64
import json
import os
import socket
from pathlib import Path

import pytest

from agentcli.drafts.format import now_iso, text_hash
from agentcli.drafts.store import DraftStore
from agentcli.helpdesk import HELPDESKS
from agentcli.helpdesk.push import Pusher
from agentcli.helpdesk.send import Sender
from agentcli.testing.fake_helpdesk import FAKES, Fault

# A long file (helpdesk answers cut at their timeouts, Retry-After waited out):
# started among the first (tests/conftest.py).
pytestmark = pytest.mark.long

NAMES = list(FAKES)
TICKETS = {"zendesk": ("1042", "1043"), "front": ("cnv_1042", "cnv_1043"),
           "helpscout": ("1042", "1043"), "freshdesk": ("1042", "1043")}


def approved(ddir: Path, ticket: str, text: str, *, session: str = "s-0001", customer="ana@example.com"):
    store = DraftStore(ddir)
    d, _ = store.save(text=text, ticket=ticket, session_id=session, customer=customer)
    store.set_status(d.id, "approved", reviewer="kim")
    return store.get(d.id)


def env_for(cli_env: dict, name: str, fake, **extra) -> dict:
    return {**cli_env, f"AGENTCLI_{name.upper()}_URL": fake.url,
            f"AGENTCLI_{name.upper()}_TOKEN": fake.token, "AGENTCLI_REVIEWER": "kim", **extra}


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    """Our own backoff between a draft's attempts (push.BACKOFF_BASE_S, 0.5 s doubling: 3.5 s
    for a draft that fails four times) made short: the tests count attempts, not their waits."""
    from agentcli.helpdesk import push as pushing

    monkeypatch.setattr(pushing, "BACKOFF_BASE_S", 0.01)


@pytest.fixture(params=NAMES)
def name(request):
    return request.param


@pytest.fixture
def fake(name):
    with FAKES[name]() as f:
        yield f
    assert f.public_replies == []  # whatever a test did, nothing public ever reached it


def push(cli, env, name, *args):
    return cli(["drafts", "push", "--to", name, *args], env)


def meta(ddir, did):
    return DraftStore(ddir).get(did).meta


# ----------------------------------------------------------------------------- the happy path

def test_push_puts_each_approved_draft_in_once_records_it_and_a_rerun_sends_nothing(
        cli, cli_env, drafts_dir, name, fake):
    t1, t2 = TICKETS[name]
    a = approved(drafts_dir, t1, "Hello Ana, your order GH56JK78MN is waiting for payment.")
    b = approved(drafts_dir, t2, "Your order ORD-20261234 ships tomorrow.")
    pending, _ = DraftStore(drafts_dir).save(text="not approved yet", ticket=t1 + "9", session_id="s-2")
    env = env_for(cli_env, name, fake)

    exported = cli(["drafts", "export", "--to", name], env)
    assert exported.returncode == 0, exported.err
    lines = [json.loads(x) for x in exported.out.splitlines()]
    assert fake.calls == []  # export sends nothing

    p = push(cli, env, name)
    assert p.returncode == 0, p.err
    assert p.out.count("pushed\t") == 2 and len(fake.writes) == 2
    # exactly the requests export wrote
    for line, call in zip(lines, fake.writes):
        assert (line["method"], line["path"], line["body"]) == (call["method"], call["path"], call["body"])
    notes = {str(n["id"]) for n in fake.all_notes()}
    for d in (a, b):
        rec = meta(drafts_dir, d.id)["push"]
        assert rec["state"] == "done" and rec["helpdesk"] == name and rec["who"] == "kim"
        assert rec["text_sha256"] == text_hash(d.text)
        assert rec["ticket"] == d.ticket and rec["when"] and (rec["id"] in notes or
                                                               f"msg_{rec['id']}" in notes or
                                                               rec["id"].removeprefix("msg_") in notes)
        hist = meta(drafts_dir, d.id)["history"]
        assert [h["reason"].split(" ")[0] for h in hist[-2:]] == ["pushing", "pushed"]
        assert fake.url not in json.dumps(hist)  # where, without the URL
    assert "push" not in meta(drafts_dir, pending.id)

    again = push(cli, env, name)
    assert again.returncode == 0 and len(fake.writes) == 2
    assert "no approved drafts to push" in again.err
    by_id = push(cli, env, name, a.id)
    assert by_id.returncode == 0 and by_id.out.startswith("already\t") and len(fake.writes) == 2

    shown = cli(["drafts", "show", a.id], env)
    title = {"zendesk": "Zendesk", "front": "Front", "helpscout": "Help Scout", "freshdesk": "Freshdesk"}[name]
    assert f"kim: pushed to {title} ticket {t1} as" in shown.out
    assert f"in {title} ticket {t1} as" in shown.out and "nothing has been sent to the customer" in shown.out

    listed = cli(["drafts", "list", "--pushed", "--json"], env)
    assert sorted(r["id"] for r in json.loads(listed.out)) == sorted([a.id, b.id])
    others = cli(["drafts", "list", "--not-pushed", "--json"], env)
    assert [r["id"] for r in json.loads(others.out)] == [pending.id]


def test_push_json_gives_one_record_per_draft(cli, cli_env, drafts_dir, name, fake):
    t1, _ = TICKETS[name]
    d = approved(drafts_dir, t1, "Thanks for waiting.")
    nope = approved(drafts_dir, "s-0009", "no helpdesk ticket", session="s-0009")
    p = push(cli, env_for(cli_env, name, fake), name, "--json")
    recs = {r["draft"]: r for r in map(json.loads, p.out.splitlines())}
    assert recs[d.id]["status"] == "pushed" and recs[d.id]["id"]
    assert recs[nope.id]["status"] == "skipped" and "session's own id" in recs[nope.id]["message"]
    assert p.returncode == 1  # a draft was left out: a person must look


def test_hostile_draft_texts_arrive_as_typed_and_never_public(cli, cli_env, drafts_dir, name, fake):
    texts = ["<script>alert(1)</script> [bold red]x[/] \x1b[31m", "line\u2028sep\u2029para\r\nend",
             "a" * 19_000, '{"public": true, "draft": false}']
    for i, t in enumerate(texts):
        approved(drafts_dir, TICKETS[name][0][:-1] + str(i), t)
    p = push(cli, env_for(cli_env, name, fake), name)
    assert p.returncode == 0, p.err
    assert len(fake.writes) == len(texts)
    for n in fake.all_notes():
        assert "<script>" not in n["body"] or name == "zendesk"  # HTML bodies are escaped


# ----------------------------------------------------------------------------- export

def test_export_skips_what_has_no_helpdesk_ticket_saying_why_and_records_what_it_wrote(
        cli, cli_env, drafts_dir, tmp_path):
    ok = approved(drafts_dir, "1042", "Your order ships tomorrow.")
    session = approved(drafts_dir, "s-0002", "no ticket given", session="s-0002")
    word = approved(drafts_dir, "HD-77", "a ticket of another helpdesk")
    hashed = approved(drafts_dir, "sk-ant-api03-" + "x" * 30, "a key pasted as a ticket")
    line = approved(drafts_dir, "line-3-0123456789ab", "a batch line without an id")
    pending, _ = DraftStore(drafts_dir).save(text="pending", ticket="1050", session_id="s-3")
    out = tmp_path / "zd.jsonl"
    p = cli(["drafts", "export", "--to", "zendesk", "-o", str(out)], cli_env)
    assert p.returncode == 1 and p.out == ""
    assert [json.loads(x)["draft"] for x in out.read_text().splitlines()] == [ok.id]
    assert f"{session.id}: skipped: its ticket is its session's own id" in p.err
    assert f"{word.id}: skipped: its ticket 'HD-77' is not a Zendesk ticket number" in p.err
    assert f"{hashed.id}: skipped: its ticket id looked like a secret" in p.err
    assert f"{line.id}: skipped: its ticket was made up by batch" in p.err
    assert pending.id not in p.err + out.read_text()  # not approved: not selected at all
    assert "sk-ant" not in p.err
    rec = meta(drafts_dir, ok.id)["exported"]["zendesk"]
    assert rec["to"] == str(out) and rec["who"] == "kim" or rec["who"]
    assert "exported as a zendesk request" in meta(drafts_dir, ok.id)["history"][-1]["reason"]
    # not yet exported: the second run writes nothing; --again writes it again
    p2 = cli(["drafts", "export", "--to", "zendesk"], cli_env)
    assert p2.out == ""
    p3 = cli(["drafts", "export", "--to", "zendesk", "--again", ok.id], cli_env)
    assert json.loads(p3.out)["draft"] == ok.id and p3.returncode == 0
    # another format is its own
    p4 = cli(["drafts", "export", "--to", "freshdesk", "--ticket", "1042"], cli_env)
    assert json.loads(p4.out)["path"] == "/api/v2/tickets/1042/notes" and p4.returncode == 0


def test_export_jsonl_is_the_helpdesk_free_record(cli, cli_env, drafts_dir):
    d = approved(drafts_dir, "T-1042", "Hello <b>Ana</b>")
    p = cli(["drafts", "export", "--to", "jsonl"], cli_env)
    rec = json.loads(p.out)
    assert (rec["draft"], rec["ticket"], rec["text"], rec["customer"], rec["approved_by"]) == (
        d.id, "T-1042", "Hello <b>Ana</b>", "ana@example.com", "kim")
    assert rec["helpdesk"] is None and "method" not in rec


def test_help_scout_needs_the_customer(cli, cli_env, drafts_dir):
    d = approved(drafts_dir, "1042", "Hi", customer=None)
    p = cli(["drafts", "export", "--to", "helpscout"], cli_env)
    assert p.returncode == 1 and f"{d.id}: skipped: a Help Scout reply names its customer" in p.err


def test_a_draft_not_approved_is_skipped_by_id(cli, cli_env, drafts_dir):
    d, _ = DraftStore(drafts_dir).save(text="pending", ticket="1042", session_id="s-3")
    p = cli(["drafts", "export", "--to", "zendesk", d.id], cli_env)
    assert p.returncode == 1 and "it is pending_review, not approved" in p.err


def test_unknown_format_is_a_usage_error(cli, cli_env, drafts_dir, tmp_path):
    d = approved(drafts_dir, "1042", "x")
    p = cli(["drafts", "export", "--to", "zendesk", "-o", str(tmp_path / "no" / "such.jsonl")], cli_env)
    assert p.returncode == 2 and "cannot write there" in p.err
    assert "exported" not in meta(drafts_dir, d.id)  # nothing written: nothing recorded
    assert cli(["drafts", "export", "--to", "intercom"], cli_env).returncode == 2
    assert cli(["drafts", "push", "--to", "jsonl"], cli_env).returncode == 2


# ----------------------------------------------------------------------------- configuration

@pytest.mark.parametrize("url,words", [
    (None, "no Zendesk URL"),
    ("http://acme.zendesk.example", "must start with https://"),
    ("https://acme.zendesk.example/api/v2", "has a path"),
    ("https://kim:hd-T0ken-9f8e7d6c5b4a@acme.zendesk.example", "user name or password"),
    ("https://acme.zendesk.example/?public=true", "query"),
])
def test_a_base_url_that_could_surprise_is_refused_with_exit_3_before_anything_is_sent(
        cli, cli_env, drafts_dir, url, words):
    approved(drafts_dir, "1042", "Hello")
    with FAKES["zendesk"]() as fake:
        env = env_for(cli_env, "zendesk", fake)
        if url is None:
            del env["AGENTCLI_ZENDESK_URL"]
        else:
            env["AGENTCLI_ZENDESK_URL"] = url
        p = push(cli, env, "zendesk")
        assert p.returncode == 3 and words in p.err and fake.calls == []
        assert fake.token not in p.err + p.out
        assert len(p.err.splitlines()) == 1


def test_a_missing_token_is_exit_3(cli, cli_env, drafts_dir):
    approved(drafts_dir, "1042", "Hello")
    with FAKES["front"]() as fake:
        env = env_for(cli_env, "front", fake)
        del env["AGENTCLI_FRONT_TOKEN"]
        p = push(cli, env, "front")
        assert p.returncode == 3 and "AGENTCLI_FRONT_TOKEN" in p.err and fake.calls == []


def _forms(token: str) -> list[str]:
    return [token, base64.b64encode(token.encode()).decode(),
            base64.b64encode(f"{token}:X".encode()).decode(), token[4:16]]


def test_the_token_is_in_no_output_log_or_draft_whatever_happens(cli, cli_env, drafts_dir, home,
                                                                  name, fake, tmp_path, monkeypatch):
    t1, t2 = TICKETS[name]
    monkeypatch.setenv(f"AGENTCLI_{name.upper()}_TOKEN", fake.token)  # set when the draft is saved
    approved(drafts_dir, t1, f"A reply quoting the token {fake.token} by mistake")
    monkeypatch.delenv(f"AGENTCLI_{name.upper()}_TOKEN")
    approved(drafts_dir, t2, "Second")
    fake.fault(Fault(status=503), Fault(status=429, retry_after="0.01"), Fault(status=401))
    env = env_for(cli_env, name, fake)
    outputs = [push(cli, env, name, "--json"), push(cli, env, name),
               cli(["drafts", "export", "--to", name, "--again"], env),
               cli(["drafts", "list", "--json"], env), cli(["doctor"], env)]
    (tmp_path / "agentcli.toml").write_text(
        f'{name}_url = "{fake.url}"\n{name}_token = "{fake.token}"\n')
    env2 = {k: v for k, v in env.items() if not k.startswith(f"AGENTCLI_{name.upper()}_")}
    outputs.append(cli(["drafts", "push", "--to", name, "--json"], env2, cwd=tmp_path))
    assert outputs[-1].returncode == 0, (outputs[-1].returncode, outputs[-1].err)  # the token from the file works
    text = "".join(p.out + p.err for p in outputs)
    files = "".join(p.read_text(errors="replace") for root in (drafts_dir, home)
                    for p in root.rglob("*") if p.is_file())
    for form in _forms(fake.token):
        assert form not in text and form not in files
    assert any(c["headers"].get("authorization") for c in fake.calls)  # it was sent, to the helpdesk


# ----------------------------------------------------------------------------- faults

def test_429_with_retry_after_is_waited_out_then_pushed(cli, cli_env, drafts_dir, name, fake):
    d = approved(drafts_dir, TICKETS[name][0], "Hello")
    fake.fault(Fault(status=429, retry_after="0.05"), Fault(status=429, retry_after="0"))
    p = push(cli, env_for(cli_env, name, fake), name)
    assert p.returncode == 0, p.err
    assert "rate-limiting: waiting" in p.err and len(fake.writes) == 3 and len(fake.all_notes()) == 1
    assert meta(drafts_dir, d.id)["push"]["state"] == "done"


def test_a_429_asking_for_too_long_ends_that_draft_without_waiting(cli, cli_env, drafts_dir, fake, name):
    d = approved(drafts_dir, TICKETS[name][0], "Hello")
    fake.fault(Fault(status=429, retry_after="3600"))
    p = push(cli, env_for(cli_env, name, fake), name)
    assert p.returncode == 4 and "asks to wait 3600 s; run again later" in p.err
    assert "push" not in meta(drafts_dir, d.id)  # nothing made: the next run tries again


def test_an_answer_lost_to_a_timeout_is_found_in_the_helpdesk_not_sent_twice(
        cli, cli_env, drafts_dir, name, fake):
    d = approved(drafts_dir, TICKETS[name][0], "Hello, a reply whose answer is lost")
    fake.fault(Fault(status=200, store=True, delay=3.0))
    p = push(cli, env_for(cli_env, name, fake, AGENTCLI_HELPDESK_TIMEOUT="0.4"), name)
    assert p.returncode == 0, p.err
    assert "its answer was lost or unreadable; found in the helpdesk" in p.out
    assert len(fake.writes) == 1 and len(fake.all_notes()) == 1
    assert meta(drafts_dir, d.id)["push"]["id"]


def test_an_answer_that_trickles_is_cut_at_twice_the_timeout_then_checked(cli, cli_env, drafts_dir, fake, name):
    approved(drafts_dir, TICKETS[name][0], "Hello")
    fake.fault(Fault(status=200, store=True, trickle=0.1))  # each byte in time, the whole never
    p = push(cli, env_for(cli_env, name, fake, AGENTCLI_HELPDESK_TIMEOUT="0.3"), name)
    assert p.returncode == 0, p.err
    assert len(fake.writes) == 1 and len(fake.all_notes()) == 1


def test_a_dropped_connection_after_the_note_was_made_is_not_sent_twice(cli, cli_env, drafts_dir, name, fake):
    approved(drafts_dir, TICKETS[name][0], "Hello")
    fake.fault(Fault(store=True, drop=True))
    p = push(cli, env_for(cli_env, name, fake), name)
    assert p.returncode == 0, p.err
    assert len(fake.writes) == 1 and len(fake.all_notes()) == 1


def test_a_5xx_that_made_nothing_is_retried_once_checked(cli, cli_env, drafts_dir, name, fake):
    approved(drafts_dir, TICKETS[name][0], "Hello")
    fake.fault(Fault(status=502))
    p = push(cli, env_for(cli_env, name, fake), name)
    assert p.returncode == 0, p.err
    methods = [c["method"] for c in fake.calls]
    assert methods == [fake.write[0], fake.check[0], fake.write[0]]  # checked before the retry
    assert len(fake.all_notes()) == 1


def test_5xx_every_time_fails_that_draft_the_run_goes_on_and_exit_4(cli, cli_env, drafts_dir):
    a = approved(drafts_dir, "1042", "first")
    b = approved(drafts_dir, "1043", "second")
    with FAKES["zendesk"]() as fake:
        fake.fault(*[Fault(status=503)] * 4)
        p = push(cli, env_for(cli_env, "zendesk", fake), "zendesk")
        assert p.returncode == 4
        assert f"{a.id}: failed: ticket 1042: Zendesk failed (503)" in p.err
        assert "(tried 4 times)" in p.err
        assert f"pushed\t{b.id}" in p.out and len(fake.all_notes()) == 1
        assert "push" not in meta(drafts_dir, a.id)
        assert "failed" in meta(drafts_dir, a.id)["history"][-1]["reason"]
        p2 = push(cli, env_for(cli_env, "zendesk", fake), "zendesk")  # the rerun makes it
        assert p2.returncode == 0 and p2.out.startswith(f"pushed\t{a.id}")
        assert len(fake.all_notes()) == 2


def test_a_404_ticket_is_a_line_for_that_draft_and_the_others_go(cli, cli_env, drafts_dir, name):
    t1, t2 = TICKETS[name]
    a = approved(drafts_dir, t1, "first")
    b = approved(drafts_dir, t2, "second")
    with FAKES[name](tickets={t2}) as fake:
        p = push(cli, env_for(cli_env, name, fake), name)
        assert p.returncode == 4
        assert f"{a.id}: failed:" in p.err and f"ticket {t1}: " in p.err and "has no such ticket (404)" in p.err
        assert f"pushed\t{b.id}" in p.out and fake.public_replies == []


def test_a_401_token_stops_sending_to_that_helpdesk_with_a_line_per_draft(cli, cli_env, drafts_dir, name):
    ds = [approved(drafts_dir, t, f"reply {t}") for t in TICKETS[name]]
    with FAKES[name]() as fake:
        env = env_for(cli_env, name, fake)
        env[f"AGENTCLI_{name.upper()}_TOKEN"] = "wr0ng-T0ken-123456"
        p = push(cli, env, name)
        assert p.returncode == 4
        assert f"{ds[0].id}: failed:" in p.err and "refused the token (401" in p.err
        assert f"{ds[1].id}: failed:" in p.err and "not sent:" in p.err
        assert len(fake.writes) == 1  # one try: the token is wrong for every draft
        assert "push" not in meta(drafts_dir, ds[1].id)  # not tried: nothing in its history
        assert not any("push" in h for h in meta(drafts_dir, ds[1].id)["history"])
        assert "wr0ng-T0ken-123456" not in p.err + p.out


def test_a_redirect_is_not_followed(cli, cli_env, drafts_dir):
    approved(drafts_dir, "1042", "Hello")
    with FAKES["zendesk"]() as fake:
        fake.fault(Fault(status=307))
        p = push(cli, env_for(cli_env, "zendesk", fake), "zendesk")
        assert p.returncode == 4 and "redirect (307), which agentcli does not follow" in p.err
        assert len(fake.calls) == 1


def test_when_the_check_itself_fails_the_pending_record_stays_and_the_rerun_checks_again(
        cli, cli_env, drafts_dir, name, fake):
    d = approved(drafts_dir, TICKETS[name][0], "Hello")
    fake.fault(Fault(status=500, store=True), Fault(status=500, on="check"))
    env = env_for(cli_env, name, fake)
    p = push(cli, env, name)
    assert p.returncode == 4 and "may have arrived: run the push again" in p.err
    assert meta(drafts_dir, d.id)["push"]["state"] == "pending"
    p2 = push(cli, env, name)  # still selected: not pushed
    assert p2.returncode == 0, p2.err
    assert "found in the helpdesk" in p2.out
    assert len(fake.writes) == 1 and len(fake.all_notes()) == 1


def test_a_pending_push_of_a_live_teammate_is_left_alone(cli, cli_env, drafts_dir, name, fake):
    d = approved(drafts_dir, TICKETS[name][0], "Hello")
    DraftStore(drafts_dir).remote(d.id, "push", {
        "state": "pending", "key": "p-teammate", "helpdesk": name, "ticket": d.ticket, "who": "sam",
        "when": now_iso(), "pid": os.getppid(), "host": socket.gethostname()[:64]},
        who="sam", reason="pushing", expect=None)
    p = push(cli, env_for(cli_env, name, fake), name)
    assert p.returncode == 1 and f"{d.id}: busy: being pushed by sam" in p.err
    assert fake.calls == []


def test_doctor_checks_a_configured_helpdesk_without_sending_anything(cli, cli_env):
    with FAKES["zendesk"]() as fake:
        good = cli(["doctor", "--provider", "offline", "--json"], env_for(cli_env, "zendesk", fake))
        check = next(c for c in json.loads(good.out)["checks"] if c["name"] == "Zendesk")
        assert check["ok"] and fake.url in check["detail"] and fake.token not in good.out
        bad = cli(["doctor", "--provider", "offline"],
                  {**env_for(cli_env, "zendesk", fake), "AGENTCLI_ZENDESK_URL": "http://zd.example"})
        assert bad.returncode == 3 and "must start with https://" in bad.out + bad.err
        assert fake.calls == []


def test_a_draft_written_by_ask_with_a_ticket_is_pushed_and_one_without_is_skipped(cli, cli_env, drafts_dir):
    q = "Customer: why has my license for GH56JK78MN not arrived?"
    with_ticket = cli(["ask", "--provider", "offline", "--ticket", "1042", "--json", q], cli_env)
    without = cli(["ask", "--provider", "offline", "--json", q], cli_env)
    (d1,), (d2,) = json.loads(with_ticket.out)["drafts"], json.loads(without.out)["drafts"]
    for did in (d1["id"], d2["id"]):
        assert cli(["drafts", "approve", did, "--force"], cli_env).returncode == 0
    with FAKES["zendesk"]() as fake:
        p = push(cli, env_for(cli_env, "zendesk", fake), "zendesk")
        assert p.returncode == 1
        assert p.out.startswith(f"pushed\t{d1['id']}\tZendesk ticket 1042")
        assert f"{d2['id']}: skipped: its ticket is its session's own id" in p.err
        assert [c["path"] for c in fake.writes] == ["/api/v2/tickets/1042.json"]
        assert fake.public_replies == []


def test_a_damaged_push_record_is_a_damaged_file_never_pushed_again(cli, cli_env, drafts_dir):
    d = approved(drafts_dir, "1042", "Hello")
    raw = d.path.read_text()
    d.path.write_text(raw.replace("\n---\n", '\npush: "done"\n---\n', 1))
    with FAKES["zendesk"]() as fake:
        p = push(cli, env_for(cli_env, "zendesk", fake), "zendesk")
        assert "damaged draft file" in p.err and fake.calls == []


def test_a_hostile_pending_record_never_leads_to_a_second_note(cli, cli_env, drafts_dir, name, fake):
    d = approved(drafts_dir, TICKETS[name][0], "Hello")
    fake.fault(Fault(status=200, store=True))  # the note is there already
    push(cli, env_for(cli_env, name, fake), name)
    assert len(fake.all_notes()) == 1
    for rec in ({"state": "pending", "key": "k", "helpdesk": name, "when": "2099-01-01T00:00:00+00:00",
                 "host": "\x1b[31mother", "pid": "x", "who": "[bold]sam[/]"},
                {"state": "pending", "key": "k2", "helpdesk": name, "when": "yesterday", "pid": -1}):
        DraftStore(drafts_dir).remote(d.id, "push", rec, who="x", reason="hand-edited")
        p = push(cli, env_for(cli_env, name, fake), name)
        assert len(fake.all_notes()) == 1 and len(fake.writes) == 1, p.err
        assert "\x1b" not in p.err + p.out


def test_a_draft_edited_after_it_was_selected_is_not_pushed(cli_env, drafts_dir):
    """The claim is checked against the draft as it is under the lock: a teammate's edit since
    the selection (the draft is pending again, its text changed) is not pushed."""
    d = approved(drafts_dir, "1042", "the old text")
    store = DraftStore(drafts_dir)
    store.set_text(d.id, "a new text, not yet approved", reviewer="sam")
    with FAKES["zendesk"]() as fake, Sender(HELPDESKS["zendesk"], fake.url, fake.token, timeout=5) as s:
        o = Pusher(store, HELPDESKS["zendesk"], s, "kim").push_one(d)  # d: as it was selected
        assert o.status == "skipped" and "it changed since the push started" in o.message
        assert fake.calls == [] and "push" not in meta(drafts_dir, d.id)


# (status, body, exit code): a 5xx is tried again (and the retry's note is made); a 4xx is a
# failed push (4); a 2xx whatever its body made the note, which is recorded (its id if one is there)
HOSTILE_ANSWERS = [
    (500, b'{"error": "\\u001b[31mBOOM\\u001b]0;pwned\\u0007 sk-ant-api03-abcdefghijklmnopqrstuvwx"}', 0),
    (422, b'{"description": "' + b"x" * 100_000 + b'"}', 4),
    (200, b"[" * 100_000 + b"]" * 100_000, 0),
    (201, b"<html><body>Sign in to the proxy</body></html>", 0),
    (200, b'{"audit": {"events": [{"type": "Comment", "id": "../../etc"}]}, "id": {"x": 1}}', 0),
]


@pytest.mark.parametrize("status,raw,code", HOSTILE_ANSWERS)
def test_a_hostile_answer_is_one_clean_line_and_never_a_second_note(cli, cli_env, drafts_dir, status, raw, code):
    d = approved(drafts_dir, "1042", "Hello")
    with FAKES["zendesk"]() as fake:
        fake.fault(Fault(status=status, body=raw, store=status < 300))
        p = push(cli, env_for(cli_env, "zendesk", fake), "zendesk")
        assert p.returncode == code, (p.returncode, p.err)
        assert "Traceback" not in p.err and "\x1b" not in p.err + p.out and "sk-ant-api03" not in p.err
        assert all(len(line) < 600 for line in p.err.splitlines())
        assert len(fake.all_notes()) <= 1 and fake.public_replies == []
        rec = meta(drafts_dir, d.id).get("push") or {}
        assert rec.get("id") in (None, "9001")  # never an id made of the answer's junk


def test_remote_is_a_compare_and_set_on_the_push_record(drafts_dir):
    store = DraftStore(drafts_dir)
    d, _ = store.save(text="Hello", ticket="1042", session_id="s-1")
    pend = {"state": "pending", "key": "k1"}
    assert store.remote(d.id, "push", pend, who="kim", reason="pushing", expect=None)[1]
    assert not store.remote(d.id, "push", {"state": "pending", "key": "k2"}, who="sam",
                            reason="pushing", expect=None)[1]           # one claim at a time
    assert not store.remote(d.id, "push", {"state": "pending", "key": "k3"}, who="sam",
                            reason="taking over", expect="k0")[1]       # a stale take-over
    assert store.remote(d.id, "push", {"state": "done", "key": "k1", "id": "9"}, who="kim",
                        reason="pushed", expect="k1")[1]
    for expect in (None, "k2", "x"):                                    # done is final
        assert not store.remote(d.id, "push", {"state": "pending", "key": "k4"}, who="sam",
                                reason="pushing", expect=expect)[1]
    now = store.get(d.id)
    assert now.meta["push"] == {"state": "done", "key": "k1", "id": "9"}
    assert [h["reason"] for h in now.meta["history"]] == ["pushing", "pushed"]
    assert now.meta["history"][-1]["push"]["id"] == "9" and now.meta["status"] == "pending_review"
    with pytest.raises(ValueError):
        store.remote(d.id, "status", {"x": 1}, who="kim", reason="no")


def test_a_token_in_agentcli_toml_is_hidden_from_drafts_written_by_any_command(cli, cli_env, drafts_dir,
                                                                             tmp_path):
    token = "zd-Fr0mTheF1le-77aa99"
    (tmp_path / "agentcli.toml").write_text(f'zendesk_token = "{token}"\n')
    p = cli(["ask", "--provider", "offline", "--ticket", "1042", "--json",
             f"Customer: my key {token} for GH56JK78MN does not work"], cli_env, cwd=tmp_path)
    assert p.returncode == 0, (p.returncode, p.err)
    files = "".join(f.read_text(errors="replace") for f in drafts_dir.rglob("*") if f.is_file())
    assert files and token not in files and token not in p.out + p.err
