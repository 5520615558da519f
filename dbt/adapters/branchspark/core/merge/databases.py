"""Databases in a merge (SPEC 3.1, 3.2): a new one of src's is added, one both sides had merges by the matrix.

Called by the merge's plan (merge/merger.py's ThreeWayMerge, `planner` here) before its tables.
"""
from __future__ import annotations

from ..operations import ObjectKind, Op
from .attributes import merge_properties, three_way
from .report import Conflict, Outcome
from .rules import Rule, database_cell, matrix_ops


def plan_databases(planner) -> None:
    """SPEC 3.1 and 3.2 for every database: added, merged, or dropped (after the tables' plan: merger.py)."""
    ids = sorted(set(planner.base.databases) | set(planner.src.databases) | set(planner.dest.databases))
    for database_id in ids:
        base, src, dest = (planner._state(ns, ObjectKind.DATABASE, database_id)
                           for ns in (planner.base, planner.src, planner.dest))
        prefer = planner.options.policy.prefer(src.name if src else dest.name if dest else "")
        if base is None:
            if src is not None and dest is None:
                _add_new_database(planner, database_id, src, prefer)
            continue
        _merge_database(planner, database_id, base, src, dest, prefer)


def _add_new_database(planner, database_id: str, src, prefer: str | None) -> None:
    result = planner.result
    clash = planner.ns.database_id(src.name, required=False)
    if clash is not None:
        if planner._conflict(result, Conflict("database", src.name, Op.CREATE, Op.CREATE, Rule.SAME_NAME,
                                              "same name, different id"), prefer) or prefer == "ours":
            return
    planner.ns.adopt_database(src)
    planner.tx.record(ObjectKind.DATABASE, database_id, src.name, Op.CREATE, merged=True)
    result.outcomes.append(Outcome("database", src.name, "added"))


def _merge_database(planner, database_id: str, base, src, dest, prefer: str | None) -> None:
    """SPEC 3.2: a database the base had, by the matrix; a drop of src's lands after the tables' plan."""
    result = planner.result
    src_ops = matrix_ops(planner.src_side.database(database_id).ops)
    dest_ops = matrix_ops(planner.dest_side.database(database_id).ops)
    if not src_ops:
        return
    clashes = [(src_op, dest_op, *found) for src_op in sorted(src_ops) for dest_op in sorted(dest_ops)
               if (found := database_cell(src_op, dest_op, base, src, dest))[0] is not None]
    name = (src or dest or base).name
    stands = [planner._conflict(result, Conflict("database", name, s, d, rule, involved), prefer)
              for s, d, rule, involved in clashes]
    if any(stands) or (clashes and prefer == "ours"):
        return
    if src is None:
        if dest is not None:
            planner.drop_databases.append(database_id)
            result.outcomes.append(Outcome("database", name, "dropped"))
        return
    if dest is None:
        return
    merged = dest.evolve(name=three_way(base.name, src.name, dest.name),
                         properties=merge_properties(base.properties, src.properties, dest.properties))
    if (merged.name, merged.properties) != (dest.name, dest.properties):
        planner.ns.put_database(merged)
        if merged.name != dest.name:
            planner.tx.record(ObjectKind.DATABASE, database_id, merged.name, Op.MODIFY_NAME, old_name=dest.name)
        if merged.properties != dest.properties:
            planner.tx.record(ObjectKind.DATABASE, database_id, merged.name, Op.SET_PROPERTIES,
                              properties=dict(merged.properties))
        result.outcomes.append(Outcome("database", merged.name, "merged"))
