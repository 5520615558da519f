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


def test_cli_abort_and_take(spark, warehouse, lh):
    with lh.transaction("main") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.k", spark.createDataFrame([(1, 10)], "id bigint, a bigint"), primary_key=["id"])
    lh.create_branch("dev")
    lh.branch("dev").update("shop.k", "id = 1", {"a": "11"})
    lh.branch("main").update("shop.k", "id = 1", {"a": "12"})
    head = lh.store.get_branch("main").head

    def run(*args):
        result = CliRunner().invoke(cli, ["--warehouse", warehouse, *args], catch_exceptions=False,
                                    env={"COLUMNS": "200"})
        return result.exit_code, result.output

    assert run("merge", "dev", "--into", "main", "--on-conflict", "pause")[0] == 0
    code, out = run("merge", "--into", "main", "--continue")
    assert code == 1 and "still has 1 open data conflict" in out
    code, out = run("abort", "main")
    assert code == 0 and lh.store.get_branch("main").head == head
    code, out = run("merge-status", "main")
    assert code == 0 and "no merge into main is paused" in out
    assert run("merge", "dev", "--into", "main", "--on-conflict", "pause")[0] == 0
    code, out = run("resolve", "main", "shop.k", "--take", "ours")
    assert code == 0 and "resolving data" in out
    assert run("merge", "--into", "main", "--continue")[0] == 0
    assert [tuple(r) for r in lh.read("shop.k", "main").collect()] == [(1, 12)]
