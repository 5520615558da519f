"""Runs the walkthrough of docs/interactive-merge.md exactly as written: its Python blocks in one
namespace, its `branchspark` lines through the command line, on a real catalog and warehouse."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from dbt.adapters.branchspark.cli.main import cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "interactive-merge.md"
BLOCK = re.compile(r"<!-- walkthrough -->\n```(python|sh)\n(.*?)```", re.S)


def walkthrough_blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(DOC.read_text())


def test_the_documented_walkthrough_runs(spark, warehouse, lh):
    blocks = walkthrough_blocks()
    assert [kind for kind, _ in blocks] == ["python", "sh", "python", "sh", "python"]
    namespace = {"spark": spark, "warehouse": warehouse}
    outputs = []
    for kind, text in blocks:
        if kind == "python":
            exec(compile(text, str(DOC), "exec"), namespace)
            continue
        for line in text.strip().splitlines():
            args = shlex.split(line)
            assert args[0] == "branchspark"
            result = CliRunner().invoke(cli, ["--warehouse", warehouse, *args[1:]], catch_exceptions=False,
                                        env={"COLUMNS": "200"})
            assert result.exit_code == 0, f"{line}\n{result.output}"
            outputs.append(result.output)
    # What the prose says the commands print.
    merged, status = outputs[0], outputs[1]
    assert "merge dev into main: paused (resolving data)" in merged
    assert "bs_conflicts_main_shop_orders" in status and "3.4 cells" in status
    assert "merge of dev into main: finished" in outputs[-1]
