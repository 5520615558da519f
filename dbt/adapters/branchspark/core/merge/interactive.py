"""A merge that pauses instead of failing (SPEC 3.6): on_conflict pause, or strategy interactive.

The paused merge is merger.py's plan, stopped before its commit, with its state in
the catalog (merge/paused.py). Every step re-plans from the same three commits
(src's and dest's heads when it started, their base), applying the choices
made so far, so a step in a new process picks up exactly where the last ended:

    not started -> [inspecting schema] -> resolving schema -> [inspecting data]
                -> resolving data -> finished          (abort: back to not started)

Bracketed phases happen only in an interactive merge, which pauses there even
without conflicts. `continue` in a resolving phase with conflicts still open
fails and changes nothing; the finishing step writes exactly the commit a
clean merge would (both parents, compare-and-swap on dest).
"""
from __future__ import annotations

from pyspark.sql import DataFrame

from .. import errors
from ..connect import local_checkpoint
from ..context import WriteContext
from . import paused as P
from .conflict_tables import (SCHEMA_COLUMNS, SCHEMA_TABLE, assignments, relation_from_decided,
                              schema_view_name, view_name, safe_name)
from .merger import ConflictPolicy, MergeOptions, ThreeWayMerge
from .rebase import drop_scratch
from .report import Conflict, MergeResult
from .rules import ROW_RULES

def start(lakehouse: WriteContext, src: str, src_head: str, dest: str, dest_head: str, base: str, *,
          interactive: bool, message: str | None, author: str | None, drivers=None, views=()) -> MergeResult:
    lakehouse.store.refuse_if_paused(dest)
    paused = P.PausedMerge(dest, "merge", src, src_head, dest_head, base,
                           P.INSPECTING_SCHEMA if interactive else P.NOT_STARTED,
                           {"interactive": interactive, "message": message, "author": author,
                            "views": list(views or ())})
    return _advance(lakehouse, paused, drivers, continuing=False)


def continue_merge(lakehouse: WriteContext, dest: str, drivers=None) -> MergeResult:
    paused = P.require_open(lakehouse.store, dest)
    head = lakehouse.store.get_branch(dest).head
    if head != paused.dest_head:
        raise errors.InvalidArgument(f"'{dest}' moved since its merge paused (head {paused.dest_head[:12]}, now "
                                     f"{head[:12]}): abort the merge (abort_merge) and merge again")
    return _advance(lakehouse, paused, drivers, continuing=True)


def _result(paused: P.PausedMerge, status: str) -> MergeResult:
    return MergeResult(paused.src, paused.dest, paused.base, "interactive" if paused.interactive else "merge",
                       status)


def _planner(lakehouse, paused: P.PausedMerge, drivers, plan_data: bool = True):
    policy = ConflictPolicy("abort", {k.lower(): v for k, v in paused.takes.items()})
    options = MergeOptions(
        policy, paused.state.get("message"), paused.state.get("author"), drivers or {},
        tuple(paused.state.get("views", ())),
        schema_choices={k.lower(): v for k, v in paused.state.get("schema_choices", {}).items()},
        resolutions={name: read_relation(lakehouse, paused, name) for name in paused.relations},
        keyless_rows=True, plan_data=plan_data, finishing=paused.id)
    return ThreeWayMerge(lakehouse, paused.src, paused.src_head, paused.dest, paused.base, options)


class _Pause(Exception):
    """The data step stops at `phase` to show its rows or their conflicts (nothing written)."""

    def __init__(self, phase: str):
        super().__init__(phase)
        self.phase = phase


def _is_row_conflict(conflict: Conflict, planner) -> bool:
    """A conflict of rows the plan decided one by one (shown in a conflict relation), not of a whole table."""
    return conflict.rule in ROW_RULES and conflict.object_name in planner.data_plans


