"""Route every SQL statement of a session: branch statements, writes to branch relations, and the rest.

dbt, hooks, tests, `Lakehouse.sql` and the `branchspark sql` shell send plain SQL (`insert into s.t ...`,
`update s.t set ...`, `drop table if exists s.t`, `create schema s`, ...). The branch statements of SPEC 9
(`MERGE BRANCH dev`, `SHOW LOG`, ...: statements.py) run their Lakehouse operation (branch_statements.py).
Statements whose target is a branch relation (a qualified name) become core operations in the current
transaction; everything else (queries, temp views, `set`) goes to `spark.sql` after reads at another
version and the table functions become temp views (version_reads.py) and branch relations named
`schema.table` are rewritten to their temp views.
"""

import re
from typing import Callable, Dict, List, Optional, Tuple

from pyspark.sql import DataFrame, SparkSession

from .. import frames
from ..errors import DatabaseNotFound, SourceUnavailable
from ..merge import interactive
from . import sources, version_reads
from .branch_statements import BranchStatements
from .results import RoutedResult
from .statements import parse_branch_statement
from ..sql_text import (
    NAME_PATTERN,
    OTHER,
    core_table_name,
    find_top_level_keyword,
    parse_relation_name,
    qualify_branch_relations,
    split_top_level,
    strip_comments,
    tokens,
    unquote,
)

_FLAGS = re.IGNORECASE | re.DOTALL
N = NAME_PATTERN

_CREATE_SCHEMA = re.compile(rf"^create\s+(?:schema|database)\s+(?P<ine>if\s+not\s+exists\s+)?(?P<name>{N})\s*(?P<rest>.*)$", _FLAGS)
_DROP_SCHEMA = re.compile(rf"^drop\s+(?:schema|database)\s+(?P<ie>if\s+exists\s+)?(?P<name>{N})(?P<rest>.*)$", _FLAGS)
_CREATE_VIEW = re.compile(
    rf"^create\s+(?P<replace>or\s+replace\s+)?(?P<temp>(?:global\s+)?temp(?:orary)?\s+)?view\s+(?:if\s+not\s+exists\s+)?(?P<name>{N})\s+(?P<rest>.*)$",
    _FLAGS,
)
_CREATE_TABLE = re.compile(
    rf"^create\s+(?P<replace>or\s+replace\s+)?table\s+(?P<ine>if\s+not\s+exists\s+)?(?P<name>{N})(?P<rest>.*)$", _FLAGS
)
_REPLACE_TABLE = re.compile(rf"^replace\s+table\s+(?P<name>{N})(?P<rest>.*)$", _FLAGS)
_DROP_RELATION = re.compile(rf"^drop\s+(?:table|view)\s+(?P<ie>if\s+exists\s+)?(?P<name>{N})\s*(?:purge)?\s*$", _FLAGS)
_INSERT = re.compile(
    rf"^insert\s+(?P<mode>into|overwrite)\s+(?:table\s+)?(?P<name>{N})\s*(?P<rest>.*)$", _FLAGS
)
_UPDATE = re.compile(rf"^update\s+(?P<name>{N})\s+set\s+(?P<rest>.*)$", _FLAGS)
_DELETE = re.compile(rf"^delete\s+from\s+(?P<name>{N})\s*(?:where\s+(?P<where>.*))?$", _FLAGS)
_TRUNCATE = re.compile(rf"^truncate\s+table\s+(?P<name>{N})\s*$", _FLAGS)
_ALTER = re.compile(rf"^alter\s+(?:table|view)\s+(?P<name>{N})\s+(?P<rest>.*)$", _FLAGS)
_MERGE = re.compile(rf"^merge\s+into\s+(?P<name>{N})", _FLAGS)
_SHOW_SCHEMAS = re.compile(r"^show\s+(?:schemas|databases)\s*(?:like\s+'(?P<like>[^']*)')?\s*$", _FLAGS)
_COMMIT = re.compile(r"^commit(?:\s+work)?\s*;?$", _FLAGS)

