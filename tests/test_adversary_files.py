"""Adversarial pass over hostile files in the drafts folder: whatever `drafts list` names, the
other commands name the same way."""

from __future__ import annotations

import os


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
