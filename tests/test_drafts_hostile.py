"""The draft store against hostile text, hand edits and a hostile shared folder (issue 14 items
3, 5, 6), and tickets, superseding, history and team folders (issue 16). Real files only."""

from __future__ import annotations

import json
import os
import stat
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcli.drafts.store import (MAX_FILE_BYTES, Damaged, Draft, DraftsFolderError, DraftStore,
                             ReviewConflict, draft_id, parse, render, resolve_reviewer)

SEPARATORS = "\x85\u2028\u2029\r\n\x0b\x0c\x1c\x1d\x1e\x1f\x7f\ufeff\u202e\u200b\x1b\t"
nasty = st.text(alphabet=st.sampled_from(SEPARATORS + 'a:"\\- []{}é中'), max_size=40)
any_text = st.one_of(st.text(max_size=60), nasty)


def _only(store: DraftStore) -> Draft:
    items = list(store.iter())
    assert len(items) == 1 and isinstance(items[0], Draft), items
    return items[0]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ticket=any_text, question=any_text, customer=any_text, other=any_text, who=any_text,
       reason=any_text, text=any_text)
def test_every_header_field_round_trips_any_text(tmp_path_factory, ticket, question, customer,
                                                 other, who, reason, text):
    store = DraftStore(tmp_path_factory.mktemp("d"))
    text = text or "x"
    d, created = store.save(text=text, ticket=ticket, question=question, customer=customer,
                            order_code=other, model=other, provider=other, session_id=other,
                            questions=[question, other],
                            lookups=[{other: question, "result": {"status": customer}}],
                            findings=[{"kind": other, "severity": "warning", "evidence": reason}])
    assert created and d.id == draft_id(ticket, text)
    got = _only(store)
    m = got.meta
    assert (m["ticket"], m["question"], m["customer"], m["order_code"], m["session_id"]) == \
        (ticket, question, customer, other, other)
    assert m["questions"] == [question, other] and m["lookups"][0][other] == question
    assert m["findings"][0]["evidence"] == reason and got.text == text and not got.edited
    store.set_status(d.id, "rejected", reviewer=who, reason=reason)
    got = _only(store)
    assert (got.meta["status"], got.meta["reviewed_by"], got.meta["review_reason"]) == \
        ("rejected", who, reason)
    assert got.meta["history"][-1] == {"who": who, "when": got.meta["reviewed_at"],
                                       "from": "pending_review", "to": "rejected", "reason": reason,
                                       "version": got.version}
    # every header line is one line for any reader, str.splitlines included
    raw = d.path.read_text(encoding="utf-8")
    header = raw[4:raw.index("\n---\n")]
    assert len(header.splitlines()) == header.count("\n") + 1


def test_hand_edits_a_person_makes_keep_the_draft(tmp_path):
    store = DraftStore(tmp_path)
    d, _ = store.save(text="Hello Ana,\nyour order shipped.\n", ticket="T-1")
    raw = d.path.read_text()
    for edited in ("\ufeff" + raw,                                          # a BOM
                   raw.replace('status: "pending_review"', 'status:"approved"'),  # no space
                   raw.replace('status: "pending_review"', "status: approved"),   # bare word
                   raw.replace("\n", "\r\n")):                              # CRLF everywhere
        d.path.write_bytes(edited.encode("utf-8"))
        got = _only(store)
        assert got.id == d.id and got.meta["ticket"] == "T-1"
        assert got.text.replace("\r\n", "\n") == "Hello Ana,\nyour order shipped.\n"


def test_a_damaged_draft_is_listed_as_damaged_and_never_breaks_the_queue(tmp_path):
    store = DraftStore(tmp_path)
    good, _ = store.save(text="fine", ticket="T-1")
    deep, _ = store.save(text="deep", ticket="T-2")
    deep.path.write_text(deep.path.read_text().replace('question: null', "question: " + "[" * 100_000
                                                         + "]" * 100_000))
    bad, _ = store.save(text="bad", ticket="T-3")
    bad.path.write_text(bad.path.read_text().replace('"pending_review"', '"sent"'))
    huge = tmp_path / "d-0000000000aa.md"
    huge.write_bytes(b"---\n" + b"x" * (MAX_FILE_BYTES + 1))
    items = {i.id: i for i in store.iter()}
    assert isinstance(items[good.id], Draft)
    assert isinstance(items[deep.id], Damaged) and "nested too deeply" in items[deep.id].reason
    assert isinstance(items[bad.id], Damaged) and "status" in items[bad.id].reason
    assert isinstance(items["d-0000000000aa"], Damaged) and "larger" in items["d-0000000000aa"].reason
    path, why = items[bad.id]  # still unpacks as (path, reason) for today's callers
    assert path == bad.path
    assert [x.id for x in store.iter() if isinstance(x, Draft)] == [good.id]


