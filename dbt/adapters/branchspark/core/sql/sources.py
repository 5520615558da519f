"""The tables a team already has, read beside the branch's: every name that is no branch relation is Spark's.

A branch relation is exposed as a temp view (temp_views.py); any other name in a statement (a dbt source, a
name in a model's SQL, `Lakehouse.sql`, `branchspark sql`) reaches Spark's own catalogs as in dbt-spark: the
session catalog (a Hive metastore, Glue, Unity through `spark_config`), any `spark.sql.catalog.<name>`, path
tables (`` delta.`...` ``). Here: which names those are, the warning when a branch relation hides a table of
Spark's catalog of the same name, and the one-line errors for names no catalog has.
"""
from __future__ import annotations

import logging
import re
import threading
from typing import Callable, Iterable

from pyspark.sql import SparkSession

from ..errors import SourceUnavailable
from ..sql_text import IDENT, QUOTED, quote_identifier, tokens, unquote

log = logging.getLogger(__name__)

SESSION_CATALOG = "spark_catalog"
# `format.`path``: a path table (Spark's "run SQL on files")
PATH_FORMATS = ("delta", "parquet", "iceberg", "orc", "json", "csv", "avro", "text")
CATALOG_KEY = "spark.sql.catalog."

# What the warning goes to: the adapter points it at dbt's log (adapter/impl.py).
notify: Callable[[str], None] = log.warning

_checked: set[tuple[int, str]] = set()  # (session id, branch relation) already compared with Spark's catalog
_lock = threading.Lock()


def name_parts(name_token: str) -> list[str]:
    return [unquote(name_token[s:e]) for kind, s, e in tokens(name_token) if kind in (IDENT, QUOTED)]


def names_other_catalog(name_token: str) -> bool:
    """Whether a name as written is Spark's for sure: `catalog.schema.table` in a catalog other than the session
    catalog, or a path table (`` delta.`/lake/raw/customers` ``)."""
    parts = name_parts(name_token)
    if len(parts) == 3:
        return parts[0].lower() != SESSION_CATALOG
    return len(parts) == 2 and parts[0].lower() in PATH_FORMATS and "/" in parts[1]


def warn_shadowed(spark: SparkSession, names: Iterable[str]) -> None:
    """Warn once per branch relation (`database.table`) that Spark's session catalog has a table of the same
    name: the branch relation wins, the catalog's table is not read."""
    for name in names:
        key = (id(spark), name)
        with _lock:
            if key in _checked:
                continue
            _checked.add(key)
        database, _, table = name.partition(".")
        if database in ("session", "global_temp"):
            continue
        try:
            shadowed = spark.catalog.tableExists(f"{quote_identifier(database)}.{quote_identifier(table)}")
        except Exception:  # a catalog that cannot answer hides nothing we could name
            shadowed = False
        if shadowed:
            notify(f"{name} is a relation of the branch and also a table of Spark's catalog "
                   f"({SESSION_CATALOG}.{name}): the branch's is read; name another schema in the model or "
                   f"source to read the catalog's")


def catalogs(spark: SparkSession) -> list[str]:
    """The catalogs a name is looked up in: the session catalog (and its implementation) and every
    `spark.sql.catalog.<name>` the session sets."""
    try:
        settings = dict(spark.sparkContext.getConf().getAll())
    except Exception:  # a Spark Connect client has no SparkContext: its runtime settings
        try:
            settings = {k: v for k, v in spark.conf.getAll.items()}  # type: ignore[attr-defined]
        except Exception:
            settings = {}
    implementation = settings.get("spark.sql.catalogImplementation", "in-memory")
    session = settings.get(CATALOG_KEY + SESSION_CATALOG)
    found = [f"{SESSION_CATALOG} ({implementation}" + (f", {session.rsplit('.', 1)[-1]})" if session else ")")]
    for key in sorted(settings):
        if key.startswith(CATALOG_KEY) and "." not in key[len(CATALOG_KEY):] \
                and key[len(CATALOG_KEY):] != SESSION_CATALOG:
            found.append(f"{key[len(CATALOG_KEY):]} ({settings[key].rsplit('.', 1)[-1]})")
    return found


_NOT_FOUND = re.compile(r"\[TABLE_OR_VIEW_NOT_FOUND\][^`]*`(?P<name>(?:[^`]|``)+(?:`\.`(?:[^`]|``)+)*)`")
_PLUGIN_CLASS = re.compile(r"Cannot find catalog plugin class for catalog '(?P<catalog>[^']+)': (?P<cls>[\w.$]+)")
_CLASS_NOT_FOUND = re.compile(r"(?:ClassNotFoundException|NoClassDefFoundError)[:\s]+(?P<cls>[\w.$/]+)")