def _advance(lakehouse, paused: P.PausedMerge, drivers, continuing: bool) -> MergeResult:
    store = lakehouse.store
    phase = paused.phase
    if phase in (P.NOT_STARTED, P.INSPECTING_SCHEMA, P.RESOLVING_SCHEMA):
        result = _result(paused, "paused")
        planner = _planner(lakehouse, paused, drivers, plan_data=False)
        planner.plan(result)
        planner.release()
        paused.state["schema_rows"] = planner.schema_rows
        open_ = [c for c in result.conflicts if not _is_row_conflict(c, planner)]
        if phase == P.INSPECTING_SCHEMA and not continuing:
            return _pause(store, paused, P.INSPECTING_SCHEMA, result)
        if open_:
            if phase == P.RESOLVING_SCHEMA and continuing:
                raise errors.MergeConflict(_still_open(paused, len(open_), "schema"), report=result)
            return _pause(store, paused, P.RESOLVING_SCHEMA, result)
        if paused.interactive:
            phase = P.INSPECTING_DATA
        else:
            phase = P.RESOLVING_DATA
            continuing = False  # the schema step passed; the data step has not paused yet
    result = _result(paused, "paused")
    planner = _planner(lakehouse, paused, drivers)

    def first_look(planner, result) -> None:
        if phase == P.INSPECTING_DATA and paused.phase != P.INSPECTING_DATA:
            # First arrival: show every table the merge plans row by row (keyed, or keyless with contested segments).
            for name, data in planner.data_plans.items():
                _write_relation(lakehouse, paused, name, data)
            raise _Pause(P.INSPECTING_DATA)

    def conflicts(result) -> Exception:
        row_conflicts = [c for c in result.conflicts if _is_row_conflict(c, planner)]
        if phase == P.RESOLVING_DATA and continuing or not row_conflicts:
            return errors.MergeConflict(_still_open(paused, len(result.conflicts), "data"), report=result)
        for name in {c.object_name for c in row_conflicts} - set(paused.relations):
            _write_relation(lakehouse, paused, name, planner.data_plans[name])
        _refresh_counts(lakehouse, paused)
        return _Pause(P.RESOLVING_DATA)

    try:
        result.commit_id = planner.land(result, conflicts, after_plan=first_look)
    except _Pause as stop:
        return _pause(store, paused, stop.phase, result)
    result.status = "merged"
    _drop_files(lakehouse, paused)
    paused.phase = P.FINISHED
    paused.state = {"commit": result.commit_id, "interactive": paused.interactive}
    P.save(store, paused)
    return result


def _pause(store, paused: P.PausedMerge, phase: str, result: MergeResult) -> MergeResult:
    paused.phase = phase
    P.save(store, paused)
    result.status, result.phase = "paused", phase
    return result


def _still_open(paused: P.PausedMerge, count: int, what: str) -> str:
    return (f"the merge of '{paused.src}' into '{paused.dest}' still has {count} open {what} conflict(s), nothing "
            f"was written: resolve them (resolve_conflicts, or set merged values in the conflict relations) "
            f"or abort it (abort_merge)")


# ------------------------------------------------------------ relations
def _write_relation(lakehouse, paused: P.PausedMerge, name: str, data) -> None:
    keys, values = data.relation_keys, data.relation_values
    frame = relation_from_decided(data.decided, keys, values)
    paused.relations[name] = {"keys": keys, "values": values, "version": 0}
    _store_relation(lakehouse, paused, name, frame)


def _relation_path(paused: P.PausedMerge, name: str, version: int) -> str:
    return f"merges/{paused.id}/{safe_name(name)}/v{version}"


def _store_relation(lakehouse, paused: P.PausedMerge, name: str, frame: DataFrame) -> None:
    entry = paused.relations[name]
    path = _relation_path(paused, name, entry["version"] + 1 if "path" in entry else 0)
    frame.write.mode("overwrite").parquet(lakehouse.warehouse.uri(path))
    entry["version"] = int(path.rsplit("v", 1)[1])
    entry["path"] = path
    stored = lakehouse.spark.read.parquet(lakehouse.warehouse.uri(path))
    entry["rows"] = stored.count()
    entry["open"] = stored.filter("conflict").count()


def read_relation(lakehouse, paused: P.PausedMerge, name: str) -> DataFrame:
    return lakehouse.spark.read.parquet(lakehouse.warehouse.uri(paused.relations[name]["path"]))


def _refresh_counts(lakehouse, paused: P.PausedMerge) -> None:
    for name in paused.relations:
        paused.relations[name]["open"] = read_relation(lakehouse, paused, name).filter("conflict").count()


def _drop_files(lakehouse, paused: P.PausedMerge) -> None:
    if lakehouse.warehouse.exists(f"merges/{paused.id}"):
        lakehouse.warehouse.delete_dir(f"merges/{paused.id}")


