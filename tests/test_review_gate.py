"""The review gate a tired reviewer can trust (issue 25, items 1 and 3-7): an action applies to
the text the person saw, error-level drafts are never approved by one key or a filter, findings
belong to a text, a failed save says why and keeps the text, one drafts folder per team, doctor
runs every check, the REPL's prompt at once.

Real parts: draft files written by ``DraftStore`` and by real runs, real editors (small Python
scripts given as $EDITOR, one blocking in a real second process while a teammate acts), real
locks held by a real second process, a real full and a real read-only file system (tmpfs, where
this machine lets root mount one), two real Unix users in a team folder (as root).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from agentcli.drafts.store import DraftStore
from agentcli.sessions.log import read_events

from .conftest import agentcli_exe, run_in_process
from .test_team_folder import team  # noqa: F401 - the two-user fixture

# A long file (held locks waited for): started among the first (tests/conftest.py).
pytestmark = pytest.mark.long

GUARD_S = 20  # a hang guard only
PROMISE = "Hello Ana,\n\nyour order ORD-20261234 has shipped. We will refund you in full within 3 days."
LOOKUP = {"input": {"order_code": "ORD-20261234"}, "is_error": False,
          "result": {"found": True, "order_code": "ORD-20261234", "status": "shipped",
                     "estimated_delivery": "2026-12-03"}}


def _draft(drafts_dir, text=PROMISE, ticket="T-1"):
    store = DraftStore(drafts_dir)
    d, _ = store.save(text=text, ticket=ticket, order_code="ORD-20261234",
                      questions=["Where is ORD-20261234?"], lookups=[LOOKUP])
    return store, d


def _json(p):
    assert p.returncode == 0, p.err
    return json.loads(p.out)


def editor(tmp_path, name, body):
    """An $EDITOR: a Python script run on the temporary copy of the draft's text."""
    script = tmp_path / f"{name}.py"
    script.write_text("import os, sys, time\npath = sys.argv[1]\ntext = open(path).read()\n" + body)
    return f"{sys.executable} {script}"


def waiting_editor(tmp_path, new_text):
    """An editor that says it is open (``started``), waits for ``go``, then saves ``new_text``."""
    started, go = tmp_path / "started", tmp_path / "go"
    ed = editor(tmp_path, "slow", f"open({str(started)!r}, 'w').close()\n"
                f"end = time.monotonic() + {GUARD_S}\n"
                f"while not os.path.exists({str(go)!r}) and time.monotonic() < end:\n"
                "    time.sleep(0.02)\n"
                f"open(path, 'w').write({new_text!r})\n")
    return ed, started, go


def _wait_for(path: Path) -> None:
    end = time.monotonic() + GUARD_S
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.02)


# =========================================================================== versions

def test_approve_carries_the_version_shown_and_refuses_a_changed_draft(cli, cli_env, drafts_dir):
    store, d = _draft(drafts_dir, text="Your order ORD-20261234 has shipped.")
    shown = _json(cli(["drafts", "show", d.id, "--json"], cli_env))
    assert shown["version"] == d.version and f"version {d.version}" in cli(
        ["drafts", "show", d.id], cli_env).out
    # a teammate edits it after it was shown
    store.set_text(d.id, "We will refund you in full today.", reviewer="lee")
    p = cli(["drafts", "approve", d.id, "--version", shown["version"], "--force"], cli_env)
    assert p.returncode == 2 and "changed since it was shown" in p.err, p.err
    assert "lee edited the text" in p.err and "nothing was changed" in p.err
    assert store.get(d.id).meta["status"] == "pending_review"
    p = cli(["drafts", "reject", d.id, "--version", shown["version"], "--reason", "x"], cli_env)
    assert p.returncode == 2 and store.get(d.id).meta["status"] == "pending_review"
    # the version it is at now is accepted
    now = store.get(d.id).version
    p = cli(["drafts", "reject", d.id, "--version", now, "--reason", "promises a refund"], cli_env)
    assert p.returncode == 0, p.err
    assert store.get(d.id).meta["status"] == "rejected"
    # a teammate did the very same meanwhile: not an error, nothing changes twice
    p = cli(["drafts", "reject", d.id, "--version", now, "--reason", "again"], cli_env)
    assert p.returncode == 0 and "already rejected" in p.err
    for bad in (["--version", "zz"], ["--version", now, d.id]):
        p = cli(["drafts", "approve", d.id, *bad], cli_env)
        assert p.returncode == 2 and "--version" in p.err and "Traceback" not in p.err