def _iter_in_thread(store):
    out: list = []
    t = threading.Thread(target=lambda: out.extend(store.iter()), daemon=True)
    t.start()
    t.join(30)  # a guard against a hang, not a timing assertion
    assert not t.is_alive(), "iter() blocked"
    return out


def test_only_regular_files_are_read(tmp_path):
    store = DraftStore(tmp_path)
    good, _ = store.save(text="fine", ticket="T-1")
    os.mkfifo(tmp_path / "d-00000000000f.md")
    os.symlink("/dev/zero", tmp_path / "d-00000000000e.md")
    os.symlink(good.path, tmp_path / "d-00000000000d.md")
    items = {i.id: i for i in _iter_in_thread(store)}
    assert "regular file" in items["d-00000000000f"].reason
    assert "symbolic link" in items["d-00000000000e"].reason
    assert "symbolic link" in items["d-00000000000d"].reason
    assert isinstance(items[good.id], Draft)


@pytest.mark.parametrize("kind", ["symlink", "dangling", "fifo"])
def test_the_lock_is_never_followed(tmp_path, kind):
    drafts = tmp_path / "drafts"
    store = DraftStore(drafts)
    d, _ = store.save(text="fine", ticket="T-1")
    target = tmp_path / "elsewhere"
    (drafts / ".lock").unlink()
    if kind == "symlink":
        target.write_text("keep")
        os.symlink(target, drafts / ".lock")
    elif kind == "dangling":
        os.symlink(target, drafts / ".lock")
    else:
        os.mkfifo(drafts / ".lock")
    with pytest.raises(DraftsFolderError, match="lock"):
        store.set_status(d.id, "approved", reviewer="kim")
    with pytest.raises(OSError):  # the draft tool reports an OSError as "could not be saved"
        store.save(text="other", ticket="T-1")
    assert (target.read_text() == "keep") if kind == "symlink" else not target.exists()
    assert store.get(d.id).meta["status"] == "pending_review"


def test_ticket_makes_a_rerun_reuse_its_draft(tmp_path):
    store = DraftStore(tmp_path)
    a, c1 = store.save(text="Your order shipped.", ticket="line-7", session_id="s-run1")
    b, c2 = store.save(text="Your order shipped.", ticket="line-7", session_id="s-run2")
    assert (c1, c2) == (True, False) and a.id == b.id and b.meta["session_id"] == "s-run1"
    assert len(list(tmp_path.glob("d-*.md"))) == 1
    # without a ticket the session is the ticket
    c, _ = store.save(text="Hi", session_id="conv-9")
    assert c.id == draft_id("conv-9", "Hi") and c.ticket == "conv-9"