def register_views(lakehouse, dest: str) -> dict[str, str]:
    """Temp views of a paused merge's relations: {table or 'schema': view name}."""
    paused = P.require_open(lakehouse.store, dest)
    spark = lakehouse.spark
    views = {}
    for name in paused.relations:
        views[name] = view_name(dest, name)
        read_relation(lakehouse, paused, name).createOrReplaceTempView(views[name])
    spark.createDataFrame([tuple(r.get(c) for c in _schema_fields()) for r in paused.schema_rows],
                          SCHEMA_COLUMNS).createOrReplaceTempView(schema_view_name(dest))
    views[SCHEMA_TABLE] = schema_view_name(dest)
    return views


def relation_of_view(lakehouse, view: str) -> tuple[str, str] | None:
    """(dest, table or 'schema') of the paused merge whose conflict view is named `view`, else None."""
    wanted = view.strip("`").lower()
    for paused in P.open_merges(lakehouse.store):
        if wanted == schema_view_name(paused.dest).lower():
            return paused.dest, SCHEMA_TABLE
        for table in paused.relations:
            if wanted == view_name(paused.dest, table).lower():
                return paused.dest, table
    return None


def _schema_fields() -> list[str]:
    return [part.split()[0] for part in SCHEMA_COLUMNS.split(",")]


# ------------------------------------------------------------- resolve
def resolve(lakehouse, dest: str, table: str | None = None, *, where: str | None = None, set: dict | None = None,
            take: str | None = None) -> dict:
    """Resolve rows of a paused merge's conflict relation with SQL (`where`, `set`), or in bulk (`take`).

    `table` None with `take` resolves every relation and table of the merge. Returns merge_status."""
    paused = P.require_open(lakehouse.store, dest)
    if paused.phase == P.REBASING:
        raise errors.InvalidArgument(f"'{dest}' has a paused rebase, not a merge: continue it with an on_conflict "
                                     f"handler (skip, replace) or abort it")
    if take is not None and take not in ("ours", "theirs"):
        raise errors.InvalidArgument(f"take must be ours or theirs, not '{take}'")
    if take is None and not set:
        raise errors.InvalidArgument("resolve_conflicts needs take (ours | theirs) or set (column: SQL expression)")
    names = _relation_names(paused, table)
    if take is not None:
        side = "our" if take == "ours" else "their"
        for name in (names if table is None else [table]):
            paused.takes[name] = take
            if name in paused.relations:
                values = paused.relations[name]["values"]
                updates = {**{f"merged_{c}": f"`{side}_{c}`" for c in values},
                           "merged_deleted": f"NOT {side}_row_exists", "conflict": "false"}
                _update_relation(lakehouse, paused, name, where or "conflict", updates)
        for row in paused.schema_rows:
            if table is None or row["table_name"].lower() == str(table).lower():
                paused.state.setdefault("schema_choices", {})[row["table_name"]] = take
    elif table is None or str(table).lower() == SCHEMA_TABLE:
        _update_schema(lakehouse, paused, where, set)
    else:
        _update_relation(lakehouse, paused, names[0], where, set)
    P.save(lakehouse.store, paused)
    return status(lakehouse, dest)


def _relation_names(paused: P.PausedMerge, table: str | None) -> list[str]:
    if table is None or str(table).lower() == SCHEMA_TABLE:
        return list(paused.relations) + [r["table_name"] for r in paused.schema_rows]
    lowered = {n.lower(): n for n in list(paused.relations) + [r["table_name"] for r in paused.schema_rows]}
    if str(table).lower() not in lowered:
        raise errors.InvalidArgument(f"table '{table}' has no conflict relation in the merge into '{paused.dest}': "
                                     f"see merge_status {paused.dest}")
    return [lowered[str(table).lower()]]


def _update_relation(lakehouse, paused: P.PausedMerge, name: str, where: str | None, updates: dict) -> None:
    if name not in paused.relations:
        raise errors.InvalidArgument(f"table '{name}' has no row-level conflict relation: settle it with take "
                                     f"ours or theirs")
    frame = read_relation(lakehouse, paused, name)
    _store_relation(lakehouse, paused, name, local_checkpoint(assignments(frame, where, updates)))


