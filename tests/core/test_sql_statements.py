"""The branch statements' parser and the version reads' finder (SPEC 9): pure Python, no Spark started."""
import subprocess
import sys

import pytest

from dbt.adapters.branchspark.core.sql.statements import (
    AbortMerge,
    ContinueMerge,
    CreateBranch,
    DropBranch,
    MergeBranch,
    ResolveConflicts,
    ShowBranches,
    ShowLog,
    ShowMergeStatus,
    SqlSyntaxError,
    UseBranch,
    parse_branch_statement,
)
from dbt.adapters.branchspark.core.sql.version_reads import TableFunction, VersionRead, find_relations, rewrite
from dbt.adapters.branchspark.core.sql.session import statements


@pytest.mark.parametrize("text, parsed", [
    ("MERGE BRANCH dev", MergeBranch("dev")),
    ("merge branch dev to main;", MergeBranch("dev", "main")),
    ("MERGE BRANCH feature/x TO `release-1` WITH (strategy = 'auto', on_conflict = theirs, dry_run = TRUE)",
     MergeBranch("feature/x", "release-1", {"strategy": "auto", "on_conflict": "theirs", "dry_run": True})),
    ("MERGE BRANCH 'a1b2c3d4' WITH (message = 'Publish Q4')", MergeBranch("a1b2c3d4", None, {"message": "Publish Q4"})),
    ("-- publish\nMERGE /* the feature */ BRANCH dev", MergeBranch("dev")),
    ("CREATE BRANCH dev", CreateBranch("dev")),
    ("create branch if not exists dev from main at timestamp '2026-11-21T10:00:00'",
     CreateBranch("dev", "main", "2026-11-21T10:00:00", True)),
    ("CREATE BRANCH fix FROM dev@2026-11-21T10:00", CreateBranch("fix", "dev@2026-11-21T10:00")),
    ("DROP BRANCH dev", DropBranch("dev")),
    ("DROP BRANCH IF EXISTS dev FORCE", DropBranch("dev", True, True)),
    ("USE BRANCH dev", UseBranch("dev")),
    ("SHOW BRANCHES", ShowBranches()),
    ("SHOW LOG", ShowLog()),
    ("show log on dev limit 5", ShowLog("dev", 5)),
    ("SHOW MERGE STATUS", ShowMergeStatus()),
    ("SHOW MERGE STATUS ON main", ShowMergeStatus("main")),
    ("RESOLVE CONFLICTS ON main TAKE OURS", ResolveConflicts("main", "ours")),
    ("RESOLVE CONFLICTS ON main TABLE shop.orders TAKE theirs", ResolveConflicts("main", "theirs", "shop.orders")),
    ("CONTINUE MERGE", ContinueMerge()),
    ("CONTINUE MERGE ON main", ContinueMerge("main")),
    ("ABORT MERGE", AbortMerge()),
    ("abort merge on main", AbortMerge("main")),
])
def test_each_statement_parses(text, parsed):
    assert parse_branch_statement(text) == parsed


@pytest.mark.parametrize("text", [
    "SELECT 1", "MERGE INTO shop.orders t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
    "CREATE TABLE shop.branch (id int)", "DROP TABLE shop.orders", "SHOW TABLES", "USE shop",
    "create schema branch", "show schemas",
])
def test_other_statements_are_not_branch_statements(text):
    assert parse_branch_statement(text) is None


@pytest.mark.parametrize("text, error", [
    ("MERGE BRANCH dev TO", "line 1, column 20: expected the branch to merge into after TO, found the end of the "
                            "statement"),
    ("MERGE BRANCH", "line 1, column 13: expected the branch to merge (MERGE BRANCH src), found the end"),
    ("MERGE BRANCH TO main", "line 1, column 14: expected the branch to merge (MERGE BRANCH src), found 'TO'"),
    ("MERGE BRANCH dev INTO main", "line 1, column 18: expected the end of the statement, found 'INTO'"),
    ("MERGE BRANCH dev WITH strategy = 'auto'", "column 23: expected '(' after WITH, found 'strategy'"),
    ("MERGE BRANCH dev WITH (squash = true)", "column 24: expected an option (strategy, on_conflict, dry_run, "
                                              "message), found 'squash'"),
    ("MERGE BRANCH dev WITH (dry_run = maybe)", "column 34: expected true or false for dry_run, found 'maybe'"),
    ("MERGE BRANCH dev WITH (dry_run = true", "column 38: expected ',' or ')' in the WITH options, found the end"),
    ("MERGE BRANCH dev WITH (dry_run = true, dry_run = false)", "column 40: expected each option once (dry_run "
                                                                "is given twice)"),
    ("CREATE BRANCH IF EXISTS dev", "column 18: expected NOT EXISTS after IF, found 'EXISTS'"),
    ("CREATE BRANCH dev AT '2026-11-21'", "column 22: expected TIMESTAMP after AT, found the string '2026-11-21'"),
    ("CREATE BRANCH dev AT TIMESTAMP now", "column 32: expected a quoted time after AT TIMESTAMP"),
    ("DROP BRANCH dev CASCADE", "column 17: expected the end of the statement, found 'CASCADE'"),
    ("USE BRANCH", "column 11: expected the branch to use (USE BRANCH name), found the end"),
    ("SHOW LOG LIMIT ten", "column 16: expected a positive whole number after LIMIT, found 'ten'"),
    ("SHOW MERGE", "column 11: expected STATUS after SHOW MERGE, found the end"),
    ("RESOLVE CONFLICTS main TAKE ours", "column 19: expected ON and the branch the merge is paused on, found 'main'"),
    ("RESOLVE CONFLICTS ON main TAKE mine", "column 32: expected OURS or THEIRS after TAKE, found 'mine'"),
    ("RESOLVE CONFLICTS ON main", "column 26: expected TAKE OURS or TAKE THEIRS, found the end"),
    ("CONTINUE MERGE ON", "column 18: expected the branch the merge is into after ON, found the end"),
    ("MERGE BRANCH 'dev TO main", "column 14: expected a closing quote, found an unclosed quote"),
    ("/* {\"app\": \"dbt\"} */\n  MERGE BRANCH dev TO", "line 1, column 20: expected the branch to merge into"),
    ("SHOW\n  LOG\n  ON dev LIMIT 0", "line 3, column 16: expected a positive whole number after LIMIT, found '0'"),
])
def test_a_bad_statement_is_one_line_that_points_at_its_position(text, error):
    with pytest.raises(SqlSyntaxError) as bad:
        parse_branch_statement(text)
    message = str(bad.value)
    assert message.startswith("syntax error at ") and "\n" not in message
    assert error in message


