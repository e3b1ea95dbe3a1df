"""No request to a helpdesk can post a public reply, whatever the draft text, the ticket id or
the configuration holds (issue 28, items 2 and 5).

Two judges: our guard (``agentcli.helpdesk.rules.guard``, asserted on every request right before
it is sent) and each fake helpdesk's own opinion (``agentcli.testing.fake_helpdesk``, written
without our rules: Zendesk's default ``public: true``, Help Scout's reply without ``draft``,
...). Property tests (hypothesis) over hostile ticket ids, texts and bodies; the real HTTP client
against the fakes on 127.0.0.1 for what would reach the wire.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcli.drafts.format import Draft
from agentcli.drafts.store import DraftStore
from agentcli.helpdesk import HELPDESKS
from agentcli.helpdesk.export import EXAMPLE_BASE, plan
from agentcli.helpdesk.push import Pusher
from agentcli.helpdesk.rules import (
    Refused,
    as_html,
    check_base_url,
    guard,
    plain,
    same_words,
)
from agentcli.helpdesk.send import Sender
from agentcli.testing.fake_helpdesk import FAKES

NAMES = list(HELPDESKS)


@pytest.fixture(scope="module")
def fakes():
    """One running fake per helpdesk for the module (each example resets it), and a client for
    it (building one loads the system's certificates: a tenth of a second)."""
    started = {n: FAKES[n]().start() for n in NAMES}
    senders = {n: Sender(HELPDESKS[n], f.url, f.token, timeout=5) for n, f in started.items()}
    yield {n: (started[n], senders[n]) for n in NAMES}
    for n in NAMES:
        senders[n].client.close()
        started[n].stop()
GOOD_TICKET = {"zendesk": "1042", "front": "cnv_55c8c149", "helpscout": "1042", "freshdesk": "1042"}
HOSTILE_IDS = [
    "1042/../../users/1", "../1042", "1042/..", "..", "1042?public=true", "1042#frag", "1042%2F9",
    "1042%2f..%2f", " 1042", "1042 ", "10 42", "1042\n", "1042\r\nX-Evil: 1", "1042\t", "\u0661\u0660",
    "\uff11\uff10\uff14\uff12", "1042\u200b", "1042.json", "1042/", "/1042", "0", "-1", "+1042",
    "1e3", "cnv_55c8c149/messages", "cnv_55C8", "cnv_", "cnv_55c8c149?x", "cnv_55c8c149/../x",
    "", "9" * 17, "1042;x", "1042&x=1", "😀", "1042\x00",
]


def draft(text="Hello, your order is on its way.", ticket="1042", **meta) -> Draft:
    m = {"id": "d-0123456789ab", "status": "approved", "ticket": ticket, "session_id": "s-1",
         "customer": "ana@example.com", **meta}
    return Draft(meta=m, text=text, path=Path("d-0123456789ab.md"))


def body_of(name: str, text: str = "hi") -> dict:
    return HELPDESKS[name].build(text, {"id": "d-0123456789ab", "customer": "ana@example.com"})


def send_guarded(name: str, ticket: str, body: dict | None, *, method: str | None = None,
                 path: str | None = None, query: str = "", base: str = EXAMPLE_BASE) -> None:
    hd = HELPDESKS[name]
    route = hd.write if body is not None else hd.check
    url = base + (path if path is not None else route.fill(ticket)) + (f"?{query}" if query else
                                                                        (f"?{route.query}" if route.query else ""))
    guard(hd, base, method or route.method, url,
          json.dumps(body).encode() if body is not None else None, ticket)


# ----------------------------------------------------------------------------- ticket ids

@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("ticket", HOSTILE_IDS)
def test_a_hostile_ticket_id_is_skipped_at_export_and_refused_by_the_guard(name, ticket):
    p = plan(draft(ticket=ticket), name)
    assert p.record is None and p.skipped
    with pytest.raises(Refused):
        send_guarded(name, ticket, body_of(name))
    with pytest.raises(Refused):
        send_guarded(name, ticket, None)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ticket=st.text(max_size=40) | st.from_regex(r"[0-9a-z_./%?#-]{1,20}", fullmatch=True),
       text=st.text(min_size=1, max_size=300))