def test_two_edits_at_once_never_drop_either(cli, cli_env, drafts_dir, tmp_path, home):
    store, d = _draft(drafts_dir, text="Your order has shipped.")
    slow, started, go = waiting_editor(tmp_path, "Mine: your order has shipped today.")
    first = subprocess.Popen([agentcli_exe(), "drafts", "edit", d.id],
                             env={**cli_env, "EDITOR": slow, "VISUAL": "", "USER": "ana"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        _wait_for(started)  # her editor is open
        quick = editor(tmp_path, "quick", "open(path, 'w').write('Theirs: it arrives tomorrow.')\n")
        p = cli(["drafts", "edit", d.id], {**cli_env, "EDITOR": quick, "VISUAL": "", "USER": "lee"})
        assert p.returncode == 0, p.err
        go.touch()
        out, err = first.communicate(timeout=GUARD_S * 2)
    finally:
        first.kill()
    out, err = out.decode(), err.decode()
    assert first.returncode == 2, (out, err)
    assert "changed since it was shown" in err and "lee edited the text" in err
    assert store.get(d.id).text == "Theirs: it arrives tomorrow."  # the other edit is kept
    assert "Mine: your order has shipped today." in out  # hers is shown ...
    (aside,) = (home / "unsaved").glob(f"{d.id}-*.txt")  # ... and kept
    assert aside.read_text() == "Mine: your order has shipped today."
    assert str(aside) in err and oct(aside.stat().st_mode & 0o777) == "0o600"


def test_an_editor_open_while_a_teammate_approves_says_so(cli, cli_env, drafts_dir, tmp_path):
    store, d = _draft(drafts_dir, text="Your order has shipped.")
    slow, started, go = waiting_editor(tmp_path, "Edited after all.")
    first = subprocess.Popen([agentcli_exe(), "drafts", "edit", d.id],
                             env={**cli_env, "EDITOR": slow, "VISUAL": ""}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        _wait_for(started)
        store.set_status(d.id, "approved", reviewer="kim")
        go.touch()
        out, err = first.communicate(timeout=GUARD_S * 2)
    finally:
        first.kill()
    assert first.returncode == 2
    assert "kim approved it" in err.decode()
    d2 = store.get(d.id)
    assert d2.meta["status"] == "approved" and d2.text == "Your order has shipped."


@pytest.mark.parametrize("change", ["text + '\\n'", "text + '  \\n\\n'",
                                    "text.replace('shipped.', 'shipped.   ')"])
def test_an_unchanged_save_is_no_edit(cli, cli_env, drafts_dir, tmp_path, change):
    store, d = _draft(drafts_dir, text="Hello,\n\nyour order has shipped.")
    store.set_status(d.id, "approved", reviewer="kim")
    before = d.path.read_bytes()
    ed = editor(tmp_path, "vim", f"open(path, 'w').write({change})\n")
    p = cli(["drafts", "edit", d.id], {**cli_env, "EDITOR": ed, "VISUAL": ""})
    assert p.returncode == 0 and "no change" in p.out and "nothing recorded" in p.out
    assert d.path.read_bytes() == before  # nothing written, nothing recorded
    # the same by hand in the file (vim's :wq adds the final newline): still approved, no edit
    d.path.write_text(d.path.read_text() + "\n")
    rec = _json(cli(["drafts", "show", d.id, "--json"], cli_env))
    assert rec["status"] == "approved" and rec["edited"] is False and not rec["edited_after_approval"]
    assert [h["to"] for h in rec["history"]] == ["approved"]
    assert "keeps its hand edit" not in cli(["drafts", "approve", d.id], cli_env).out


# =========================================================================== findings

def test_findings_are_checked_again_when_the_text_changes(cli, cli_env, drafts_dir, tmp_path):
    store, d = _draft(drafts_dir)
    rec = _json(cli(["drafts", "show", d.id, "--json"], cli_env))
    assert [f["kind"] for f in rec["findings"] if f["severity"] == "error"] == ["forbidden_promise"]
    assert rec["findings_current"] is True
    p = cli(["drafts", "approve", "--ticket", "T-1", "--yes"], cli_env)
    assert "left pending" in p.err and store.get(d.id).meta["status"] == "pending_review"
    # the promise edited out: checked again, no longer flagged, a bulk approval takes it
    ed = editor(tmp_path, "fix", "open(path, 'w').write(text.replace(' We will refund you in full "
                                 "within 3 days.', ' A colleague will look into the refund.'))\n")
    p = cli(["drafts", "edit", d.id], {**cli_env, "EDITOR": ed, "VISUAL": ""})
    assert p.returncode == 0, p.err
    assert "grounding checks run again" in p.out and "forbidden_promise" not in p.out
    rec = _json(cli(["drafts", "show", d.id, "--json"], cli_env))
    assert not [f for f in rec["findings"] if f["severity"] == "error"] and rec["findings_current"]
    assert "grounding checks run again for the edited text" in rec["history"][-1]["reason"]
    assert "forbidden_promise" not in cli(["drafts", "show", d.id], cli_env).out
    p = cli(["drafts", "approve", "--ticket", "T-1", "--yes"], cli_env)
    assert p.returncode == 0 and store.get(d.id).meta["status"] == "approved"


def test_a_hand_edit_that_adds_a_promise_is_flagged_before_anyone_approves(cli, cli_env, drafts_dir):
    store, d = _draft(drafts_dir, text="Your order ORD-20261234 has shipped.", ticket="T-2")
    assert cli(["drafts", "show", d.id], cli_env).returncode == 0  # checked: nothing to flag
    assert store.get(d.id).errors == [] and store.get(d.id).findings_current
    d.path.write_text(d.path.read_text().replace("has shipped.", "has shipped. We will refund "
                                                 "you in full."))
    listed = _json(cli(["drafts", "list", "--json", "--flagged"], cli_env))
    assert [r["id"] for r in listed] == [d.id]  # the edited text is checked on the way
    p = cli(["drafts", "approve", "--status", "pending", "--yes"], cli_env)
    assert p.returncode == 1 and f"{d.id} left pending" in p.err  # a human must look
    p = cli(["drafts", "approve", d.id], cli_env)  # by id from a script: --force or a terminal
    assert p.returncode == 2 and "forbidden_promise" in p.err and "--force" in p.err
    assert store.get(d.id).meta["status"] == "pending_review"


# ======================================================== hand edits of the header
# The folder is hostile ground: a header line edited by hand (sed over the whole file, a line
# deleted) must not turn a flagged or unreviewed draft into an approved one.

def _exported(cli, cli_env) -> str:
    p = cli(["drafts", "export", "--to", "zendesk"], cli_env)
    assert "Traceback" not in p.err
    return p.out


def test_sed_over_an_approved_file_changes_its_approved_text_too_and_still_reopens_it(
        cli, cli_env, drafts_dir):
    store, d = _draft(drafts_dir, text="Hello,\n\nyour order ORD-20261234 has shipped. A colleague checks it.")
    store.set_status(d.id, "approved", reviewer="kim")
    raw = d.path.read_text()
    assert raw.count("A colleague checks it.") == 2  # the reply and approved_text
    d.path.write_text(raw.replace("A colleague checks it.", "We will refund you in full within 3 days."))
    rec = _json(cli(["drafts", "show", d.id, "--json"], cli_env))
    assert rec["status"] == "pending_review" and rec["edited_after_approval"] is True
    assert "refund" not in _exported(cli, cli_env)
    p = cli(["drafts", "approve", "--ticket", "T-1", "--yes"], cli_env)
    assert p.returncode == 1 and "forbidden_promise" in p.err
    assert store.get(d.id).meta["status"] == "pending_review"


@pytest.mark.parametrize("edit", ["delete", "empty"])
def test_a_findings_line_deleted_by_hand_does_not_make_a_flagged_draft_approvable(
        cli, cli_env, drafts_dir, edit):
    store, d = _draft(drafts_dir)
    assert cli(["drafts", "show", d.id], cli_env).returncode == 0  # its findings stored
    assert [f["kind"] for f in store.get(d.id).errors] == ["forbidden_promise"]
    lines = d.path.read_text().split("\n")
    (i,) = [n for n, ln in enumerate(lines) if ln.startswith("findings: ")]
    if edit == "delete":
        del lines[i]
    else:
        lines[i] = "findings: []"
    d.path.write_text("\n".join(lines))
    p = cli(["drafts", "approve", "--ticket", "T-1", "--yes", "--force"], cli_env)
    assert p.returncode == 1 and f"{d.id} left pending" in p.err and "forbidden_promise" in p.err
    assert store.get(d.id).meta["status"] == "pending_review"
    assert [f["kind"] for f in store.get(d.id).errors] == ["forbidden_promise"]  # stored again
    p = cli(["drafts", "approve", d.id], cli_env)  # by id from a script: still --force or a terminal
    assert p.returncode == 2 and "forbidden_promise" in p.err


@pytest.mark.parametrize("how", ["status", "dropped"])
def test_a_file_that_says_approved_with_no_approval_on_record_is_pending(cli, cli_env, drafts_dir, how):
    store, d = _draft(drafts_dir)
    raw = d.path.read_text()
    if how == "status":  # the status line edited by hand
        d.path.write_text(raw.replace('status: "pending_review"', 'status: "approved"'))
    else:  # a file put into the folder, as a current one looks, saying approved
        other = drafts_dir / "d-0123456789ab.md"
        other.write_text(raw.replace(d.id, "d-0123456789ab").replace('status: "pending_review"',
                                                                      'status: "approved"'))
        d.path.unlink()
        d = store.get("d-0123456789ab")
    assert "never approved" in cli(["drafts", "show", d.id], cli_env).out
    rec = _json(cli(["drafts", "show", d.id, "--json"], cli_env))
    assert rec["status"] == "pending_review", rec["status"]
    assert "refund" not in _exported(cli, cli_env)
    assert cli(["drafts", "reject", d.id, "--reason", "no"], cli_env).returncode == 0
    hist = store.get(d.id).meta["history"]
    assert "no approval is on record" in hist[0]["reason"] and hist[-1]["to"] == "rejected"


def test_approving_an_error_level_draft_by_id_on_a_terminal_asks_first(cli_env, drafts_dir):
    pexpect = pytest.importorskip("pexpect")
    store, d = _draft(drafts_dir)
    for answer, status in (("n", "pending_review"), ("y", "approved")):
        child = pexpect.spawn(agentcli_exe(), ["drafts", "approve", d.id],
                              env={**cli_env, "COLUMNS": "80", "LINES": "24"}, encoding="utf-8",
                              timeout=GUARD_S, dimensions=(24, 80))
        try:
            child.expect_exact("forbidden_promise")
            child.expect_exact("anyway? [y/N]")
            child.sendline(answer)
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert store.get(d.id).meta["status"] == status


# =========================================================================== saves that fail

def _hold_lock(folder: Path, seconds: float) -> subprocess.Popen:
    """A real second agentcli process holding the folder's lock (as a slow save would)."""
    code = ("import sys, time\nsys.argv = ['agentcli', 'drafts', 'edit']\n"
            "from agentcli.drafts.store import DraftStore\n"
            f"with DraftStore({str(folder)!r})._locked():\n"
            "    print('held', flush=True)\n"
            f"    time.sleep({seconds})\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"held\n"
    return p


def test_a_held_lock_is_waited_for_and_names_its_holder(cli, cli_env, drafts_dir):
    store, d = _draft(drafts_dir, text="Your order has shipped.")
    holder = _hold_lock(drafts_dir, 1.5)
    try:
        p = cli(["drafts", "reject", d.id, "--reason", "late"], cli_env)
    finally:
        holder.wait(timeout=GUARD_S)
    assert p.returncode == 0, p.err
    assert f"waiting for the drafts folder's lock, held by pid {holder.pid}" in p.err
    assert "agentcli drafts edit" in p.err
    assert store.get(d.id).meta["status"] == "rejected"
    assert (drafts_dir / ".lock").read_bytes() == b""  # released: it names nobody now


@pytest.mark.slow
def test_a_save_under_a_lock_held_too_long_says_by_whom_and_shows_the_reply(cli, cli_env, drafts_dir,
                                                                            monkeypatch):
    import agentcli.drafts.store as drafts_store

    # The lock wait's bound (store.LOCK_TIMEOUT, 10 s), shortened for this process: the command
    # runs in it. Still past LOCK_NOTICE_AFTER, so the wait is said before it gives up; the
    # holder outlives it (held for the hang guard, killed once the command has returned).
    monkeypatch.setattr(drafts_store, "LOCK_TIMEOUT", 1.0)
    assert drafts_store.LOCK_TIMEOUT > drafts_store.LOCK_NOTICE_AFTER
    drafts_dir.mkdir()
    holder = _hold_lock(drafts_dir, GUARD_S)
    try:
        p = cli(["ask", "--provider", "offline", "where is GH56JK78MN"], cli_env)
    finally:
        holder.kill()
    assert p.returncode == 1
    assert f"stayed locked by pid {holder.pid}" in p.err and "not writable" not in p.err
    assert "waiting for the drafts folder's lock" in p.err  # said while it waited
    assert "the reply that was not saved" in p.err and "GH56JK78MN is waiting" in p.err


@pytest.fixture
def request_cleanup():
    made: list[Path] = []
    yield made.append
    for p in made:
        shutil.rmtree(p, ignore_errors=True)


@pytest.fixture
def tiny_fs(tmp_path):
    """A real 64 KiB file system (tmpfs), where root may mount one; else the test skips."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(mnt)],
                       capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.decode().strip()[:80]})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_full_disk_and_a_read_only_folder_are_named_and_the_reply_kept(cli, cli_env, tiny_fs, home):
    folder = tiny_fs / "drafts"
    folder.mkdir()
    filler = tiny_fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)  # fill the disk ...
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    os.truncate(filler, max(0, filler.stat().st_size - 4096))  # ... but one page: the check passes
    env = {**cli_env, "AGENTCLI_DRAFTS_DIR": str(folder)}
    question = "where is GH56JK78MN? " + "Please tell me everything. " * 200  # a draft of 2+ pages
    r = _json_or(cli(["ask", "--provider", "offline", "--json", question], env), 1)  # no draft: not ok
    (call,) = [c for c in r["tool_calls"] if c["name"] == "draft_reply"]
    assert call["is_error"] and "is full" in call["result"], call
    assert "not writable" not in call["result"] and r["status"] == "incomplete"
    logged = [e for e in read_events(home / "sessions" / f"{r['session_id']}.jsonl")
              if e.get("type") == "tool_result" and e.get("name") == "draft_reply"]
    assert logged[0]["input"]["text"] == call["input"]["text"]  # the reply is in the session log
    p = cli(["ask", "--provider", "offline", question], env)
    assert "the reply that was not saved" in p.err and "GH56JK78MN" in p.err  # and on screen
    os.unlink(filler)
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_fs)], check=True)
    p = cli(["ask", "--provider", "offline", "where is GH56JK78MN"], env)
    assert p.returncode == 3 and "read-only file system" in p.err  # said before anything is spent
    p = cli(["doctor", "--provider", "offline", "--json"], env)
    bad = {c["name"]: c["detail"] for c in json.loads(p.out)["checks"] if not c["ok"]}
    assert "read-only file system" in " ".join(bad.values()), bad


def _json_or(p, code: int = 0):
    """The --json result of a finished run that exits with ``code``."""
    assert p.returncode == code, (p.returncode, p.err)
    return json.loads(p.out)


def test_a_root_owned_lock_in_a_team_folder_fails_doctor_and_says_why(team, cli_env, demo_db,  # noqa: F811
                                                                       request_cleanup):
    from .test_team_folder import USERS, as_user

    gid, users = team
    base = Path(tempfile.mkdtemp(prefix="agentcli-lock-"))  # a place both users may enter
    request_cleanup(base)
    os.chmod(base, 0o755)
    folder = base / "drafts"
    folder.mkdir()
    os.chown(folder, 0, gid)
    os.chmod(folder, 0o2770)
    lock = folder / ".lock"
    lock.write_bytes(b"")
    os.chmod(lock, 0o600)  # root's, owner-only: nobody else can open it
    home = base / "home-a"
    home.mkdir()
    os.chown(home, users[USERS[0]].pw_uid, gid)
    db = base / "orders.sqlite3"
    shutil.copy(demo_db, db)
    os.chmod(db, 0o644)
    env = {**cli_env, "AGENTCLI_HOME": str(home), "AGENTCLI_DRAFTS_DIR": str(folder),
           "AGENTCLI_DB": str(db), "AGENTCLI_PROVIDER": "offline", "HOME": str(base)}
    for args in (["doctor", "--json"], ["ask", "--json", "where is GH56JK78MN"]):  # warm-up as root
        run_in_process(args, {**env, "AGENTCLI_DRAFTS_DIR": str(base / "warm"),
                              "AGENTCLI_HOME": str(base / "home-root")})
    code, out, err = as_user(users[USERS[0]], gid, ["doctor", "--json"], env)
    assert code == 3 and out, (code, out, err)
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert not checks["drafts lock"]["ok"]
    assert "owned by root, mode 0600" in checks["drafts lock"]["detail"]
    assert checks["sessions folder"]["ok"] and checks["database"]["ok"]  # every check ran
    # a run stops before spending anything, saying why in one line
    code, out, err = as_user(users[USERS[0]], gid, ["ask", "--json", "where is GH56JK78MN"], env)
    assert code == 3 and len(err.splitlines()) == 1, (code, out, err)
    assert "cannot be opened by agentcli-a" in err and "owned by root, mode 0600" in err
    r = json.loads(out)  # --json: the spec's object, saying the question never ran and why
    assert r["status"] == "error" and "owned by root, mode 0600" in r["error"] and r["turns"] == 0


# =========================================================================== one folder

def test_one_drafts_folder_whatever_the_working_directory(cli, cli_env, tmp_path, home):
    env = {k: v for k, v in cli_env.items() if k != "AGENTCLI_DRAFTS_DIR"}
    for cwd in (tmp_path / "a", tmp_path / "b" / "c"):
        cwd.mkdir(parents=True)
        r = _json_or(cli(["ask", "--provider", "offline", "--json", f"where is GH56JK78MN ({cwd.name})"],
                         env, cwd=cwd))
        assert Path(r["drafts"][0]["path"]).parent == home / "drafts"
    assert not list((tmp_path / "a").glob("**/d-*.md")) and not list((tmp_path / "b").glob("**/d-*.md"))
    # a team's agentcli.toml, found from a folder below it; its relative folder is its own
    shared = tmp_path / "team"
    (shared / "work" / "deep").mkdir(parents=True)
    (shared / "shared-drafts").mkdir()
    (shared / "agentcli.toml").write_text('drafts_dir = "shared-drafts"\n')
    r = _json_or(cli(["ask", "--provider", "offline", "--json", "where is GH56JK78MN"], env,
                     cwd=shared / "work" / "deep"))
    assert Path(r["drafts"][0]["path"]).parent == shared / "shared-drafts"
    p = cli(["doctor", "--provider", "offline"], env, cwd=shared / "work")
    assert f"config file: {shared / 'agentcli.toml'}" in p.out
    assert f"drafts_dir in {shared / 'agentcli.toml'}" in p.out
    # ... but not across a repository root
    (shared / "work" / ".git").mkdir()
    p = cli(["doctor", "--provider", "offline", "--json"], env, cwd=shared / "work" / "deep")
    assert "config file" in p.out and str(shared / "agentcli.toml") not in p.out


def test_a_mistyped_folder_is_never_created_and_hints_name_the_folder_used(cli, cli_env, tmp_path):
    typo = tmp_path / "srv" / "suport" / "drafts"
    p = cli(["ask", "--provider", "offline", "--drafts-dir", str(typo), "where is GH56JK78MN"], cli_env)
    assert p.returncode == 3 and "neither does" in p.err and not typo.parent.exists()
    p = cli(["drafts", "list", "--drafts-dir", "drafts"], cli_env, cwd=tmp_path)
    assert p.returncode == 3 and str(tmp_path / "drafts") in p.err  # the folder really looked at


# =========================================================================== doctor, config

def test_doctor_runs_every_check_with_an_empty_key_and_a_typo(cli, cli_env, tmp_path):
    (tmp_path / "agentcli.toml").write_text('reviewr = "sam"\nmax_turn = 3\n')
    p = cli(["doctor"], {**cli_env, "ANTHROPIC_API_KEY": ""}, cwd=tmp_path)
    assert p.returncode == 3
    for name in ("config file", "drafts folder", "sessions folder", "database", "provider key",
                 "provider"):
        assert f" {name}: " in p.out, (name, p.out)
    assert "set but empty" in p.out
    assert f"config file: {tmp_path / 'agentcli.toml'}" in p.out
    assert p.err.count("unknown setting 'reviewr'") == 1 and "did you mean reviewer?" in p.err
    assert p.err.count("unknown setting 'max_turn'") == 1 and "did you mean max_turns?" in p.err


# =========================================================================== the REPL

def test_the_goodbye_names_a_real_command_and_each_drafts_status(cli_env, drafts_dir):
    from rich.console import Console

    from agentcli.app import App
    from agentcli.cli.repl import Repl
    from agentcli.config import resolve
    from agentcli.ticket import SavedDraft

    store = DraftStore(drafts_dir)
    first, _ = store.save(text="First reply.", ticket="T-9", order_code="GH56JK78MN")
    second, _ = store.save(text="Second reply.", ticket="T-9", order_code="GH56JK78MN")
    assert store.get(first.id).meta["status"] == "superseded"

    async def go(env_folder: bool):
        app = App.open(resolve(provider="offline"))
        buf = io.StringIO()
        repl = Repl(app, console=Console(file=buf, width=200), interactive=False, ticket="T-9")
        repl.saved_before = [SavedDraft(d.id, str(d.path), "GH56JK78MN", True) for d in (first, second)]
        repl.goodbye()
        await app.aclose()
        return buf.getvalue()

    out = asyncio.run(go(True))
    assert "review them: agentcli review" in out and "drafts review" not in out
    assert "1 superseded by a newer draft, 1 waiting for review" in out
    assert f"{first.id}  superseded" in out and f"{second.id}  pending_review" in out


def test_the_prompt_is_up_before_the_app_is_open_and_keeps_what_was_typed(cli_env):
    """The REPL's first prompt does not wait for the App (the SDK import, the database): it is
    shown while the loader has not finished, and the question typed there is answered once it
    has."""
    from prompt_toolkit.history import InMemoryHistory
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    from rich.console import Console

    from agentcli.app import App
    from agentcli.cli.history import build_session
    from agentcli.cli.repl import AppLoader, Repl
    from agentcli.config import resolve

    release = __import__("threading").Event()

    def opener(settings):  # App.open, once the test lets it: the slow part of a real start
        assert release.wait(GUARD_S)
        return App.open(settings)

    async def go():
        with create_pipe_input() as inp:
            buf = io.StringIO()
            console = Console(file=buf, width=100, color_system=None, force_terminal=False)
            session = build_session(input=inp, output=DummyOutput(), history=InMemoryHistory())
            loader = AppLoader(resolve(provider="offline"), opener)
            repl = Repl(loader, console=console, session=session)
            task = asyncio.create_task(repl.run())
            end = time.monotonic() + GUARD_S
            while not session.app.is_running:
                assert time.monotonic() < end
                await asyncio.sleep(0.01)
            assert not loader.done() and repl.app is None  # the prompt is up, the App is not
            assert "provider  offline" in buf.getvalue()  # the banner drew from the settings
            inp.send_text("where is GH56JK78MN\r")
            await asyncio.sleep(0.2)
            release.set()
            end = time.monotonic() + GUARD_S
            while "GH56JK78MN" not in buf.getvalue().split("› ")[-1] and time.monotonic() < end:
                await asyncio.sleep(0.02)
            inp.send_text("/exit\r")
            code = await asyncio.wait_for(task, GUARD_S)
            await repl.app.aclose()
            return code, buf.getvalue()

    code, out = asyncio.run(go())
    assert code == 0
    assert "pending_payment" in out  # the question typed before the App was open was answered


def test_the_prompt_is_up_while_the_app_opens_and_keys_are_not_echoed_raw(cli_env, tmp_path):
    """A start that takes long (here: a database server that accepts and never answers, as a
    busy network does; with the Anthropic provider, the SDK import): the banner and the prompt
    are up meanwhile, keys typed there are the prompt's (an arrow key never prints ^[[A), and
    the open failing ends the REPL with one line and exit 3."""
    pexpect = pytest.importorskip("pexpect")
    import socket
    import threading

    import pyte

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # accept, then say nothing
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    url = f"postgresql://agent@127.0.0.1:{srv.getsockname()[1]}/shop"
    env = {**cli_env, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "80",
           "LINES": "24", "AGENTCLI_PROVIDER": "offline", "AGENTCLI_DB": url}
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(agentcli_exe(), ["chat"], env=env, cwd=str(tmp_path), timeout=GUARD_S,
                          dimensions=(24, 80))
    screen = pyte.Screen(80, 24)
    stream = pyte.ByteStream(screen)
    try:
        # the prompt, while the database has not answered (it never will; opening gives up when
        # the server goes away, below, or after its 5 s connect timeout, the REPL with it)
        child.expect_exact("›".encode())
        stream.feed(child.before + child.after)
        # the open goes on behind the prompt: its connection arrives (a bound for a hang only;
        # the prompt may well be up before the thread has connected)
        deadline = time.monotonic() + GUARD_S
        while not held and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held and child.isalive(), "the database was being opened behind the prompt"
        child.send("\x1b[Ahello")
        child.expect_exact(b"hello")
        stream.feed(child.before + child.after)
        shown = "\n".join(screen.display)
        assert "^[" not in shown and "› hello" in shown, shown
        # The server goes away (stops listening, drops what it held): the open fails now rather
        # than at its 5 s connect timeout, and the REPL ends with it.
        stop.set()
        acceptor.join(GUARD_S)
        srv.close()
        for c in held:
            c.close()
        child.expect(pexpect.EOF)
        stream.feed(child.before)
    finally:
        stop.set()
        child.close(force=True)
        for c in held:
            c.close()
        srv.close()
    assert child.exitstatus == 3
    assert "cannot connect to the orders database" in "\n".join(screen.display)


def test_the_continue_prompt_takes_one_key(anthropic_env, fake_anthropic):
    from agentcli.testing.fake_anthropic import text

    from .test_repl import LOOKUP, run_keys

    fake_anthropic.queue(LOOKUP(), text("It is waiting for payment."))
    code, screen = run_keys("Where is GH56JK78MN?\ry/exit\r", max_turns=1)  # "y", no Enter
    assert code == 0 and "It is waiting for payment." in screen


# =========================================================================== smaller items

def test_help_texts_say_what_commands_do(cli, cli_env):
    p = cli(["--help"], {**cli_env, "COLUMNS": "160", "_AGENTCLI_TYPER_HELP": "1"})
    for name in ("review", "doctor"):
        line = next(ln for ln in p.out.splitlines() if ln.strip().startswith(name + " "))
        assert ":..." not in line and "..." not in line, line
    for cmd in (["review"], ["doctor"]):
        assert "Examples:" in cli([*cmd, "--help"], cli_env).out
    ev = cli(["eval", "--help"], {**cli_env, "COLUMNS": "200"}).out
    assert "./drafts" not in ev and "temporary folder" in ev
    for cmd in (["ask"], ["chat"], ["drafts", "list"], ["log", "list"], ["review"], ["doctor"],
                ["drafts", "approve"], ["batch"], ["orders", "show"]):
        out = cli([*cmd, "--help"], {**cli_env, "COLUMNS": "200"}).out
        assert "<str>" not in out and "TEXT" not in out.replace("--reason TEXT", ""), (cmd, out)


def test_offline_chosen_is_not_told_to_set_a_key(cli, cli_env):
    p = cli(["ask", "--provider", "offline", "-q", "where is GH56JK78MN"],
            {**cli_env, "ANTHROPIC_API_KEY": "sk-ant-api03-abcdefghijklmnop0123"})
    assert p.returncode == 0 and "offline workflow" in p.err and "set ANTHROPIC_API_KEY" not in p.err
    p = cli(["ask", "-q", "where is GH56JK78MN"], cli_env)  # the default: told how to use a model
    assert "set ANTHROPIC_API_KEY" in p.err


def test_a_turn_limit_of_one_says_one_model_call(cli, anthropic_env, fake_anthropic):
    from .test_repl import LOOKUP

    fake_anthropic.queue(LOOKUP())
    p = cli(["ask", "--max-turns", "1", "--json", "Where is GH56JK78MN?"], anthropic_env)
    assert "after 1 model call (" in json.loads(p.out)["error"]


def test_a_grounding_finding_is_printed_once(cli, anthropic_env, fake_anthropic):
    from agentcli.testing.fake_anthropic import text

    fake_anthropic.queue(text("We will refund you in full today."))
    p = cli(["ask", "--no-repair", "Can I get a refund?"], anthropic_env)  # no repair line either
    assert p.returncode == 1
    assert p.err.count("we will refund") + p.err.count("We will refund") == 1, p.err
    assert "incomplete (grounding): the error-level finding above" in p.err


def test_a_ctrl_c_batch_says_how_many_and_how_to_resume(cli_env, tmp_path):
    import signal

    out_file = tmp_path / "done.jsonl"
    r, w = os.pipe()
    proc = subprocess.Popen([agentcli_exe(), "batch", "--provider", "offline", "-o", str(out_file)],
                            env=cli_env, stdin=r, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(r)
    try:
        os.write(w, b"status of ORD-20261234\n")
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=GUARD_S)
    finally:
        os.close(w)
        proc.kill()
    err = err.decode()
    assert proc.returncode == 130
    assert "batch interrupted after 1 answered (1 ok, 0 incomplete, 0 failed)" in err
    assert f"--resume -o {out_file}" in err