def error_line(spark: SparkSession | None, message: str, is_branch_database: Callable[[str], bool] | None = None
               ) -> str | None:
    """One line for a name that no catalog has or a catalog whose class is missing, else None."""
    plugin = _PLUGIN_CLASS.search(message)
    if plugin:
        return (f"catalog {plugin['catalog']}: its class {plugin['cls'].rstrip('.')} is not on Spark's class path: "
                f"add the jar that has it to spark.jars in the profile's spark_config")
    missing_class = _CLASS_NOT_FOUND.search(message)
    if missing_class and ("catalog" in message.lower() or "extension" in message.lower()):
        cls = missing_class["cls"].replace("/", ".").rstrip(".")
        return (f"class {cls} is not on Spark's class path (a catalog or extension of spark_config names it): add "
                f"the jar that has it to spark.jars in the profile's spark_config")
    found = _NOT_FOUND.search(message)
    if not found:
        return None
    name = found["name"].replace("`.`", ".").replace("``", "`")
    if "." not in name:  # a one-part name: a CTE, a temp relation, a model's own SQL; Spark's message says it
        return None
    looked = ", ".join(catalogs(spark)) if spark is not None else SESSION_CATALOG
    return (f"table {name} is found in no catalog: not a relation of the branch, and not in Spark's catalogs "
            f"{looked}; for a table of a Hive metastore set spark.sql.catalogImplementation=hive (and the "
            f"metastore's spark.hadoop.* settings), for another catalog spark.sql.catalog.<name> (and name it "
            f"in the source's database:), in the profile's spark_config")


# -- the versions a run read ------------------------------------------------------------------------------------
UNVERSIONED = "unversioned"
_READ_KEYWORDS = ("from", "join")
# a name already read at a version (a view built under sources_as_of keeps its pins in its SQL): Spark's forms
_AT_VERSION = re.compile(r"\s+(?:for\s+)?(?:(?P<by_version>system_version|version)|system_time|timestamp)\s+as\s+of"
                         r"(?:\s+(?P<version>\d+)\b)?", re.IGNORECASE)