def test_whatever_the_ticket_and_text_a_planned_request_is_the_private_endpoint(name, ticket, text):
    hd = HELPDESKS[name]
    p = plan(draft(text=text, ticket=ticket), name)
    if p.record is None:
        return
    r = p.record
    # the ticket is a strict id, and the path is exactly the template filled with it
    assert hd.id_re.fullmatch(r["ticket"]) and r["ticket"].isascii()
    assert (r["method"], r["path"]) == (hd.write.method, hd.write.fill(r["ticket"]))
    assert hd.is_private(r["body"])
    # the fake helpdesk's own judgement, independent of our rules
    assert FAKES[name]().public(r["method"], r["path"], r["body"]) is None
    send_guarded(name, r["ticket"], r["body"])  # and the guard lets exactly it go


# ----------------------------------------------------------------------------- bodies

PUBLIC_BODIES = {
    "zendesk": [
        {"ticket": {"comment": {"body": "hi"}}},                      # Zendesk's default: public
        {"ticket": {"comment": {"body": "hi", "public": True}}},
        {"ticket": {"comment": {"body": "hi", "public": 0}}},
        {"ticket": {"comment": {"body": "hi", "public": "false"}}},
        {"ticket": {"comment": {"body": "hi", "public": None}}},
        {"ticket": {"comment": {"body": "hi", "public": False, "html_body": "<p>x</p>"}}},
        {"ticket": {"comment": {"body": "hi", "public": False}, "status": "solved"}},
        {"ticket": {"comment": {"body": "", "public": False}}},
        {"comment": {"body": "hi", "public": False}},
        {"ticket": [{"comment": {"body": "hi", "public": False}}]},
    ],
    "front": [{"body": "hi"}, {"body": "hi", "mode": "private", "extra": 1},
              {"body": "hi", "mode": "SHARED"}, {"body": "hi", "mode": "shared", "to": ["x@y"]},
              {"body": 5, "mode": "shared"}],
    "helpscout": [
        {"customer": {"email": "a@b.co"}, "text": "hi"},
        {"customer": {"email": "a@b.co"}, "text": "hi", "draft": False},
        {"customer": {"email": "a@b.co"}, "text": "hi", "draft": 1},
        {"customer": {"email": "a@b.co"}, "text": "hi", "draft": "true"},
        {"customer": {"email": "a@b.co"}, "text": "hi", "draft": True, "status": "closed"},
        {"customer": {"email": "a@b.co", "id": 1}, "text": "hi", "draft": True},
        {"customer": {"email": "nobody"}, "text": "hi", "draft": True},
    ],
    "freshdesk": [{"body": "hi"}, {"body": "hi", "private": False}, {"body": "hi", "private": 1},
                  {"body": "hi", "private": True, "notify_emails": ["x@y.z"]},
                  {"body": "hi", "private": "true"}],
}


@pytest.mark.parametrize("name,body", [(n, b) for n, bs in PUBLIC_BODIES.items() for b in bs])
def test_a_body_that_could_post_a_public_reply_or_more_is_refused(name, body):
    with pytest.raises(Refused):
        send_guarded(name, GOOD_TICKET[name], body)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_mutated_body_passes_the_guard_only_when_the_fake_helpdesk_also_finds_it_private(name, data):
    """Mutations of the right body (a flag flipped or retyped, a key added or removed): the guard
    never lets through a body the fake helpdesk would take as a public reply."""
    body = copy.deepcopy(body_of(name))
    holder = body["ticket"]["comment"] if name == "zendesk" else body
    key = data.draw(st.sampled_from(sorted(holder) + ["public", "draft", "private", "mode", "status"]))
    what = data.draw(st.sampled_from(["drop", "set"]))
    if what == "drop":
        holder.pop(key, None)
    else:
        holder[key] = data.draw(st.none() | st.booleans() | st.integers(-1, 2) | st.text(max_size=8))
    try:
        send_guarded(name, GOOD_TICKET[name], body)
    except Refused:
        return
    assert FAKES[name]().public(HELPDESKS[name].write.method, "", body) is None


