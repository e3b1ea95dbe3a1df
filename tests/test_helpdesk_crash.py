"""A push is made once even when the process dies between the request and its record, or when
two teammates push at once (issue 28, item 3). Real processes (the console script), SIGKILL,
a fake helpdesk on 127.0.0.1 in this process that delays its answer.
"""

from __future__ import annotations

import signal
import subprocess

import pytest

from agentcli.drafts.store import DraftStore
from agentcli.testing.fake_helpdesk import (
    FakeFreshdesk,
    FakeFront,
    FakeHelpScout,
    FakeZendesk,
    Fault,
)

from .conftest import agentcli_exe
from .test_helpdesk_push import approved, env_for, meta
from .test_screens import Term, whole, wide

# Upper bounds only a hang reaches (the process starts in about a second).
ARRIVAL_S = 30


def _start(env, name, *args):
    return subprocess.Popen([agentcli_exe(), "drafts", "push", "--to", name, *args], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _kill_when_it_arrives(p, fake):
    assert fake.arrived.wait(ARRIVAL_S), p.communicate(timeout=5)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=10)
    assert p.returncode == -signal.SIGKILL


def test_sigkill_after_the_note_was_made_a_rerun_finds_it_and_sends_nothing(cli, cli_env, drafts_dir):
    d = approved(drafts_dir, "1042", "Hello Ana, your license is on its way.")
    with FakeZendesk() as fake:
        fake.fault(Fault(status=200, store=True, delay=60))  # made; the answer never comes back
        env = env_for(cli_env, "zendesk", fake)
        p = _start(env, "zendesk")
        _kill_when_it_arrives(p, fake)
        rec = meta(drafts_dir, d.id)["push"]
        assert rec["state"] == "pending" and rec["pid"] == p.pid  # written before the request
        assert len(fake.all_notes()) == 1
        r = cli(["drafts", "push", "--to", "zendesk"], env)
        assert r.returncode == 0, r.err
        assert "found in the helpdesk: an earlier push was interrupted" in r.out
        assert len(fake.writes) == 1 and len(fake.all_notes()) == 1
        done = meta(drafts_dir, d.id)["push"]
        assert done["state"] == "done" and done["id"] == str(fake.all_notes()[0]["id"])
        assert fake.public_replies == []


def test_sigkill_before_the_note_was_made_a_rerun_sends_it_once(cli, cli_env, drafts_dir):
    d = approved(drafts_dir, "1042", "Hello, a reply the helpdesk never got.")
    with FakeHelpScout() as fake:
        fake.fault(Fault(status=503, store=False, delay=60))  # nothing made, no answer
        env = env_for(cli_env, "helpscout", fake)
        p = _start(env, "helpscout")
        _kill_when_it_arrives(p, fake)
        assert fake.all_notes() == []
        r = cli(["drafts", "push", "--to", "helpscout"], env)
        assert r.returncode == 0, r.err
        methods = [c["method"] for c in fake.calls]
        assert methods == ["POST", "GET", "POST"]  # the lost one, the check, the one that made it
        assert len(fake.all_notes()) == 1
        assert meta(drafts_dir, d.id)["push"]["state"] == "done"


def test_two_teammates_pushing_at_once_make_each_note_once(cli_env, drafts_dir):
    ds = [approved(drafts_dir, t, f"reply for {t}") for t in ("1042", "1043", "1044")]
    with FakeFreshdesk() as fake:
        fake.fault(Fault(status=201, store=True, delay=1.0))  # the first write is slow
        env = env_for(cli_env, "freshdesk", fake)
        procs = [_start(env, "freshdesk"), _start(env, "freshdesk")]
        outs = [p.communicate(timeout=120) for p in procs]
        codes = [p.returncode for p in procs]
        text = "".join(o.decode() + e.decode() for o, e in outs)
        assert set(codes) <= {0, 1}, text  # 1: a draft was being pushed by the other
        tickets = sorted(c["path"] for c in fake.writes)
        assert tickets == [f"/api/v2/tickets/{t}/notes" for t in ("1042", "1043", "1044")], text
        assert len(fake.all_notes()) == 3
        for d in ds:
            assert meta(drafts_dir, d.id)["push"]["state"] == "done"
        assert sum(o.decode().count("pushed\t") for o, _ in outs) == 3
        assert fake.public_replies == []
    store = DraftStore(drafts_dir)
    assert all(store.get(d.id).meta["push"]["state"] == "done" for d in ds)


def test_sigterm_while_waiting_for_the_answer_exits_143_and_the_rerun_finishes_it(cli, cli_env, drafts_dir):
    d = approved(drafts_dir, "cnv_1042", "Hello from a push that was stopped.")

    with FakeFront() as fake:
        fake.fault(Fault(status=200, store=True, delay=60))
        env = env_for(cli_env, "front", fake)
        p = _start(env, "front")
        assert fake.arrived.wait(ARRIVAL_S)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)  # GRACE_S bounds it; only a hang gets near this
        assert p.returncode == 143, err
        assert b"terminated" in err and b"Traceback" not in err
        assert meta(drafts_dir, d.id)["push"]["state"] == "pending"
        r = cli(["drafts", "push", "--to", "front"], env)
        assert r.returncode == 0 and "found in the helpdesk" in r.out
        assert len(fake.writes) == 1 and len(fake.all_notes()) == 1


PUSH_COLS = [40, 80, 160]


@pytest.fixture(scope="module")
def pushed_on_terminals(tmp_path_factory, demo_db):
    """``drafts push --to zendesk`` on a terminal of each width of PUSH_COLS: two approved
    drafts (one of a ticket the helpdesk does not have) and one without a ticket, each width
    its own drafts folder and fake helpdesk; the three run at once (their starts overlap).
    -> {cols: (Term, exit status, drafts pushed, the skipped draft)}"""
    import contextlib

    from .conftest import clean_env

    started, done = {}, {}
    with contextlib.ExitStack() as stack:
        try:
            for cols in PUSH_COLS:
                base = tmp_path_factory.mktemp(f"push{cols}")
                drafts_dir = base / "drafts"
                env = clean_env(base / "home", demo_db, AGENTCLI_DRAFTS_DIR=str(drafts_dir))
                ds = [approved(drafts_dir, t, f"reply {t}") for t in ("1042", "1043")]
                skipped = approved(drafts_dir, "s-0007", "no ticket", session="s-0007")
                fake = stack.enter_context(FakeZendesk(tickets={"1042"}))
                started[cols] = (Term(["drafts", "push", "--to", "zendesk"], env_for(env, "zendesk", fake), cols),
                                 ds, skipped)
            for cols, (t, ds, skipped) in started.items():  # read in turn
                done[cols] = (t, t.finish(), ds, skipped)
        finally:
            for t, _, _ in started.values():
                t.child.close(force=True)
    return done


@pytest.mark.parametrize("cols", PUSH_COLS)
def test_push_on_a_terminal_fits_its_width_and_never_splits_an_id(pushed_on_terminals, cols):
    t, status, ds, skipped = pushed_on_terminals[cols]
    assert status == 4, t.text()
    assert wide(t.written_lines(), cols) == [], t.text()
    assert whole(t.text(), [ds[0].id, ds[1].id, skipped.id]) == [], t.text()
    assert "pushed" in t.text() and "(404)" in t.text()
