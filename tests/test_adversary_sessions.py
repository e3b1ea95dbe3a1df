"""Adversarial pass (issue 14 §6 for the sessions folder): only regular files are read as
session logs, line by line with a bound, so `log list`, `log show` and provenance never hang on a
FIFO or read `/dev/zero` until memory runs out."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from agentcli.sessions import log as sessions


def test_log_list_and_show_never_block_on_a_fifo_or_dev_zero(cli_proc, cli_env, home):
    sdir = home / "sessions"
    sdir.mkdir(parents=True)
    good = sdir / "20261130-120000-0123456789ab.jsonl"
    good.write_text(json.dumps({"type": "session_start", "session_id": good.stem}) + "\n")
    os.mkfifo(sdir / "20991231-000000-aaaaaaaaaaaa.jsonl")  # named like the newest log
    (sdir / "20991231-000000-bbbbbbbbbbbb.jsonl").symlink_to("/dev/zero")
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    try:  # before the fix, each of these blocked forever (FIFO) or read until memory ran out
        listed = cli_proc(["log", "list"], env, timeout=20)
        shown = cli_proc(["log", "show", "20991231-000000-aaaaaaaaaaaa"], env, timeout=20)
        zero = cli_proc(["log", "show", "20991231-000000-bbbbbbbbbbbb"], env, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("a FIFO or /dev/zero in the sessions folder blocked `agentcli log`")
    assert listed.returncode == 0, listed.err
    assert good.stem in listed.out
    assert "not a regular file" in listed.err and "Traceback" not in listed.err
    for p in (shown, zero):
        assert p.returncode == 2, p.err
        assert "not a regular file" in p.err and "Traceback" not in p.err


def test_an_overlong_line_is_skipped_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(sessions, "MAX_LINE_BYTES", 64)
    path = tmp_path / "s.jsonl"
    long_event = json.dumps({"type": "model_response", "text": "x" * 500})
    path.write_text("\n".join([json.dumps({"type": "a"}), long_event, json.dumps({"type": "b"})]) + "\n")
    warnings: list[str] = []
    events = list(sessions.read_events(path, warnings))
    assert [e["type"] for e in events] == ["a", "b"]
    assert warnings == ["s.jsonl: line 2 is too long and was skipped"]