@pytest.mark.parametrize("name", NAMES)
def test_only_the_two_routes_of_each_helpdesk_pass(name):
    hd = HELPDESKS[name]
    t = GOOD_TICKET[name]
    send_guarded(name, t, body_of(name))
    send_guarded(name, t, None)
    for method in ("DELETE", "PATCH", "POST" if hd.write.method == "PUT" else "PUT", "HEAD"):
        with pytest.raises(Refused):
            send_guarded(name, t, body_of(name), method=method)
    for path in ("/api/v2/tickets.json", f"/conversations/{t}/messages", f"/v2/conversations/{t}",
                 f"/api/v2/tickets/{t}/reply", hd.write.fill(t) + "/", "/" + hd.write.fill(t),
                 hd.write.fill(t).upper()):
        with pytest.raises(Refused):
            send_guarded(name, t, body_of(name), path=path)
    with pytest.raises(Refused):
        send_guarded(name, t, body_of(name), query="public=true")
    with pytest.raises(Refused):  # a read with a body
        guard(hd, EXAMPLE_BASE, hd.check.method, EXAMPLE_BASE + hd.check.fill(t) +
              (f"?{hd.check.query}" if hd.check.query else ""), b'{"x": 1}', t)
    with pytest.raises(Refused):  # a header we never set
        guard(hd, EXAMPLE_BASE, hd.write.method, EXAMPLE_BASE + hd.write.fill(t),
              json.dumps(body_of(name)).encode(), t, ["X-HTTP-Method-Override"])


# ----------------------------------------------------------------------------- base URLs

BAD_BASES = [
    "http://acme.zendesk.com", "ftp://acme.zendesk.com", "acme.zendesk.com", "//acme.zendesk.com",
    "https://agent:pw-0123@acme.zendesk.com", "https://agent@acme.zendesk.com",
    "https://acme.zendesk.com/api/v2", "https://acme.zendesk.com/x?public=true",
    "https://acme.zendesk.com?x=1", "https://acme.zendesk.com#f", "https://acme.zendesk.com/#",
    "https://ac me.zendesk.com", "https://acme.zendesk.com\n.evil", "https://acmé.zendesk.com",
    "https://acme.zendesk.com:0", "https://acme.zendesk.com:99999", "https://", "", "   ",
    "http://127.0.0.1.evil.example", "http://localhost.evil.example", "javascript:alert(1)",
    "https://acme.zendesk.com\\@evil.example", "https://[::1", "https://acme..com",
]


@pytest.mark.parametrize("base", BAD_BASES)
@pytest.mark.parametrize("name", NAMES)
def test_a_base_url_with_a_surprise_is_refused_before_anything_is_sent(name, base):
    with pytest.raises(Refused) as e:
        check_base_url(HELPDESKS[name], base)
    assert "pw-0123" not in e.value.message


@pytest.mark.parametrize("base", ["https://acme.zendesk.com", "https://ACME.zendesk.com/",
                                  "https://acme.zendesk.com:8443", "http://127.0.0.1:8080",
                                  "http://localhost:9", "http://[::1]:80"])
def test_plain_https_bases_and_local_http_pass(base):
    assert check_base_url(HELPDESKS["zendesk"], base).startswith(("https://", "http://"))


@pytest.mark.parametrize("base,root", [("https://ACME.zendesk.com:443", "https://acme.zendesk.com"),
                                       ("http://[::1]:80/", "http://[::1]"),
                                       ("http://127.0.0.1:8080", "http://127.0.0.1:8080")])
