"""Where the command line prints: a Rich console made for the stream of the moment.

Made per call, not at import, so a redirected stdout (a pipe, a file, a test runner) is honoured;
off a terminal, lines are not wrapped at 80 columns, so one-line errors stay one line.
"""
from __future__ import annotations

import os
import sys

from rich.console import Console


class _Console:
    def _make(self) -> Console:
        stream = sys.stdout
        width = None if stream.isatty() else int(os.environ.get("COLUMNS", "200"))
        return Console(file=stream, highlight=False, soft_wrap=not stream.isatty(), width=width)

    def print(self, *objects, **kwargs) -> None:
        self._make().print(*objects, **kwargs)


console = _Console()