def _update_schema(lakehouse, paused: P.PausedMerge, where: str | None, updates: dict) -> None:
    fields = _schema_fields()
    frame = lakehouse.spark.createDataFrame([tuple(r.get(c) for c in fields) for r in paused.schema_rows],
                                            SCHEMA_COLUMNS)
    rows = [r.asDict() for r in assignments(frame, where, updates).collect()]  # one row per table: metadata
    choices = paused.state.setdefault("schema_choices", {})
    for row in rows:
        merged = row["merged_schema"]
        if merged is not None and merged == row["our_schema"]:
            choices[row["table_name"]] = "ours"
        elif merged is not None and merged == row["their_schema"]:
            choices[row["table_name"]] = "theirs"
        elif row["conflict"] is False and merged is None:
            raise errors.InvalidArgument(f"merged_schema of '{row['table_name']}' must be our_schema or "
                                         f"their_schema to resolve it")
        elif merged is not None and row["conflict"]:
            raise errors.InvalidArgument(f"merged_schema of '{row['table_name']}' must be our_schema or "
                                         f"their_schema, not '{merged}'")
    paused.state["schema_rows"] = rows


# -------------------------------------------------------------- status
def status(lakehouse, dest: str) -> dict:
    """What merge_status reports: the phase and the open conflicts of each table."""
    paused = P.load(lakehouse.store, dest)
    if paused is None:
        return {"dest": dest, "phase": P.NOT_STARTED, "tables": []}
    out = {"dest": dest, "phase": paused.phase, "kind": paused.kind, "src": paused.src,
           "src_head": paused.src_head, "dest_head": paused.dest_head, "tables": []}
    if paused.phase == P.FINISHED:
        out["commit"] = paused.state.get("commit")
        return out
    if paused.phase == P.REBASING:
        rebase = paused.state.get("rebase", {})
        out["tables"] = [{"table": c["object"], "kind": "rebase", "open conflicts": 1, "rows": "",
                          "rule": c["rule"], "view": ""} for c in rebase.get("conflicts", [])]
        out["rebase"] = {k: v for k, v in rebase.items() if k != "conflicts"}
        return out
    for row in paused.schema_rows:
        out["tables"].append({"table": row["table_name"], "kind": "schema", "open conflicts": int(bool(row["conflict"])),
                              "rows": "", "rule": row.get("rule") or "", "view": schema_view_name(dest)})
    for name, entry in paused.relations.items():
        out["tables"].append({"table": name, "kind": "data", "open conflicts": entry.get("open", 0),
                              "rows": entry.get("rows", 0), "rule": "", "view": view_name(dest, name)})
    return out


def abort(lakehouse, dest: str) -> dict:
    """End a paused merge or rebase; dest is left exactly as it was (nothing was written to it)."""
    paused = P.require_open(lakehouse.store, dest)
    if paused.kind == "rebase":
        drop_scratch(lakehouse, paused)
    _drop_files(lakehouse, paused)
    P.remove(lakehouse.store, dest)
    if lakehouse.spark_started:  # views exist only in a session that has started Spark
        for name in paused.relations:
            lakehouse.spark.catalog.dropTempView(view_name(dest, name))
    return status(lakehouse, dest)


def open_rows(lakehouse, dest: str, limit: int = 20) -> dict[str, list[dict]]:
    """The first `limit` open conflicts of each relation of a paused merge, for printing."""
    paused = P.require_open(lakehouse.store, dest)
    shown = {}
    for name, entry in paused.relations.items():
        if entry.get("open"):
            frame = read_relation(lakehouse, paused, name).filter("conflict")
            shown[name] = [r.asDict() for r in frame.limit(int(limit)).collect()]
    schema = [r for r in paused.schema_rows if r.get("conflict")]
    if schema:
        shown[SCHEMA_TABLE] = schema
    return shown


def status_rows(state: dict) -> list[dict]:
    return [{k: ("" if v is None else v) for k, v in t.items()} for t in state["tables"]]


def status_title(state: dict) -> str:
    if state["phase"] == P.NOT_STARTED:
        return f"no merge into {state['dest']} is paused (not started)"
    title = f"{state.get('kind', 'merge')} of {state['src']} into {state['dest']}: {state['phase']}"
    if state.get("commit"):
        title += f" (commit {state['commit'][:12]})"
    if state.get("rebase"):
        progress = state["rebase"]
        title += f", replayed {progress.get('done', 0)} of {len(progress.get('commits', []))} commit(s)"
    return title