_PARTITION_SPEC = re.compile(r"^partition\s*\((?P<spec>[^)]*)\)\s*", _FLAGS)
_PARTITIONED_BY = re.compile(r"partitioned\s+by\s*\((?P<cols>[^)]*)\)", _FLAGS)


class StatementRouter:
    def __init__(self, spark: SparkSession, branch_session, write: Callable,
                 home: Optional[Callable[[], str]] = None, switch: Optional[Callable[[str], None]] = None,
                 merge_settings: Optional[Callable[[str], dict]] = None):
        """`write(message)` gives a context manager yielding the BranchTransaction to use. `home()`: the branch
        a branch statement without TO / ON means (default: the session's); `switch(name)`: what USE BRANCH
        does (None: refused, as in dbt, whose target names the branch); `merge_settings(dest)`: what else
        MERGE BRANCH passes to the merge (branch_statements.py)."""
        self.spark = spark
        self.branch_session = branch_session
        self.views = branch_session.views
        self.write = write
        self.branch_statements = BranchStatements(branch_session, home or (lambda: branch_session.branch), switch,
                                                  merge_settings)

    # -- entry points ---------------------------------------------------------------------
    def execute(self, sql: str) -> RoutedResult:
        branch_statement = parse_branch_statement(sql)
        if branch_statement is not None:
            return self.branch_statements.run(branch_statement)
        statement = strip_comments(sql).strip()
        for handler in (
            self._schema_ddl,
            self._view_ddl,
            self._table_ddl,
            self._drop_relation,
            self._insert,
            self._update,
            self._delete,
            self._alter,
            self._merge,
            self._show_schemas,
            self._commit,
        ):
            result = handler(statement)
            if result is not None:
                return result
        return RoutedResult(df=self.query(sql))

    def qualify(self, sql: str) -> str:
        """`sql` with branch relations named as their temp views, which then exist in the session; every
        other name is left to Spark's own catalogs (sources.py)."""
        qualified = qualify_branch_relations(sql, self.views.is_branch_relation)
        names = self.views.referenced(qualified)
        # a view of the branch reads Spark's tables as the statement does: recorded, and pinned under sources_as_of
        # (a view an earlier run built, read by this run's model, reads what the pinned commit recorded)
        self.views.ensure(names, view_sql=self._recorded_view_sql)
        sources.warn_shadowed(self.spark, names)
        return qualified

    def _recorded_view_sql(self, view_sql: str) -> str:
        return sources.ledger.pin(self.spark, self.branch_session.lakehouse, view_sql)

    def query(self, sql: str) -> DataFrame:
        return self.analysed(self.pinned(self.at_versions(sql)))

    def pinned(self, sql: str) -> str:
        """`sql` qualified, and Spark's tables it reads recorded at their versions and pinned under sources_as_of
        (sources.py): a query's, and a view's SQL, which the view then keeps (a view built under sources_as_of
        reads the versions it was built at)."""
        return sources.ledger.pin(self.spark, self.branch_session.lakehouse, self.qualify(sql))

    def analysed(self, qualified: str) -> DataFrame:
        """spark.sql of a qualified statement (a query, a view's SQL); a name no catalog has, or a catalog
        without its class, is one line naming the catalogs looked in (sources.py)."""
        try:
            return self.spark.sql(qualified)
        except Exception as exc:
            # a name no catalog has, a catalog without its class: one line naming the catalogs (sources.py)
            line = sources.error_line(self.spark, str(exc))
            if line is None:
                raise
            raise SourceUnavailable(line) from None

    def at_versions(self, sql: str) -> str:
        """`sql` with its reads at another version and its table functions as temp views over the core's."""
        found = version_reads.find_relations(sql)
        if not found:
            return sql
        lakehouse, branch = self.branch_session.lakehouse, self.branch_session.branch
        names = [version_reads.register(lakehouse, item.relation, branch) for item in found]
        return version_reads.rewrite(sql, found, names)

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _branch_name(name_token: str) -> Optional[str]:
        if sources.names_other_catalog(name_token):  # lake.raw.orders: Spark's, not the branch's
            return None
        schema, table = parse_relation_name(name_token)
        if not schema or schema.lower() in ("session", "global_temp"):
            return None
        return core_table_name(schema, table)

    def _on_branch_relation(self, statement: str, *patterns: re.Pattern) -> Tuple[Optional[re.Match], Optional[str]]:
        """The match of the first of `patterns` that matches `statement`, and the branch table it names; the
        name is None when nothing matched or the statement names no branch relation (a session temp view)."""
        m = next((found for found in (p.match(statement) for p in patterns) if found), None)
        return m, (self._branch_name(m["name"]) if m else None)

    # -- databases ------------------------------------------------------------------------
    def _schema_ddl(self, statement: str) -> Optional[RoutedResult]:
        m = _CREATE_SCHEMA.match(statement)
        if m:
            database = unquote(m["name"]).lower()
            with self.write(f"create schema {database}") as w:
                w.tx.create_database(database, if_not_exists=True)
            return RoutedResult(message="CREATE SCHEMA")
        m = _DROP_SCHEMA.match(statement)
        if m:
            database = unquote(m["name"]).lower()
            cascade = "cascade" in m["rest"].lower()
            with self.write(f"drop schema {database}") as w:
                names = _table_names(w.tx, database)
                w.tx.drop_database(database, cascade=cascade, if_exists=bool(m["ie"]))
                w.changed(*names)
            return RoutedResult(message="DROP SCHEMA")
        return None

    # -- views ----------------------------------------------------------------------------
    def _view_ddl(self, statement: str) -> Optional[RoutedResult]:
        m, name = self._on_branch_relation(statement, _CREATE_VIEW)
        if name is None or m["temp"]:
            return None
        rest = m["rest"]
        as_at = find_top_level_keyword(rest, "as")
        if as_at < 0:
            raise ValueError(f"cannot read the view definition of {name}: expected `AS <query>`")
        view_sql = self.pinned(rest[as_at + 2 :].strip())
        schema = self.analysed(view_sql).schema  # fails now, with Spark's message, if the query is invalid
        with self.write(f"create view {name}") as w:
            w.tx.create_view(name, view_sql, replace=True, schema=schema)
            w.changed(name)
        return RoutedResult(message="CREATE VIEW")

    # -- tables ---------------------------------------------------------------------------
    def _table_ddl(self, statement: str) -> Optional[RoutedResult]:
        m, name = self._on_branch_relation(statement, _CREATE_TABLE, _REPLACE_TABLE)
        if name is None:
            return None
        rest = m["rest"].strip()
        replace = bool(m.groupdict().get("replace")) or statement.lower().startswith("replace")
        if_not_exists = bool(m.groupdict().get("ine"))
        as_at = find_top_level_keyword(rest, "as")
        options = rest if as_at < 0 else rest[:as_at]
        partition_by = _partition_columns(options)
        with self.write(f"create table {name}") as w:
            if if_not_exists and w.tx.has_table(name):
                return RoutedResult(message="CREATE TABLE")
            if as_at >= 0:
                df = self.query(rest[as_at + 2 :].strip())
                if replace:
                    w.tx.replace_table(name, df, partition_by=partition_by)
                else:
                    w.tx.create_table_as(name, df, partition_by=partition_by)
            else:
                if not rest.startswith("("):
                    raise ValueError(f"cannot read the columns of {name}: expected `(col type, ...)` or `AS <query>`")
                depth_end = _matching_paren(rest, 0)
                schema = frames.schema_from_ddl(rest[1:depth_end])
                if replace and w.tx.has_table(name):
                    w.tx.drop_table(name)
                w.tx.create_table(name, schema, partition_by=partition_by)
            w.changed(name)
        return RoutedResult(message="CREATE TABLE")

    def _drop_relation(self, statement: str) -> Optional[RoutedResult]:
        m, name = self._on_branch_relation(statement, _DROP_RELATION)
        if name is None:
            return None
        with self.write(f"drop {name}") as w:
            w.tx.drop_table(name, if_exists=bool(m["ie"]))
            w.changed(name)
        return RoutedResult(message="DROP")

    # -- DML ------------------------------------------------------------------------------
    def _insert(self, statement: str) -> Optional[RoutedResult]:
        m, name = self._on_branch_relation(statement, _INSERT)
        if name is None:
            return None
        rest = m["rest"]
        # `partition (...)`: overwrite only the partitions the query returns
        partitions = None
        pm = _PARTITION_SPEC.match(rest)
        if pm:
            partitions = "dynamic"
            rest = rest[pm.end() :]
        columns = None
        if rest.startswith("(") and not re.match(r"^\(\s*(select|with|values)\b", rest, re.IGNORECASE):
            close = _matching_paren(rest, 0)
            # column names may be quoted the ANSI way ("name") in hand-written SQL
            columns = [unquote(c.strip()).strip('"') for c in split_top_level(rest[1:close])]
            rest = rest[close + 1 :].strip()
        with self.write(f"insert {name}") as w:
            target_schema = frames.struct_of(w.tx.table(name).columns)
            df = frames.align_to_schema(self.query(rest), target_schema, columns)
            # one statement: replayable on a moved head (commit_replay.py)
            if m["mode"].lower() == "overwrite":
                w.tx.replayable(lambda tx: tx.overwrite(name, df, partitions=partitions))
            else:
                w.tx.replayable(lambda tx: tx.insert(name, df))
            w.changed(name)
        return RoutedResult(message="INSERT")

    def _update(self, statement: str) -> Optional[RoutedResult]:
        m = _UPDATE.match(statement)
        if not m:
            return None
        name = self._branch_name(m["name"])
        conflicts = None if name is not None else self._conflict_relation(m["name"])
        if name is None and conflicts is None:
            return None
        rest = m["rest"]
        where_at = find_top_level_keyword(rest, "where")
        assignments_sql, predicate = (rest, "true") if where_at < 0 else (rest[:where_at], rest[where_at + 5 :])
        assignments: Dict[str, str] = {}
        for assignment in split_top_level(assignments_sql):
            column, _, expression = assignment.partition("=")
            assignments[unquote(column.strip()).split(".")[-1]] = self.qualify(expression.strip())
        if conflicts is not None:
            return self._resolve_conflicts(conflicts, self.qualify(predicate.strip()), assignments)
        with self.write(f"update {name}") as w:
            where = self.qualify(predicate.strip())
            w.tx.replayable(lambda tx: tx.update(name, where, assignments))
            w.changed(name)
        return RoutedResult(message="UPDATE")

    def _conflict_relation(self, name_token: str):
        """(dest, table) when `name_token` is a paused merge's conflict view (SPEC 3.6), else None."""
        return interactive.relation_of_view(self.branch_session.lakehouse, name_token)

    def _resolve_conflicts(self, relation, predicate: str, assignments: Dict[str, str]) -> RoutedResult:
        """UPDATE of a conflict view: resolve those rows of the paused merge, then show the new version."""
        dest, table = relation
        lakehouse = self.branch_session.lakehouse
        interactive.resolve(lakehouse, dest, table, where=predicate, set=assignments)
        interactive.register_views(lakehouse, dest)
        return RoutedResult(message="UPDATE")

    def _delete(self, statement: str) -> Optional[RoutedResult]:
        m, name = self._on_branch_relation(statement, _DELETE, _TRUNCATE)
        if name is None:
            return None
        predicate = (m.groupdict().get("where") or "true").strip()
        with self.write(f"delete {name}") as w:
            where = self.qualify(predicate)
            w.tx.replayable(lambda tx: tx.delete(name, where))
            w.changed(name)
        return RoutedResult(message="DELETE")

    def _alter(self, statement: str) -> Optional[RoutedResult]:
        m, name = self._on_branch_relation(statement, _ALTER)
        if name is None:
            return None
        rest = m["rest"].strip()
        with self.write(f"alter {name}") as w:
            rename = re.match(rf"^rename\s+to\s+(?P<new>{N})\s*$", rest, _FLAGS)
            add = re.match(r"^add\s+columns?\s*(?P<cols>.*)$", rest, _FLAGS)
            drop = re.match(r"^drop\s+columns?\s*(?P<cols>.*)$", rest, _FLAGS)
            retype = re.match(r"^(?:alter|change)\s+column\s+(?P<col>\S+)\s+type\s+(?P<type>.+)$", rest, _FLAGS)
            props = re.match(r"^set\s+tblproperties\s*\((?P<props>.*)\)\s*$", rest, _FLAGS)
            if rename:
                new_schema, new_table = parse_relation_name(rename["new"])
                new_name = core_table_name(new_schema or name.split(".")[0], new_table)
                w.tx.rename_table(name, new_name)
                w.changed(name, new_name)
            elif add:
                cols = add["cols"].strip()
                if cols.startswith("("):
                    cols = cols[1 : _matching_paren(cols, 0)]
                for field in frames.schema_from_ddl(cols).fields:
                    w.tx.add_column(name, field.name, field.dataType.simpleString(), nullable=True)
                w.changed(name)
            elif drop:
                cols = drop["cols"].strip().strip("()")
                for column in split_top_level(cols):
                    w.tx.drop_column(name, unquote(column))
                w.changed(name)
            elif retype:
                w.tx.alter_column_type(name, unquote(retype["col"]), frames.normalize_type(retype["type"].strip()))
                w.changed(name)
            elif props:
                values = {}
                for item in split_top_level(props["props"]):
                    key, _, value = item.partition("=")
                    values[key.strip().strip("'\"")] = value.strip().strip("'\"")
                w.tx.set_table_properties(name, values)
            else:
                raise ValueError(f"alter of branch relation {name} is not supported: {rest[:60]}")
        return RoutedResult(message="ALTER")

    def _merge(self, statement: str) -> Optional[RoutedResult]:
        m, name = self._on_branch_relation(statement, _MERGE)
        if name is None:
            return None
        raise ValueError(
            f"MERGE INTO {m['name']}: write merges with an incremental model "
            f"(incremental_strategy='merge' and a unique_key) on branchspark"
        )

    def _show_schemas(self, statement: str) -> Optional[RoutedResult]:
        m = _SHOW_SCHEMAS.match(statement)
        if not m:
            return None
        names = sorted(d.name for d in self.branch_session.snapshot().databases())
        if m["like"]:
            pattern = re.compile("^" + m["like"].replace("*", ".*").replace("%", ".*") + "$", re.IGNORECASE)
            names = [n for n in names if pattern.match(n)]
        df = self.spark.createDataFrame([(n,) for n in names], "databaseName string")
        return RoutedResult(df=df)

    @staticmethod
    def _commit(statement: str) -> Optional[RoutedResult]:
        """`commit` has nothing to do: every statement outside a model build is its own commit, and a build's
        writes commit together at its end. dbt sends one before the hooks that run outside the build
        (`transaction: false`, `after_commit`); Spark's parser refuses it."""
        return RoutedResult(message="COMMIT") if _COMMIT.match(statement) else None


def _table_names(tx, database: str) -> List[str]:
    try:
        return [t.full_name for t in tx.tables(database=database)]
    except DatabaseNotFound:  # nothing to hide
        return []


def _matching_paren(text: str, open_at: int) -> int:
    depth = 0
    for kind, s, _ in tokens(text[open_at:]):
        if kind != OTHER:
            continue
        ch = text[open_at + s]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return open_at + s
    raise ValueError(f"unbalanced parentheses in: {text[:80]}")


def _partition_columns(options: str) -> Optional[List[str]]:
    m = _PARTITIONED_BY.search(options)
    if not m:
        return None
    return [unquote(c.strip()).split(" ")[0] for c in split_top_level(m["cols"])]
