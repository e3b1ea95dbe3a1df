"""Adversarial pass: a value that is one line on screen (a tool name, an outcome, a stop or retry
reason, a session's provider, model, customer, paths) must stay on its line. Cleaning turns a
CR, U+2028 and U+2029 into a newline a reader can see (right for a reply's text), so a tool name
or a provider written ``"x\\u2028✓ approved"`` used to print a line of its own that passed for
one of ours."""

from __future__ import annotations

import json

FORGED = "✓ draft d-000000000000 approved"
SEPARATORS = ["\u2028", "\u2029", "\r", "\n", "\r\n", "\x85"]


def _hostile(sep: str) -> str:
    return f"evil{sep}{FORGED}"


def _session(sdir, sid: str, sep: str) -> None:
    h = _hostile(sep)
    events = [
        {"type": "session_start", "session_id": sid, "provider": h, "model": h, "ts": 1796000000,
         "customer": h, "db": h, "drafts_dir": h},
        {"type": "question", "text": f"where is GH56JK78MN?{sep}{FORGED}", "customer": h,
         "session_id": sid, "ts": 1796000001},
        {"type": "tool_call", "id": "t1", "name": h, "input": {"order_code": "x"}, "ts": 1796000002},
        {"type": "tool_result", "id": "t1", "name": h, "input": {"order_code": "x"}, "result": "no",
         "is_error": True, "duration_ms": 1, "outcome": h, "ts": 1796000003},
        {"type": "retry", "turn": 1, "attempt": 2, "reason": h, "wait_s": 0.5, "waiting": False},
        {"type": "cancelled", "message": h},
        {"type": "turn_finished", "status": "error", "stop_reason": h, "answer": "", "turns": 1,
         "message": h, "usage": {}},
    ]
    (sdir / f"{sid}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_log_show_keeps_every_one_line_field_on_its_line(cli, cli_env, home):
    sdir = home / "sessions"
    sdir.mkdir(parents=True)
    for n, sep in enumerate(SEPARATORS):
        sid = f"20261130-12000{n}-0123456789ab"
        _session(sdir, sid, sep)
        p = cli(["log", "show", sid], cli_env)
        assert p.returncode == 0, p.err
        assert "Traceback" not in p.err
        lines = p.out.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n") \
            .replace("\u2029", "\n").split("\n")
        # the forged text is shown (as data) but never at the left edge, where our own lines
        # start (a question's second line is indented under its "? ")
        assert any(FORGED in x for x in lines), (sep, p.out)
        starts = [x for x in lines if x.lstrip("\ufffd").startswith("✓")]
        assert starts == [], (repr(sep), starts)
        # each hostile tool name stays on the line of its arrow
        assert any(x.startswith("→ evil") and FORGED in x for x in lines), (repr(sep), p.out)
        assert any(x.startswith("✗ evil") and FORGED in x for x in lines), (repr(sep), p.out)


# Characters JSON allows raw that a reader takes for a line break (str.splitlines, a terminal,
# JavaScript before ES2019) or a terminal runs (U+009B is CSI) or that reorder what is shown.
RAW_UNSAFE = "\u2028\u2029\x85\x9b\u202e\u200b\x7f\ufeff"


def test_every_json_line_is_one_line_for_any_reader(cli, cli_env, tmp_path):
    """`--json` and batch records were dumped with these characters raw: a record read with
    ``str.splitlines`` (or any reader that breaks lines at U+2028 / NEL) came apart into pieces
    that are not JSON, and on a terminal U+009B started an escape sequence."""
    question = f"Where is GH56JK78MN? {RAW_UNSAFE} thanks"
    ask = cli(["ask", "--provider", "offline", "--json", "--ticket", "T-1", question],
              cli_env)
    assert ask.returncode == 0, ask.err
    lines = tmp_path / "q.jsonl"
    lines.write_text(json.dumps({"id": f"id{RAW_UNSAFE}", "question": question}) + "\n"
                     + json.dumps({"id": 2, "question": "Where is ORD-20261234?"}) + "\n")
    out = tmp_path / "out.jsonl"
    batch = cli(["batch", "--provider", "offline", str(lines), "-o", str(out)], cli_env)
    assert batch.returncode == 0, batch.err
    listed = cli(["drafts", "list", "--json"], cli_env)
    logs = cli(["log", "list", "--json"], cli_env)
    for name, text, n in (("ask", ask.out, 1), ("batch", batch.out, 2),
                          ("batch --output", out.read_text(encoding="utf-8"), 2),
                          ("drafts list", listed.out, 1), ("log list", logs.out, 1)):
        assert not any(c in text for c in RAW_UNSAFE), (name, [c for c in RAW_UNSAFE if c in text])
        docs = [json.loads(x) for x in text.splitlines()]
        assert len(docs) == n, (name, len(docs))
    # the values read back exactly as given
    assert json.loads(ask.out)["question"] == question
    assert json.loads(batch.out.splitlines()[0])["id"] == f"id{RAW_UNSAFE}"
    assert any(d["ticket"] == "T-1" and d["question"] == question for d in json.loads(listed.out))


def test_orders_show_keeps_database_text_on_its_line(cli, cli_env, tmp_path):
    """status_detail, product and a line item's name are the shop's free text (untrusted): with
    a CR or U+2028 in them `orders show` printed the rest on a line of its own."""
    import sqlite3

    from agentcli.stores import init_sqlite

    db = tmp_path / "orders.sqlite3"
    init_sqlite(db, 5)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE orders SET status_detail = ?, product = ? WHERE code = 'GH56JK78MN'",
                  (_hostile("\u2028"), _hostile("\r")))
        c.execute("UPDATE order_lines SET name = ? WHERE order_code = 'GH56JK78MN'",
                  (_hostile("\u2029"),))
    p = cli(["orders", "show", "GH56JK78MN", "--db", str(db)], cli_env)
    assert p.returncode == 0, p.err
    lines = p.out.replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n").split("\n")
    assert [x for x in lines if FORGED in x and "evil" not in x] == [], p.out
    assert any(x.startswith("status_detail") and FORGED in x for x in lines), p.out
