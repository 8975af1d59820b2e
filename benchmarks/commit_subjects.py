"""Check that the subjects of new commits are at most 72 characters (CONTRIBUTING.md, Habits).

"New" means every commit reachable from HEAD but not from a base. The default base is
:data:`BASE`, the last commit of main before the check existed, so the 257 longer subjects
already in history never fail CI, while every commit made since (on any branch merged later)
is checked. A CI that knows the branch a change targets narrows the range with
``RLCLI_SUBJECTS_BASE`` (for example ``origin/main``) or ``--base``::

    python benchmarks/commit_subjects.py                  # BASE..HEAD
    python benchmarks/commit_subjects.py --base origin/main

Exit 0 when every subject fits (or there is no git history to read: an exported tree),
1 naming each commit whose subject is too long, 2 when the base is not in this clone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_SUBJECT = 72
BASE = "7b3db9321270f8ca5f2c7363fb70ee4204290425"
"""main before the check: ``Move root modules into packages by role: learning, collectors, play``."""
BASE_VARIABLE = "RLCLI_SUBJECTS_BASE"


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


class BaseMissing(Exception):
    """The base commit is not in this clone (a shallow clone, or a name that does not resolve)."""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


def new_commits(repo: Path, base: str) -> list[Commit]:
    """The commits of ``base..HEAD`` in ``repo``, newest first, each with its subject.

    Raises:
        BaseMissing: ``base`` names no commit of ``repo``.
    """
    if _git(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}").returncode != 0:
        raise BaseMissing(base)
    # %s is the first paragraph of the message joined into one line: a message with no blank line
    # after its first line has that whole paragraph as its subject, as `git log --oneline` shows it.
    out = _git(repo, "log", "--format=%H%x00%s", f"{base}..HEAD").stdout
    return [Commit(*line.split("\0", 1)) for line in out.splitlines() if line]


def too_long(commits: list[Commit], limit: int = MAX_SUBJECT) -> list[Commit]:
    """The commits of ``commits`` whose subject is longer than ``limit`` characters."""
    return [commit for commit in commits if len(commit.subject) > limit]


def main(argv: list[str] | None = None, repo: Path | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base",
        default=os.environ.get(BASE_VARIABLE) or BASE,
        help=f"check the commits of BASE..HEAD (default: ${BASE_VARIABLE}, else {BASE[:10]})",
    )
    args = parser.parse_args(argv)
    repo = repo or Path(__file__).resolve().parent.parent
    if _git(repo, "rev-parse", "--is-inside-work-tree").returncode != 0:
        print(f"commit subjects: {repo} is not a git checkout, no commits to check")
        return 0
    try:
        commits = new_commits(repo, args.base)
    except BaseMissing:
        print(
            f"commit subjects: the base {args.base} is not a commit of this clone (a shallow clone?); "
            f"fetch the history (git fetch --unshallow) or set {BASE_VARIABLE} to the branch the change targets",
            file=sys.stderr,
        )
        return 2
    long = too_long(commits)
    for commit in long:
        print(
            f"{commit.sha[:10]}: subject of {len(commit.subject)} characters (at most {MAX_SUBJECT}): "
            f"{commit.subject[:100]}",
            file=sys.stderr,
        )
    if long:
        print(
            f"commit subjects: {len(long)} of {len(commits)} new commit(s) too long; "
            "CONTRIBUTING.md (Habits) says how a commit is written; `git rebase -i` rewords one",
            file=sys.stderr,
        )
        return 1
    print(f"commit subjects: {len(commits)} new commit(s) since {args.base[:10]}, each at most {MAX_SUBJECT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
