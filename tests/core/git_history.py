"""The same commit history built in a throwaway git repository, to compare with what git draws."""
from __future__ import annotations

import os
import subprocess
import tempfile

_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": tempfile.gettempdir()}


def git_log_graph(commits: list[tuple[str, str, list[str]]], branches: dict[str, str], *args: str) -> list[str]:
    """`git log --graph --format=%s ARGS` over `commits` ((key, message, parent keys), oldest first, each a
    minute after the one before) with `branches` (name -> key); lines without trailing blanks."""
    with tempfile.TemporaryDirectory() as repo:
        env = {**os.environ, **_ENV}

        def git(*command: str, stdin: str = "", moment: int = 0) -> str:
            stamp = {"GIT_AUTHOR_DATE": f"{1_700_000_000 + 60 * moment} +0000",
                     "GIT_COMMITTER_DATE": f"{1_700_000_000 + 60 * moment} +0000"}
            return subprocess.run(["git", "-C", repo, *command], input=stdin, capture_output=True, text=True,
                                  check=True, env={**env, **stamp}).stdout.strip()

        git("init", "-q")
        tree = git("mktree")
        ids: dict[str, str] = {}
        for moment, (key, message, parents) in enumerate(commits):
            parent_args = [a for p in parents for a in ("-p", ids[p])]
            ids[key] = git("commit-tree", tree, "-m", message, *parent_args, moment=moment)
        for name, key in branches.items():
            git("update-ref", f"refs/heads/{name}", ids[key])
        out = git("log", "--graph", "--format=%s", *args)
        return [line.rstrip() for line in out.splitlines()]