def read_names(sql: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each name of two or three parts that follows FROM or JOIN in `sql`: the tables a
    query reads that may be Spark's (a branch relation is by then one quoted name, its temp view)."""
    toks = [(kind, s, e) for kind, s, e in tokens(sql) if kind not in ("space", "comment")]
    found = []
    for i, (kind, s, e) in enumerate(toks):
        if kind != IDENT or sql[s:e].lower() not in _READ_KEYWORDS or i + 1 >= len(toks):
            continue
        j = i + 1
        if toks[j][0] not in (IDENT, QUOTED):
            continue
        end = j
        while end + 2 < len(toks) and sql[toks[end + 1][1]:toks[end + 1][2]] == "." \
                and toks[end + 2][0] in (IDENT, QUOTED):
            end += 2
        parts = (end - j) // 2 + 1
        if parts not in (2, 3):
            continue
        start, stop = toks[j][1], toks[end][2]
        name = sql[start:stop]
        first = name_parts(name)[0].lower()
        if first in ("session", "global_temp", "system"):
            continue
        found.append((start, stop, name))
    return found


def canonical_name(name_token: str) -> str:
    """A name as the run's record keys it: its parts, dot-joined, lower case (a path keeps its case)."""
    parts = name_parts(name_token)
    if len(parts) == 2 and parts[0].lower() in PATH_FORMATS and "/" in parts[1]:
        return f"{parts[0].lower()}.`{parts[1]}`"
    return ".".join(p.lower() for p in parts)


def table_version(spark: SparkSession, name_token: str) -> dict | None:
    """{"format", "version"} of the table `name_token` names in Spark's catalogs (a Delta version, an Iceberg
    snapshot id, else "unversioned"), or None when no catalog has it."""
    parts = name_parts(name_token)
    if len(parts) == 2 and parts[0].lower() in PATH_FORMATS and "/" in parts[1]:
        provider = parts[0].lower()
    else:
        try:
            described = spark.sql(f"DESCRIBE TABLE EXTENDED {name_token}").collect()
        except Exception:
            return None
        provider = next((str(r[1]).strip().lower() for r in described if str(r[0]).strip() == "Provider"), "")
        provider = provider or "hive"
    try:
        if provider == "delta":
            version = spark.sql(f"DESCRIBE HISTORY {name_token} LIMIT 1").collect()[0]["version"]
            return {"format": "delta", "version": int(version)}
        if provider == "iceberg":
            refs = spark.sql(f"SELECT snapshot_id FROM {name_token}.refs WHERE name = 'main'").collect()
            return {"format": "iceberg", "version": int(refs[0][0]) if refs else None}
    except Exception:  # no history to read (a path that holds no table): Spark's own error follows
        return None
    return {"format": provider, "version": UNVERSIONED}


class SourceLedger:
    """What this process's dbt invocation read of Spark's catalogs (the landing commit records it), and the
    versions `sources_as_of` pins those reads to."""

    def __init__(self):
        self.lock = threading.RLock()
        self.read: dict[str, dict] = {}
        self.model = threading.local()  # this thread's model build: the names it read (`model_reads`)
        self.misses: set[str] = set()
        self.as_of: str | None = None
        self.pins: dict[str, dict] | None = None  # resolved on first read
        self.pinned_commit: str | None = None

    def begin(self, as_of: str | None = None) -> None:
        """A new invocation: nothing read yet; `as_of` a commit id or branch whose recorded versions to read."""
        with self.lock:
            self.read, self.misses = {}, set()
            self.as_of = str(as_of) if as_of else None
            self.pins, self.pinned_commit = None, None

    def recorded(self) -> dict | None:
        with self.lock:
            return {name: dict(entry) for name, entry in sorted(self.read.items())} or None

    def begin_model(self) -> None:
        """A model build starts on this thread: what it reads from now on is its own (its commit records it)."""
        self.model.names = set()

    def model_reads(self) -> dict | None:
        """The versions of Spark's tables this thread's model build read (None: none, or no build open), as its
        commit records them: under `landing: per_model` that commit is the run's record."""
        names, self.model.names = getattr(self.model, "names", None), None
        if not names:
            return None
        with self.lock:
            return {name: dict(self.read[name]) for name in sorted(names) if name in self.read} or None

    def _resolve_pins(self, lakehouse) -> None:
        if self.pins is not None or not self.as_of:
            return
        commit = recorded_commit(lakehouse, self.as_of)
        self.pins, self.pinned_commit = dict(commit.sources or {}), commit.id

    def pin(self, spark: SparkSession, lakehouse, sql: str) -> str:
        """`sql` with each table of Spark's catalogs it reads recorded at its version, and, under
        `sources_as_of`, read at the version that commit recorded (Delta and Iceberg: VERSION AS OF)."""
        found = read_names(sql)
        if not found:
            return sql
        out, at = [], 0
        with self.lock:
            self._resolve_pins(lakehouse)
            for start, end, token in found:
                name = canonical_name(token)
                if name in self.misses:
                    continue
                explicit = _AT_VERSION.match(sql, end)
                entry = self.read.get(name)
                if entry is None:
                    entry = table_version(spark, token) if explicit else self._entry(spark, token, name)
                    if entry is None:
                        self.misses.add(name)
                        continue
                    if explicit and explicit["by_version"] and explicit["version"] \
                            and entry["format"] in ("delta", "iceberg"):
                        entry = {"format": entry["format"], "version": int(explicit["version"])}
                    self.read[name] = entry
                if getattr(self.model, "names", None) is not None:
                    self.model.names.add(name)
                if explicit:  # read at the version its SQL names (a view's pins): recorded, left as written
                    continue
                version = entry.get("version")
                if entry["format"] in ("delta", "iceberg") and self.pins is not None and version is not None:
                    out.append(sql[at:end] + f" VERSION AS OF {int(version)}")
                    at = end
        out.append(sql[at:])
        return "".join(out)

    def _entry(self, spark, token: str, name: str) -> dict | None:
        current = table_version(spark, token)
        if current is None or self.pins is None:
            return current
        pinned = self.pins.get(name)
        if pinned is None:
            raise_no_version(self.as_of, self.pinned_commit, name)
        if current["format"] in ("delta", "iceberg"):
            return {"format": current["format"], "version": pinned["version"]}
        return current


def raise_no_version(as_of: str | None, commit: str | None, name: str) -> None:
    raise SourceUnavailable(
        f"sources_as_of {as_of}: commit {str(commit)[:12]} recorded no version for source {name}: name a commit "
        f"of a run that read it (`branchspark log -v` lists each run's sources), or drop sources_as_of")


def recorded_commit(lakehouse, ref: str):
    """The commit `ref` names if it recorded source versions; for a branch (or any ref) the newest commit in its
    history that did."""
    start = lakehouse.resolve(ref)
    for commit in lakehouse.store.ancestors(start.id):
        if commit.sources:
            return commit
    raise SourceUnavailable(f"sources_as_of {ref}: no commit in its history recorded source versions (commit "
                            f"{start.short_id}): name a commit of a dbt run that read its sources")


ledger = SourceLedger()
