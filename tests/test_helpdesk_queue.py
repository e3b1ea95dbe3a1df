"""``drafts export`` and ``drafts push`` over both drafts backends: the folder and the
PostgreSQL queue (issue 28: "works with the folder and with the PostgreSQL queue"). A real
PostgreSQL server (``tests/pg.py``), the fake helpdesks on 127.0.0.1, the CLI in-process.
"""

from __future__ import annotations

import json
import socket

from agentcli.drafts.format import now_iso
from agentcli.testing.fake_helpdesk import FakeZendesk, Fault

from .test_drafts_queue import backend  # noqa: F401  (the fixture: folder and postgresql)
from .test_helpdesk_push import env_for


def _approved(store, ticket, text, session="s-0001"):
    d, _ = store.save(text=text, ticket=ticket, session_id=session, customer="ana@example.com")
    store.set_status(d.id, "approved", reviewer="kim")
    return store.get(d.id)


def test_push_once_and_recorded_on_both_backends(backend, cli, cli_env):  # noqa: F811
    kind, make, flags = backend
    s = make()
    a = _approved(s, "1042", "Your order ORD-20261234 ships tomorrow.")
    b = _approved(s, "1043", "Your license is on its way.")
    nope = _approved(s, "s-0009", "no helpdesk ticket", session="s-0009")
    with FakeZendesk() as fake:
        env = env_for(cli_env, "zendesk", fake)
        exported = cli(["drafts", "export", "--to", "zendesk", *flags], env)
        assert exported.returncode == 1 and f"{nope.id}: skipped" in exported.err
        lines = [json.loads(x) for x in exported.out.splitlines()]
        fake.fault(Fault(status=503))  # a 5xx first: checked, then sent again
        p = cli(["drafts", "push", "--to", "zendesk", *flags], env)
        assert p.returncode == 1, p.err  # one draft skipped (no helpdesk ticket)
        assert p.out.count("pushed\t") == 2 and len(fake.all_notes()) == 2
        assert [(c["path"], c["body"]) for c in fake.writes[1:]] == [
            (x["path"], x["body"]) for x in lines]
        for d in (a, b):
            rec = make().get(d.id).meta["push"]
            assert rec["state"] == "done" and rec["who"] == "kim" and rec["id"]
        again = cli(["drafts", "push", "--to", "zendesk", *flags], env)
        assert len(fake.all_notes()) == 2 and "pushed\t" not in again.out
        pushed = json.loads(cli(["drafts", "list", "--json", "--pushed", *flags], env).out)
        assert sorted(r["id"] for r in pushed) == sorted([a.id, b.id])
        assert fake.public_replies == []


def test_an_interrupted_push_is_found_not_sent_again_on_both_backends(backend, cli, cli_env):  # noqa: F811
    kind, make, flags = backend
    s = make()
    d = _approved(s, "1042", "Hello Ana, a reply whose push was interrupted.")
    with FakeZendesk() as fake:
        env = env_for(cli_env, "zendesk", fake)
        fake.fault(Fault(status=200, store=True, delay=2.0))
        p = cli(["drafts", "push", "--to", "zendesk", "--timeout", "0.3", *flags], env)
        assert p.returncode == 0 and "found in the helpdesk" in p.out, p.err
        assert make().get(d.id).meta["push"]["state"] == "done" and len(fake.writes) == 1
        # a pending record left by a process that is gone (SIGKILL before its request reached
        # the helpdesk): the rerun asks the helpdesk first, finds nothing, sends it once
        e = _approved(s, "1043", "Second reply, its push killed before the request.")
        gone = {"state": "pending", "key": "p-gone", "helpdesk": "zendesk", "ticket": "1043",
                "who": "sam", "when": now_iso(), "pid": 2 ** 22 + 12345,
                "host": socket.gethostname()[:64]}
        s.remote(e.id, "push", gone, who="sam", reason="pushing to Zendesk ticket 1043", expect=None)
        before = len(fake.calls)
        r = cli(["drafts", "push", "--to", "zendesk", *flags], env)
        assert r.returncode == 0, r.err
        assert [(c["method"], c["path"]) for c in fake.calls[before:]] == [
            ("GET", "/api/v2/tickets/1043/comments.json"), ("PUT", "/api/v2/tickets/1043.json")]
        assert make().get(e.id).meta["push"]["state"] == "done"
        assert len(fake.writes) == 2 and len(fake.all_notes()) == 2
        assert fake.public_replies == []