def test_a_base_url_is_taken_as_the_http_client_will_write_it(base, root):
    hd = HELPDESKS["zendesk"]
    assert check_base_url(hd, base) == root
    with Sender(hd, root, "t0ken-Abc123", timeout=1) as s:  # the guard accepts what it builds
        req = s.client.build_request("PUT", root + hd.write.fill("1"))
        assert str(req.url) == root + hd.write.fill("1")


# ----------------------------------------------------------------------------- on the wire

@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ticket=st.sampled_from(HOSTILE_IDS) | st.text(max_size=12),
       mutate=st.sampled_from(["none", "flip", "extra"]))
def test_through_the_real_client_a_refused_request_never_reaches_the_helpdesk(name, ticket, mutate,
                                                                             fakes):
    hd = HELPDESKS[name]
    fake, s = fakes[name]
    fake.reset()
    body = body_of(name)
    holder = body["ticket"]["comment"] if name == "zendesk" else body
    flag = {"zendesk": "public", "front": "mode", "helpscout": "draft", "freshdesk": "private"}[name]
    if mutate == "flip":
        holder[flag] = {"zendesk": True, "front": "private", "helpscout": False, "freshdesk": False}[name]
    elif mutate == "extra":
        holder["status"] = "closed"
    try:
        s.send(hd.write, ticket, body)
    except Refused:
        assert fake.calls == []
    else:
        assert mutate == "none" and hd.id_re.fullmatch(ticket) and ticket.isascii()
    assert fake.public_replies == []


def test_a_draft_is_found_by_its_words_within_what_the_helpdesk_wraps_around_them():
    text = "Hello Ana,\n\nyour order <GH56JK78MN> & its license are on their way.\nBest, Kim"
    stored = f"<div>{as_html(text)}</div><div class='signature'>-- Acme support</div>"
    assert same_words(stored, text)
    assert not same_words(stored, text.replace("Ana", "Bob"))
    assert same_words(as_html("Thanks!"), "Thanks!")
    assert not same_words("<p>Thanks! We will look into it.</p>", "Thanks!")  # short: whole only


@settings(max_examples=200, deadline=None)
@given(base=st.text(max_size=60) | st.builds(lambda a, b: f"{a}://{b}",
                                             st.sampled_from(["https", "http", "HTTPS", "ftp"]),
                                             st.text(max_size=40)))
def test_whatever_base_url_is_configured_only_a_bare_origin_is_taken(base):
    try:
        root = check_base_url(HELPDESKS["freshdesk"], base)
    except Refused:
        return
    u = urlsplit(root)
    assert root == f"{u.scheme}://{u.netloc}" and u.scheme in ("https", "http")
    assert not any(c in u.netloc for c in "@/?#\\ ") and u.netloc.isascii()
    if u.scheme == "http":
        assert u.hostname in ("127.0.0.1", "localhost", "::1")


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=400).filter(lambda t: t.strip()))
def test_whatever_the_text_it_arrives_private_and_as_typed(name, text, tmp_path_factory, fakes):
    """The real push (store, engine, client) against the fake: any text, controls, markup and
    line separators included, makes one private note or draft whose words are the draft's."""
    store = DraftStore(tmp_path_factory.mktemp("d"))
    d, _ = store.save(text=text, ticket=GOOD_TICKET[name], session_id="s-1", customer="ana@example.com")
    store.set_status(d.id, "approved", reviewer="kim")
    d = store.get(d.id)
    fake, s = fakes[name]
    fake.reset()
    o = Pusher(store, HELPDESKS[name], s, "kim").push_one(d)
    assert o.status == "pushed", o.message
    assert fake.public_replies == [] and len(fake.all_notes()) == 1
    body = fake.all_notes()[0]["body"]
    words = " ".join(d.text.split())
    assert plain(body).startswith(words) if name != "zendesk" else body.startswith(d.text)