def test_a_new_draft_supersedes_the_pending_ones_of_its_ticket(tmp_path):
    store = DraftStore(tmp_path)
    first, _ = store.save(text="Long reply", ticket="T-1", questions=["where is GH56JK78MN?"])
    kept, _ = store.save(text="Approved reply", ticket="T-1")
    f = store.get(first.id)
    assert f.meta["status"] == "superseded" and f.meta["superseded_by"] == kept.id
    assert f.meta["history"][-1]["to"] == "superseded" and kept.id in f.meta["history"][-1]["reason"]
    store.set_status(kept.id, "approved", reviewer="kim", force=True)
    other, _ = store.save(text="Other ticket", ticket="T-2")
    newer, _ = store.save(text="Short reply", ticket="T-1",
                          questions=["where is GH56JK78MN?", "make it shorter"],
                          lookups=[{"name": "get_order_status", "input": {"order_code": "GH56JK78MN"},
                                    "result": {"status": "shipped"}}])
    assert store.get(kept.id).meta["status"] == "approved"  # only pending drafts are superseded
    assert store.get(first.id).meta["superseded_by"] == kept.id
    f = store.get(first.id)
    assert store.get(other.id).meta["status"] == "pending_review"
    n = store.get(newer.id)
    assert n.meta["status"] == "pending_review" and n.meta["questions"][-1] == "make it shorter"
    assert n.meta["lookups"][0]["result"] == {"status": "shipped"}
    # the same text saved again (a model going back to it): it is the live draft again
    again, created = store.save(text="Short reply", ticket="T-1")
    assert not created and again.meta["status"] == "pending_review"
    back, created = store.save(text="Long reply", ticket="T-1")
    assert not created and back.id == first.id and back.meta["status"] == "pending_review"
    assert "superseded_by" not in back.meta and back.meta["history"][-1]["to"] == "pending_review"
    assert store.get(newer.id).meta["superseded_by"] == first.id
    assert store.get(kept.id).meta["status"] == "approved"
    back, _ = store.save(text="Short reply", ticket="T-1")
    with pytest.raises(ReviewConflict, match="superseded by " + newer.id):
        store.set_status(first.id, "approved", reviewer="kim")
    assert store.set_findings(newer.id, [{"kind": "unverified_order", "severity": "error",
                                          "sentence": "ORD-1 shipped"}], text="Short reply")
    assert store.get(newer.id).meta["findings"][0]["kind"] == "unverified_order"
    # findings belong to a text: those of another text are not stored
    assert not store.set_findings(newer.id, [], text="Long reply")
    assert store.get(newer.id).errors[0]["kind"] == "unverified_order"


def test_history_force_and_an_edit_after_approval(tmp_path):
    store = DraftStore(tmp_path)
    d, _ = store.save(text="Original", ticket="T-1")
    store.set_status(d.id, "approved", reviewer="kim")
    with pytest.raises(ReviewConflict, match="already approved by kim.*--force"):
        store.set_status(d.id, "rejected", reviewer="lee", reason="wrong")
    assert store.set_status(d.id, "approved", reviewer="lee")[1] is False  # no-op, no error
    r, changed = store.set_status(d.id, "rejected", reviewer="lee", reason="wrong", force=True)
    assert changed and [(h["who"], h["from"], h["to"], h["reason"]) for h in r.meta["history"]] == \
        [("kim", "pending_review", "approved", None), ("lee", "approved", "rejected", "wrong")]
    store.set_status(d.id, "approved", reviewer="kim", force=True)
    # a hand edit after approval: pending again, the approved text kept
    d.path.write_text(d.path.read_text().replace("\n---\nOriginal", "\n---\nOriginal, edited"))
    got = store.get(d.id)
    assert got.meta["status"] == "pending_review" and got.reopened
    assert got.meta["approved_text"] == "Original" and got.record()["edited_after_approval"]
    assert "approved" in render(got.meta, got.text)  # reading never rewrites the file
    a, changed = store.set_status(d.id, "approved", reviewer="kim")  # no force: it is pending
    assert changed and a.meta["approved_text"] == "Original, edited" and not a.reopened
    assert [(h["who"], h["to"]) for h in a.meta["history"][-2:]] == \
        [("(hand edit)", "pending_review"), ("kim", "approved")]


@pytest.mark.parametrize("umask", [0o077, 0o000])
def test_group_writable_folder_gives_group_files_never_world(tmp_path, umask):
    team = tmp_path / "team"
    team.mkdir()
    os.chown(team, -1, 4)  # a group other than ours (adm)
    team.chmod(0o2770)
    old = os.umask(umask)
    try:
        store = DraftStore(team)
        d, _ = store.save(text="Hi", ticket="T-1")
        store.save(text="Hi again", ticket="T-1")  # takes the lock, supersedes d (a rewrite)
    finally:
        os.umask(old)
    for p in (d.path, team / ".lock", *team.glob("d-*.md")):
        st_ = p.stat()
        assert stat.S_IMODE(st_.st_mode) == 0o660 and st_.st_gid == 4, p


