"""`branchspark sql` (SPEC 9): -e, -f and piped scripts run in-process on the test's Spark; the interactive
shell driven in a real terminal (tmux) in a process of its own."""
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from dbt.adapters.branchspark.cli.main import cli

CONNECT_URL = "BRANCHSPARK_TEST_CONNECT_URL"  # the Spark Connect server tests/run.sh starts


def run(warehouse, *args, stdin=None):
    result = CliRunner().invoke(cli, ["--warehouse", warehouse, "sql", *args], input=stdin, catch_exceptions=False,
                                env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_execute_runs_statements_and_prints_result_sets(lh, orders, warehouse):
    code, out = run(warehouse, "-e", "CREATE BRANCH dev; USE BRANCH dev; "
                                     "INSERT INTO shop.orders VALUES (6, 60.0); SELECT count(*) AS n FROM shop.orders")
    assert code == 0, out
    assert "CREATE BRANCH dev at" in out and "USE BRANCH dev" in out
    assert "│ 6 │" in out and "(1 row)" in out  # the count, read on dev
    assert lh.read("shop.orders", at="main").count() == 5
    code, out = run(warehouse, "-e", "MERGE BRANCH dev; SHOW LOG LIMIT 2")
    assert code == 0, out
    assert f"merge dev into main: merged (commit {lh.get_branch('main').head[:12]})" in out
    assert "│ merge dev into main " in out and "│ sql insert shop.orders " in out and "(2 rows)" in out
    code, out = run(warehouse, "-e", "SELECT count(*) AS n FROM shop.orders VERSION AS OF 'dev'; "
                                     "SELECT _diff_type, id FROM branch_diff('dev', 'main', 'shop.orders'); "
                                     "SHOW MERGE STATUS; DROP BRANCH dev")
    assert code == 0, out
    assert "│ 6 │" in out and "(0 rows)" in out and "no merge into main is paused (not started)" in out
    assert out.rstrip().endswith("DROP BRANCH dev") and not lh.branch_exists("dev")


def test_execute_a_conflict_a_paused_merge_aborted_and_one_resolved_and_continued(lh, orders, warehouse):
    base = lh.log("main", limit=1)[0]
    lh.sql("CREATE BRANCH dev; CREATE BRANCH other")
    lh.sql("UPDATE shop.orders SET amount = 1 WHERE id = 1; INSERT INTO shop.orders VALUES (6, 60.0)", branch="dev")
    lh.sql("UPDATE shop.orders SET amount = 2 WHERE id = 1", branch="other")
    head = lh.get_branch("other").head
    # a conflicting MERGE BRANCH (no TO: the session's branch, other) stops with its report, exit code 1
    code, out = run(warehouse, "--branch", "other", "-e", "MERGE BRANCH dev; SHOW BRANCHES")
    assert code == 1 and "merge dev into other: conflicts" in out, out
    assert "│ conflict │" in out and "update on src vs update on dest" in out, out
    assert out.strip().splitlines()[-1].startswith("error: merge of 'dev' into 'other' stopped with 1 conflict(s)")
    assert "created_from" not in out and lh.get_branch("other").head == head
    # paused, shown, aborted: other as it was
    code, out = run(warehouse, "--branch", "other", "-e", "MERGE BRANCH dev WITH (on_conflict = 'pause'); "
                                                          "SHOW MERGE STATUS; ABORT MERGE; SHOW MERGE STATUS ON other")
    assert code == 0, out
    assert "merge dev into other: paused" in out and "│ other │ resolving data │ dev " in out, out
    assert "ABORT MERGE: the merge into other is aborted, other is as it was" in out
    assert "no merge into other is paused (not started)" in out.split("is aborted")[1], out
    assert lh.get_branch("other").head == head
    # paused again, resolved taking other's side, continued: one merge commit; then reads at a time and the
    # table function, on the merged branch
    code, out = run(warehouse, "-e", "USE BRANCH other; MERGE BRANCH dev WITH (on_conflict = 'pause'); "
                                     "RESOLVE CONFLICTS ON other TABLE shop.orders TAKE OURS; CONTINUE MERGE; "
                                     "SELECT id, amount FROM shop.orders WHERE id IN (1, 6) ORDER BY id; "
                                     f"SELECT amount AS then FROM shop.orders TIMESTAMP AS OF '{base.ts.isoformat()}' "
                                     "WHERE id = 1; "
                                     "SELECT id, _change_type FROM "
                                     f"branch_changes('shop.orders', '{base.id}', 'other') ORDER BY id, _change_type; "
                                     "SHOW BRANCHES")
    assert code == 0, out
    merged = lh.log("other", limit=1)[0]
    assert list(merged.parents) == [head, lh.get_branch("dev").head]
    assert f"merge dev into other: merged (commit {merged.id[:12]})" in out
    assert "│ 1  │ 2.0    │" in out and "│ 6  │ 60.0   │" in out, out  # ours for order 1, dev's new order 6
    assert "│ 10.0 │" in out, out  # order 1 at the base's time
    assert all(f"│ {row} │" in out for row in ("1  │ delete      ", "1  │ insert      ", "6  │ insert      ")), out
    assert "│ other  │ " + merged.id[:12] in out, out


def test_file_and_piped_scripts_and_a_conflict(lh, orders, warehouse, tmp_path):
    script = tmp_path / "publish.sql"
    script.write_text("-- two branches change order 1\nCREATE BRANCH dev;\nCREATE BRANCH other;\n"
                      "USE BRANCH dev;\nUPDATE shop.orders SET amount = 1 WHERE id = 1;\n"
                      "USE BRANCH other;\nDELETE FROM shop.orders WHERE id = 1;\n")
    code, out = run(warehouse, "-f", str(script))
    assert code == 0, out
    head = lh.get_branch("other").head
    code, out = run(warehouse, "--branch", "other", stdin="SHOW BRANCHES;\nMERGE BRANCH dev;\nSHOW BRANCHES;\n")
    assert code == 1
    assert "other" in out and "merge dev into other: conflicts" in out and "A1" in out
    assert out.strip().splitlines()[-1].startswith("error: merge of 'dev' into 'other' stopped with 1 conflict(s)")
    assert out.count("created_from") == 1  # the script stopped at the error
    assert lh.get_branch("other").head == head


def test_a_bad_script_is_one_line_with_its_position_and_runs_nothing(lh, orders, warehouse):
    head = lh.get_branch("main").head
    code, out = run(warehouse, "-e", "INSERT INTO shop.orders VALUES (7, 70.0);\nSHOW LOG ON main LIMIT -1;")
    assert code == 1
    assert out == ("error: syntax error at line 2, column 24: expected a positive whole number after LIMIT, found "
                   "'-1' (near: -1;)\n")
    assert lh.get_branch("main").head == head
    code, out = run(warehouse, "-e", "SELEC * FROM shop.orders")  # Spark's parse error: its first line
    assert code == 1 and len(out.strip().splitlines()) == 1 and out.startswith("error: [PARSE_SYNTAX_ERROR]")
    code, out = run(warehouse, "--branch", "nope", "-e", "SHOW LOG")
    assert code == 1 and out.startswith("error: branch 'nope' does not exist")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_an_interactive_session_in_a_terminal(lh, orders, warehouse, tmp_path):
    socket = f"bs-sql-{uuid.uuid4().hex[:8]}"  # a tmux server of this test's own
    tmux = ["tmux", "-L", socket]
    branchspark = str(Path(sys.executable).with_name("branchspark"))
    env = {**os.environ, "BRANCHSPARK_SQL_HISTORY": str(tmp_path / "history"), "COLUMNS": "160"}
    if os.environ.get(CONNECT_URL):  # tests/run.sh's Spark Connect server: no JVM of the shell's own
        env["SPARK_REMOTE"] = os.environ[CONNECT_URL]
    subprocess.run(tmux + ["new-session", "-d", "-s", "sql", "-x", "160", "-y", "50",
                           f"{branchspark} --warehouse {warehouse} sql"], check=True, env=env)
    try:
        def screen() -> str:
            return subprocess.run(tmux + ["capture-pane", "-p", "-J", "-S", "-500", "-t", "sql"],
                                  capture_output=True, text=True).stdout

        def wait_for(text: str, timeout: float = 120) -> str:
            deadline = time.time() + timeout
            while time.time() < deadline:
                shown = screen()
                if text in shown:
                    return shown
                time.sleep(0.3)
            raise AssertionError(f"{text!r} never showed:\n{screen()}")

        def type_line(line: str) -> None:
            # tmux reads an argument's trailing `;` as its own command separator, unless escaped
            typed = line[:-1] + "\\;" if line.endswith(";") else line
            subprocess.run(tmux + ["send-keys", "-t", "sql", "-l", typed], check=True)
            subprocess.run(tmux + ["send-keys", "-t", "sql", "Enter"], check=True)

        wait_for("main> ")
        type_line("CREATE BRANCH dev;")
        wait_for("CREATE BRANCH dev at")
        type_line("USE BRANCH dev;")
        wait_for("dev> ")
        type_line("INSERT INTO shop.orders")  # one statement over two lines
        wait_for("   -> ")
        type_line("VALUES (6, 60.0);")
        wait_for("INSERT")
        type_line("MERGE BRANCH dev TO main;")
        wait_for("merge dev into main")
        type_line("SHOW LOG ON main LIMIT 2;")
        shown = wait_for("(2 rows)")
        assert "sql insert shop.orders" in shown
        type_line("MERGE BRANCH dev TO;")  # a bad statement: one line, and the shell goes on
        wait_for("error: syntax error at line 1, column 20")
        type_line("exit")
        deadline = time.time() + 30
        while time.time() < deadline and "sql" in subprocess.run(tmux + ["ls"], capture_output=True, text=True).stdout:
            time.sleep(0.3)
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)
    assert sorted(r["id"] for r in lh.read("shop.orders", at="main").collect()) == [1, 2, 3, 4, 5, 6]
    assert "USE BRANCH dev;" in (tmp_path / "history").read_text()  # the history was kept
