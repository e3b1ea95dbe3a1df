"""Adversarial pass (issues 14, 17): `batch --resume` reads the earlier records from --output;
what sits at that path is not always a file the earlier run wrote."""

from __future__ import annotations

import os
import subprocess

import pytest


def test_resume_from_a_fifo_or_a_device_is_one_line_exit_2(cli_proc, cli_env, tmp_path):
    """Opening a FIFO for reading waited for a writer forever, and SIGTERM (a supervisor's
    `timeout`) could not end it: the interrupted open() is retried. /dev/zero was read as one
    endless line until memory ran out."""
    questions = tmp_path / "q.txt"
    questions.write_text("where is 27WU6KTHA9\n")
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    for target in (fifo, "/dev/zero"):
        try:
            p = cli_proc(["batch", str(questions), "-o", str(target), "--resume"], env, timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail(f"batch --resume -o {target} did not end")
        assert p.returncode == 2, p.err
        assert "not a regular file" in p.err and "Traceback" not in p.err
        assert p.out == ""  # nothing answered: the question was not run blind of its records


def test_resume_skips_an_overlong_line_it_did_not_write(cli, cli_env, tmp_path, monkeypatch):
    from agentcli.batch import engine as batch

    monkeypatch.setattr(batch, "MAX_RECORD_LINE", 4000)
    questions = tmp_path / "q.txt"
    questions.write_text("where is 27WU6KTHA9\n")
    out = tmp_path / "out.jsonl"
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    first = cli(["batch", str(questions), "-o", str(out)], env)
    assert first.returncode == 0, first.err
    with out.open("ab") as f:
        f.write(b'{"junk": "' + b"x" * 10000 + b'"}\n')
    again = cli(["batch", str(questions), "-o", str(out), "--resume"], env)
    assert again.returncode == 0, again.err
    assert again.out == "" and "1 skipped" in again.err


def test_two_batch_runs_never_append_to_one_output_file(tmp_path):
    from agentcli.batch.engine import RecordFile
    from agentcli.errors import UsageError

    out = tmp_path / "out.jsonl"
    first = RecordFile(out)
    try:
        with pytest.raises(UsageError, match="another batch run"):
            RecordFile(out)
    finally:
        first.close()
    RecordFile(out).close()  # free again once the first run is done


def test_log_show_last_skips_a_fifo_named_like_a_newer_session(cli, cli_env, home):
    import os

    assert cli(["ask", "--provider", "offline", "-q", "where is GH56JK78MN?"], cli_env).returncode == 0
    os.mkfifo(home / "sessions" / "29991231-235959-aaaaaaaaaaaa.jsonl")  # sorts newest
    p = cli(["log", "show", "last"], cli_env)
    assert p.returncode == 0, p.err
    assert "where is GH56JK78MN?" in p.out and "29991231" not in p.out + p.err
    q = cli(["log", "list", "--json"], cli_env)
    assert q.returncode == 0 and "29991231" not in q.out


def test_a_line_refused_for_its_id_says_why_not_that_a_number_it_never_wrote_is_taken(
        cli, cli_env, tmp_path):
    """A line without an id (its line number stands in) or with an id of the wrong type, whose
    line number an earlier line used as an id, was refused with "the id 2 is already used by an
    earlier line": an id the person never wrote, and the real reason (a list as id) hidden."""
    import json

    lines = tmp_path / "q.jsonl"
    lines.write_text("\n".join(json.dumps(x) for x in (
        {"id": 2, "question": "Where is GH56JK78MN?"},
        {"question": "Where is ORD-20261234?"},          # line 2: no id
        {"id": 1, "question": "Where is GH56JK78MN?"},
        {"id": ["x"], "question": "Where is GH56JK78MN?"},  # line 4: no valid id
        {"id": 4, "question": "Where is GH56JK78MN?"},
        {"id": 2, "question": "again"},                    # a real duplicate
    )) + "\n")
    p = cli(["batch", "--provider", "offline", str(lines)], cli_env)
    assert p.returncode == 1, p.err
    recs = [json.loads(x) for x in p.out.splitlines()]
    errors = {i: r["error"] for i, r in enumerate(recs, 1) if r["status"] == "error"}
    assert "line 2 has no id" in errors[2] and "already used" not in errors[2], errors[2]
    assert '"id" must be a non-empty string or an integer' in errors[4], errors[4]
    assert "the id 2 is already used" in errors[6]
    assert recs[0]["status"] == recs[2]["status"] == "ok"


def test_a_blank_id_is_an_error_record_as_a_blank_ticket_is_a_usage_error(cli, cli_env, tmp_path):
    """A line whose id is only spaces was taken, and its drafts filed under a ticket of
    spaces, while ``--ticket '   '`` is exit 2."""
    import json

    lines = tmp_path / "q.jsonl"
    lines.write_text("\n".join(json.dumps(x) for x in (
        {"id": "   ", "question": "Where is GH56JK78MN?"},
        {"id": "\t", "question": "Where is GH56JK78MN?"},
        {"id": "T-1", "question": "Where is ORD-20261234?"},
    )) + "\n")
    p = cli(["batch", "--provider", "offline", str(lines)], cli_env)
    assert p.returncode == 1, p.err
    recs = [json.loads(x) for x in p.out.splitlines()]
    assert [r["status"] for r in recs] == ["error", "error", "ok"]
    for r in recs[:2]:
        assert '"id" must be a non-empty string or an integer' in r["error"]
        assert r["drafts"] == [] and r["tool_calls"] == []
    assert cli(["ask", "--provider", "offline", "--ticket", "   ", "x"], cli_env).returncode == 2
