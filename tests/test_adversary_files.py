"""Adversarial pass over hostile files in the drafts folder: whatever `drafts list` names, the
other commands name the same way."""

from __future__ import annotations

import json
import os
import sys


def test_a_dangling_or_looping_link_named_like_a_draft_is_damaged_everywhere(cli, cli_env,
                                                                             drafts_dir):
    """`drafts list` listed a dangling link (or a link to itself) as damaged; `drafts show`,
    `approve` and `reject` of that id said "no draft d-… in the folder" (the id check followed
    the link), so the person was told two different things about one file."""
    drafts_dir.mkdir(parents=True)
    (drafts_dir / "d-00000000000a.md").symlink_to(drafts_dir / "gone.md")
    loop = drafts_dir / "d-00000000000b.md"
    loop.symlink_to(loop)
    listed = cli(["drafts", "list"], cli_env)
    assert listed.returncode == 0, listed.err
    for did in ("d-00000000000a", "d-00000000000b"):
        assert f"{did}\tdamaged" in listed.out
        for args in (["drafts", "show", did], ["drafts", "show", did, "--json"],
                     ["drafts", "approve", did], ["drafts", "reject", did, "--reason", "x"]):
            p = cli(args, cli_env)
            assert p.returncode == 2, (args, p.err)
            assert "damaged" in p.err and "symbolic link" in p.err, (args, p.err)
            assert "no draft" not in p.err and len(p.err.strip().splitlines()) == 1, (args, p.err)
        assert os.path.islink(drafts_dir / f"{did}.md")  # left alone


LATIN1 = "Hallo Jürgen, das Café hat geöffnet.\n".encode("latin-1")


def _ask(cli, env, ticket):
    p = cli(["ask", "--provider", "offline", "--json", "--ticket", ticket,
             "where is GH56JK78MN?"], env)
    assert p.returncode == 0, p.err
    return json.loads(p.out)["drafts"][0]["id"]


def test_a_draft_saved_by_hand_in_latin_1_is_damaged_not_approved_and_pushed(cli, cli_env,
                                                                            drafts_dir):
    """An editor that saved a draft file as Latin-1: the file was read as text with the bytes
    kept as lone surrogates, so it was approved, `drafts export` wrote a helpdesk note body
    "J\\udcfcrgen" (garbage, or a request the helpdesk refuses), and `drafts show --text`
    printed "J\\udcfcrgen" instead of the text. It is damaged now: listed, never approved."""
    did = _ask(cli, cli_env, "T-8841")
    path = drafts_dir / f"{did}.md"
    raw = path.read_bytes()
    head, sep, _ = raw.partition(b"\n---\n")
    path.write_bytes(head + sep + LATIN1)
    listed = cli(["drafts", "list"], cli_env)
    assert listed.returncode == 0, listed.err
    assert f"{did}\tdamaged" in listed.out and "not UTF-8" in listed.out
    for args in (["drafts", "show", did, "--text"], ["drafts", "approve", did, "--force"],
                 ["drafts", "show", did, "--json"]):
        p = cli(args, cli_env)
        assert p.returncode == 2, (args, p.out, p.err)
        assert "not UTF-8" in p.err and len(p.err.strip().splitlines()) == 1, (args, p.err)
    exported = cli(["drafts", "export", "--to", "zendesk", "--status", "approved", "--again"],
                   cli_env)
    assert "Traceback" not in exported.err
    assert "udcfc" not in exported.out.lower() and "rgen" not in exported.out, exported.out
    assert path.read_bytes().endswith(LATIN1)  # the file is left as it is, for a person to fix


def test_an_edit_saved_in_latin_1_is_refused_and_kept_not_stored_with_replacement_marks(
        cli, cli_env, drafts_dir, home, tmp_path):
    """`drafts edit` read the editor's file back with every non-UTF-8 byte turned into U+FFFD:
    "Jürgen" saved by a Latin-1 editor was stored as "J\\ufffdrgen", exit 0, "edited"."""
    did = _ask(cli, cli_env, "T-8842")
    before = (drafts_dir / f"{did}.md").read_bytes()
    script = tmp_path / "latin1_editor.py"
    script.write_text(f"import sys\nopen(sys.argv[1], 'wb').write({LATIN1!r})\n")
    p = cli(["drafts", "edit", did], {**cli_env, "EDITOR": f"{sys.executable} {script}",
                                      "VISUAL": ""})
    assert p.returncode == 2, (p.out, p.err)
    assert "not UTF-8" in p.err.replace("than UTF-8", "not UTF-8") and "Traceback" not in p.err
    assert (drafts_dir / f"{did}.md").read_bytes() == before  # the draft is unchanged
    kept = list((home / "unsaved").glob(f"{did}-*.txt"))
    assert [k.read_bytes() for k in kept] == [LATIN1]  # the person's edit, byte for byte