def test_a_script_is_checked_whole_and_errors_point_into_the_script():
    script = "CREATE BRANCH dev;\nINSERT INTO shop.orders VALUES (1);\n\nUSE BRANCH dev extra;"
    with pytest.raises(SqlSyntaxError) as bad:
        statements(script)
    assert bad.value.line == 4 and bad.value.column == 16 and "found 'extra'" in str(bad.value)
    assert statements("SHOW BRANCHES; SELECT ';' AS semicolon; -- done") == ["SHOW BRANCHES", " SELECT ';' AS semicolon"]


def test_version_reads_and_table_functions_are_found_and_rewritten():
    sql = ("SELECT o.id FROM shop.orders VERSION AS OF 'dev@2026-11-21 10:00' o "
           "JOIN `shop`.`customers` TIMESTAMP AS OF '2026-11-21' c ON o.cid = c.id "
           "WHERE o.note <> 'shop.orders VERSION AS OF ''x''' -- branch_diff(\n")
    found = find_relations(sql)
    assert [f.relation for f in found] == [VersionRead("shop.orders", ref="dev@2026-11-21 10:00"),
                                           VersionRead("shop.customers", time="2026-11-21")]
    assert rewrite(sql, found, ["v1", "v2"]).startswith("SELECT o.id FROM `v1` o JOIN `v2` c ON o.cid = c.id WHERE")
    calls = find_relations("SELECT * FROM branch_changes('shop.orders', 0, 'main', true) JOIN "
                           "BRANCH_DIFF('main', 'dev', 'shop.orders', 'two_dot') USING (id)")
    assert [c.relation for c in calls] == [
        TableFunction("branch_changes", {"table": "shop.orders", "from": 0, "to": "main", "net": True}),
        TableFunction("branch_diff", {"from": "main", "to": "dev", "table": "shop.orders", "mode": "two_dot"})]
    assert find_relations("SELECT * FROM branch_changes('shop.orders', 1234abcd)")[0].relation.args["from"] == "1234abcd"
    assert find_relations("SELECT version, timestamp FROM shop.orders AS of") == []


@pytest.mark.parametrize("sql, error", [
    ("SELECT * FROM shop.orders VERSION AS OF dev", "column 41: expected a quoted version after VERSION AS OF"),
    ("SELECT * FROM orders VERSION AS OF 'dev'", "column 15: expected a table as database.table before VERSION"),
    ("SELECT * FROM shop.orders TIMESTAMP AS OF", "column 42: expected a quoted time after TIMESTAMP AS OF"),
    ("SELECT * FROM branch_diff('main')", "column 15: expected branch_diff(from, to, table, mode) with 3 to 4 "
                                          "arguments, found 1"),
    ("SELECT * FROM branch_changes('shop.orders', now())", "column 45: expected a quoted argument of "
                                                            "branch_changes(table, from, to, net), found 'now'"),
])
def test_a_bad_version_read_points_at_its_position(sql, error):
    with pytest.raises(SqlSyntaxError, match=None) as bad:
        find_relations(sql)
    assert error in str(bad.value)


def test_the_parser_imports_no_spark():
    script = ("import sys; from dbt.adapters.branchspark.core.sql.statements import parse_branch_statement as p; "
              "assert p('MERGE BRANCH dev') is not None; print(sorted(m for m in sys.modules if m.startswith('py4j') "
              "or m.startswith('pyspark')))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stderr[-2000:]