def test_private_folder_stays_owner_only(tmp_path):
    old = os.umask(0)
    try:
        store = DraftStore(tmp_path / "mine")
        d, _ = store.save(text="Hi", ticket="T-1")
        store.set_status(d.id, "approved", reviewer="kim")
    finally:
        os.umask(old)
    for p in (d.path, tmp_path / "mine" / ".lock"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    assert stat.S_IMODE((tmp_path / "mine").stat().st_mode) == 0o700  # created by us: private
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)  # world-writable is nobody's team folder
    e, _ = DraftStore(tmp_path / "open").save(text="Hi", ticket="T-1")
    assert stat.S_IMODE(e.path.stat().st_mode) == 0o600


def test_resolve_reviewer(monkeypatch):
    monkeypatch.setenv("USER", "kim")
    assert resolve_reviewer("Lee Park") == "Lee Park"
    assert resolve_reviewer("  ") == "kim" and resolve_reviewer(None) == "kim"
    assert resolve_reviewer("lee\u2028\x1b[31m") == "lee[31m"
    monkeypatch.delenv("USER")
    monkeypatch.delenv("LOGNAME", raising=False)
    assert resolve_reviewer() not in ("", None)


def test_older_drafts_still_read(tmp_path):
    path = tmp_path / "d-0123456789ab.md"
    path.write_text('---\nid: "d-0123456789ab"\nstatus: "approved"\nconversation_id: "c1"\n'
                    'reviewed_by: "kim"\n---\nHello\n')
    d = parse(path.read_text(), path)
    assert d.ticket == "c1" and d.meta["status"] == "approved" and not d.reopened


@pytest.mark.parametrize("created", ['"not a date"', '"9999-99-99T00:00:00+00:00"', '"9999-12-31T00:00:00+00:00"', "[]",
                                     # parsed by fromisoformat, but sorted as text above every real stamp
                                     '"20261101"', '"2026-W50-2"', '"2026-12-09T00:00+23:59"'])
def test_a_created_at_that_is_no_time_or_far_ahead_is_damaged_not_the_last_draft(cli, cli_env, drafts_dir, created):
    """A hand-edited created_at ("not a date", a year 9999) read as "just saved" and became
    `last`, so `drafts approve last --force` picked the bogus draft."""
    store = DraftStore(drafts_dir)
    real, _ = store.save(text="Thanks, a colleague is looking into it.", ticket="T-1")
    path = drafts_dir / "d-0123456789ab.md"
    path.write_text(f'---\nid: "d-0123456789ab"\nstatus: "pending_review"\ncreated_at: {created}\n'
                    'ticket: "T-2"\ntext_sha256: "x"\nhistory: []\n---\nWe will refund you in full.\n')
    listed = json.loads(cli(["drafts", "list", "--json", "--all"], cli_env).out)
    assert {d["id"]: d["status"] for d in listed}["d-0123456789ab"] == "damaged"
    p = cli(["drafts", "show", "last", "--json"], cli_env)
    assert p.returncode == 0 and json.loads(p.out)["id"] == real.id


def test_a_draft_approved_by_an_older_version_keeps_its_approval(tmp_path):
    """Older versions saved text_sha256 and approved without approved_sha256 or a history: such
    a draft, a reviewer named, is approved; the same header with no reviewer (a status edited by
    hand) is not, and neither is one whose history shows no approval."""
    from agentcli.drafts.format import parse, text_hash

    path = tmp_path / "d-0123456789ab.md"
    head = f'---\nid: "d-0123456789ab"\nstatus: "approved"\ntext_sha256: "{text_hash("Hello")}"\n'
    path.write_text(head + 'reviewed_by: "alice"\nreviewed_at: "2026-11-30T10:00:00+00:00"\n---\nHello')
    assert parse(path.read_text(), path).meta["status"] == "approved"
    path.write_text(head + "---\nHello")
    assert parse(path.read_text(), path).meta["status"] == "pending_review"
    path.write_text(head + 'reviewed_by: "alice"\nhistory: [{"when": "2026-11-30T10:00:00+00:00", "who": "alice", '
                    '"from": "pending_review", "to": "pending_review", "reason": "edited the text"}]\n---\nHello')
    assert parse(path.read_text(), path).meta["status"] == "pending_review"