def test_linked_index_and_claims_folders_are_not_followed_out_of_the_drafts_folder(
        cli, cli_env, drafts_dir, tmp_path):
    """`.lock`, `.index` and `.index-state` were refused as links, but `.tickets` and `.claims`
    were followed: a teammate's link in the shared folder made every ticket's draft ids (and
    every reviewer's claim) land in whatever folder it pointed at."""
    from agentcli.drafts.base import SaveFailed
    from agentcli.drafts.store import DraftStore

    first = _ask(cli, cli_env, "T-9001")
    elsewhere = tmp_path / "someone-elses-folder"
    elsewhere.mkdir()
    for name in (".tickets", ".claims"):
        sub = drafts_dir / name
        if sub.is_dir() and not sub.is_symlink():
            for f in sub.iterdir():
                f.unlink()
            sub.rmdir()
        sub.symlink_to(elsewhere, target_is_directory=True)
    # a new ticket and a second draft of the first one: saved, superseding as before (another
    # order of ana's: a ticket whose live draft is hers takes no other customer's)
    second = _ask(cli, cli_env, "T-9002")
    p = cli(["ask", "--provider", "offline", "--json", "--ticket", "T-9001",
             "where is 4P4NNC7UX6?"], cli_env)
    assert p.returncode == 0, p.err
    third = json.loads(p.out)["drafts"][0]["id"]
    rows = {r["id"]: r["status"] for r in json.loads(
        cli(["drafts", "list", "--json", "--all"], cli_env).out)}
    assert rows == {first: "superseded", second: "pending_review", third: "pending_review"}, rows
    store = DraftStore(drafts_dir)
    try:
        store.claim(second, "ana")
    except SaveFailed as e:
        assert "symbolic link" in str(e)
    else:
        raise AssertionError("a claim was written through the link")
    assert list(elsewhere.iterdir()) == []


def test_damaged_files_stay_listed_after_the_folder_is_indexed(cli, cli_env, drafts_dir):
    """The first save indexes the folder; files that were damaged then were left out of the
    index, and `drafts list` (its first page read from the index alone while no one else had
    touched the folder) no longer showed them at all: a broken draft vanished from the queue."""
    drafts_dir.mkdir(parents=True)
    broken = [drafts_dir / f"d-00000000000{i}.md" for i in range(3)]
    for p in broken:
        p.write_text("---\nid: oops\n")  # unterminated header
    before = cli(["drafts", "list"], cli_env)
    assert all(f"{p.stem}\tdamaged" in before.out for p in broken), before.out
    did = _ask(cli, cli_env, "T-9100")
    for args in (["drafts", "list"], ["drafts", "list", "--all"]):
        after = cli(args, cli_env)
        assert after.returncode == 0, after.err
        assert f"{did}\tpending_review" in after.out
        assert all(f"{p.stem}\tdamaged" in after.out for p in broken), (args, after.out)
    rows = json.loads(cli(["drafts", "list", "--json"], cli_env).out)
    assert {r["id"] for r in rows} >= {p.stem for p in broken} | {did}


def test_a_folder_of_damaged_files_warns_in_a_screenful_not_a_line_each(cli, cli_env, drafts_dir):
    """3,000 damaged files printed 3,000 warning lines on stderr (each is also a row of the
    listing): the warnings are cut at 20 and a line says how many more."""
    drafts_dir.mkdir(parents=True)
    for i in range(60):
        (drafts_dir / f"d-{i:012x}.md").write_text("garbage")
    p = cli(["drafts", "list"], cli_env)
    assert p.returncode == 0, p.err
    warnings = p.err.strip().splitlines()
    assert len(warnings) == 21 and warnings[-1].endswith("… and 40 more like these"), warnings
    assert p.out.count("\tdamaged\t") == 60  # every one is still listed
