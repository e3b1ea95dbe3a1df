"""Adversarial pass (issues 14-17): drafts that the run says are saved must be in the queue."""

from __future__ import annotations

import json

from agentcli.drafts.format import text_key


def _ask(cli, env, ticket, *extra):
    return cli(["ask", "--provider", "offline", "--json", "--ticket", ticket, *extra,
                "where is 27WU6KTHA9"], env)


def test_a_rejected_reply_saved_again_is_not_ok(cli, cli_env, demo_db):
    """The same text in the same ticket is the same draft: when a reviewer rejected it, a re-run
    of the question (or a retried batch line) used to end "ok", exit 0, "saved ... for review",
    with nothing in the review queue."""
    first = _ask(cli, cli_env, "R-1")
    assert first.returncode == 0, first.err
    did = json.loads(first.out)["drafts"][0]["id"]
    rej = cli(["drafts", "reject", did, "--reason", "wrong tone"], cli_env)
    assert rej.returncode == 0, rej.err

    again = _ask(cli, cli_env, "R-1")
    doc = json.loads(again.out)
    assert again.returncode == 1, again.out
    assert doc["status"] == "incomplete" and doc["stop_reason"] == "draft_not_saved"
    last = [t for t in doc["tool_calls"] if t["name"] == "draft_reply"][-1]
    assert last["is_error"] and "rejected" in json.dumps(last["result"])
    # the reviewer's decision stands: the draft is still rejected, nothing pending in the ticket
    listed = cli(["drafts", "list", "--json", "--all", "--ticket", "R-1"], cli_env)
    rows = json.loads(listed.out)
    assert [(r["id"], r["status"]) for r in rows] == [(did, "rejected")]


def test_an_approved_or_superseded_reply_saved_again_stays_ok(cli, cli_env, demo_db):
    """Only a rejection blocks: the same text again after approval is the approved reply."""
    first = _ask(cli, cli_env, "R-2")
    did = json.loads(first.out)["drafts"][0]["id"]
    assert cli(["drafts", "approve", did], cli_env).returncode == 0
    again = _ask(cli, cli_env, "R-2")
    assert again.returncode == 0, again.out
    assert json.loads(again.out)["status"] == "ok"


KEY_A = "sk-ant-api03-Qw3rTy0987654321ZxCvBnMaSdFgHjKl"
KEY_B = "sk-ant-api03-Mn8bVc7654321098LkJhGfDsApOiUy"


def test_a_key_given_as_a_ticket_never_lands_in_a_draft_file(cli, cli_env, drafts_dir, tmp_path):
    """`--ticket` and a batch line's `id` are the draft's ticket: a pasted API key was written
    raw into the draft's header (every other field is redacted)."""
    a = _ask(cli, cli_env, KEY_A)
    assert a.returncode == 0, a.err
    lines = tmp_path / "q.jsonl"
    lines.write_text(json.dumps({"id": KEY_B, "question": "where is 27WU6KTHA9"}) + "\n")
    b = cli(["batch", "--provider", "offline", str(lines)], cli_env)
    assert b.returncode == 0, b.err
    files = sorted(drafts_dir.glob("d-*.md"))
    assert len(files) == 2  # two tickets: neither supersedes the other
    for f in files:
        body = f.read_text()
        assert KEY_A not in body and KEY_B not in body and KEY_A[:20] not in body
    listed = json.loads(cli(["drafts", "list", "--json"], cli_env).out)
    assert {r["status"] for r in listed} == {"pending_review"}
    assert all(r["ticket"].startswith("id-") for r in listed)
    # the person who pasted the key can still find its draft by it
    mine = json.loads(cli(["drafts", "list", "--json", "--ticket", KEY_A], cli_env).out)
    assert [r["id"] for r in mine] == [json.loads(a.out)["drafts"][0]["id"]]


def test_a_hostile_header_cannot_print_lines_that_look_like_ours(cli, cli_env, drafts_dir):
    """A teammate's (or an editor's) draft header with line breaks in a field, a finding or a
    history entry printed extra lines in `drafts show` / `review`: a fake "findings: none",
    a fake "reviewed ... approved by lead", a fake "text" section."""
    drafts_dir.mkdir()
    did = "d-0000000000bb"
    breaks = ["\n", "\r\n", "\u2028", "\u2029", "\x85", "\x0b"]
    meta = {"id": did, "status": "pending_review", "created_at": "2026-11-30T10:00:00+00:00",
            "ticket": "T-1" + breaks[0] + "findings: none - verified by lead",
            "order_code": "27WU6KTHA9", "customer": "a@b.c" + breaks[1] + "  reviewed  approved by lead",
            "findings": [{"kind": "forbidden_promise", "severity": "error",
                          "message": "m" + breaks[2] + "text" + breaks[3] + "All fine, approve me"}],
            "history": [{"who": "lead" + breaks[4] + "approved", "when": "2026-11-30T10:00:00+00:00",
                         "from": "a", "to": "b", "reason": "r" + breaks[5] + "line2"}],
            "findings_sha256": text_key("Hello\n")}  # the findings are this text's: shown
    header = "".join(f"{k}: {json.dumps(v)}\n" for k, v in meta.items())
    (drafts_dir / f"{did}.md").write_text("---\n" + header + "---\nHello\n", encoding="utf-8")
    p = cli(["drafts", "show", did], cli_env)
    assert p.returncode == 0, p.err
    lines = [ln.strip() for ln in p.out.splitlines()]  # splitlines: every separator counts
    for fake in ("findings: none - verified by lead", "reviewed  approved by lead",
                 "All fine, approve me", "approved: a → b — r", "line2"):
        assert not any(ln.startswith(fake) for ln in lines), (fake, p.out)
    assert lines.count("text") == 1  # only our own section heading
    assert "verified by lead" in p.out and "All fine, approve me" in p.out  # shown, on its line
