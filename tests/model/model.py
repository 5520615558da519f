"""An executable model of SPEC sections 3-4 for one table on two branches, in plain Python.

It shares no code with the engine: rows are dicts from column id to value, a keyless row has an
identity (the segment it was first written to, its position) and a root (the base row an update image
replaces, else itself), and a merge is computed from the three versions and what each side did. The
readings of the SPEC it needed are the "(model)" bullets of the issue 19 notes, repeated where used.
"""
from __future__ import annotations

import copy
import itertools
from collections import Counter
from dataclasses import dataclass, field

TYPE_RANK = {"smallint": 0, "int": 1, "bigint": 2}
KEY = 0  # column id of a keyed table's key column
ROW_CONFLICT_CELLS = {("delete", "insert"), ("update", "insert")}  # SPEC 3.3, whatever the rows


@dataclass(frozen=True)
class Column:
    id: int
    name: str
    type: str


@dataclass(frozen=True)
class Pred:
    """`column <op> value` over a column id; NULL never matches (SQL)."""
    column: int
    op: str  # "=", ">=", "%2="
    value: int

    def __call__(self, values: dict) -> bool:
        v = values.get(self.column)
        if v is None:
            return False
        if self.op == "=":
            return v == self.value
        if self.op == ">=":
            return v >= self.value
        if self.op == "%2=":
            return v % 2 == self.value
        raise ValueError(self.op)


@dataclass(frozen=True)
class Expr:
    """A new value: ("const", c) or ("inc", k) = coalesce(column, 0) + k."""
    kind: str
    value: int

    def __call__(self, old):
        return self.value if self.kind == "const" else (old or 0) + self.value


@dataclass
class Row:
    root: tuple  # the base row this row's values descend from through updates, else its own identity
    values: dict  # column id -> value


class Universe:
    """Ids unique across branches: segments (one per write) and columns."""

    def __init__(self):
        self.segments = itertools.count(1)
        self.columns = itertools.count(1)


@dataclass
class Table:
    """One table's version on one branch."""
    universe: Universe
    keyed: bool
    columns: list[Column]
    rows: dict = field(default_factory=dict)  # identity (segment, position) -> Row

    @staticmethod
    def create(universe: Universe, keyed: bool, columns: list[tuple[str, str]], rows: list[dict] = ()) -> "Table":
        cols = [Column(KEY if keyed and i == 0 else next(universe.columns), name, type_)
                for i, (name, type_) in enumerate(columns)]
        table = Table(universe, keyed, cols)
        table._write([table._by_id(r) for r in rows])
        return table

    def copy(self) -> "Table":
        return Table(self.universe, self.keyed, list(self.columns), copy.deepcopy(self.rows))

    # ------------------------------------------------------------ reading
    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def _by_id(self, row: dict) -> dict:
        """A row given by column name -> by column id."""
        return {self.column(name).id: value for name, value in row.items()}

    def project(self, values: dict, columns=None) -> tuple:
        return tuple(values.get(c.id) for c in (columns or self.columns))

    def read(self, columns=None) -> Counter:
        """The rows as a multiset of tuples in `columns`' order (default: this version's)."""
        return Counter(self.project(r.values, columns) for r in self.rows.values())

    def named_rows(self) -> Counter:
        """The rows as a multiset of sorted (name, value) tuples: order-free, as the test compares."""
        return Counter(tuple(sorted((c.name, r.values.get(c.id)) for c in self.columns)) for r in self.rows.values())

    def schema(self) -> dict:
        return {c.name: c.type for c in self.columns}

    def by_key(self) -> dict:
        return {r.values[KEY]: r for r in self.rows.values()}

    # ------------------------------------------------------------ writing
    def _write(self, rows: list[dict], roots: list | None = None) -> list:
        """Rows (by column id) into a new segment; returns their identities."""
        if not rows:
            return []
        segment = next(self.universe.segments)
        ids = []
        for position, values in enumerate(rows):
            identity = (segment, position)
            full = {c.id: values.get(c.id) for c in self.columns}
            self.rows[identity] = Row(roots[position] if roots else identity, full)
            ids.append(identity)
        return ids


@dataclass
class Side:
    """What one branch did to a table since the merge base: operations that changed rows, and how each base
    row first left (update, delete or overwrite). A write that changed no row is no operation."""
    base_ids: frozenset
    ops: set = field(default_factory=set)
    removed: dict = field(default_factory=dict)  # base identity -> "update" | "delete" | "overwrite"
    updates: Counter = field(default_factory=Counter)  # base identity -> updates of it and its later images
    compacted: bool = False
    compacted_before_update: bool = False  # a compaction, then an update (a shape the model test reports)

    @property
    def overwrote(self) -> bool:
        return "overwrite" in self.ops

    def touched(self, kind: str) -> set:
        """Base segments whose rows this side's `kind` (update/delete) operations removed first (A1, A3)."""
        return {identity[0] for identity, how in self.removed.items() if how == kind}


class Branch:
    """A table on a branch, with the side log since the fork: the operations of SPEC 2 on it."""

    def __init__(self, table: Table, base: Table | None = None):
        self.table = table
        self.side = Side(frozenset((base or table).rows))

    def fork(self) -> "Branch":
        return Branch(self.table.copy())

    @staticmethod
    def merged(outcome: "MergeOutcome") -> "Branch":
        """dest after a merge, with what it did since the base (for a later merge from the same base)."""
        branch = Branch(outcome.table)
        branch.side = outcome.side
        return branch

    def _removed(self, identities, how: str) -> None:
        for identity in identities:
            if identity in self.side.base_ids:
                self.side.removed.setdefault(identity, how)
            del self.table.rows[identity]

    # ------------------------------------------------------------ DML
    def insert(self, rows: list[dict]) -> None:
        """rows by column name; a keyed table takes only keys it does not hold (the test's convention)."""
        t = self.table
        rows = [t._by_id(r) for r in rows]
        if t.keyed:
            held = set(t.by_key())
            fresh = {}
            for r in rows:
                if r[KEY] not in held:
                    fresh.setdefault(r[KEY], r)
            rows = list(fresh.values())
        if rows:
            t._write(rows)
            self.side.ops.add("insert")

    def delete(self, pred: Pred) -> None:
        doomed = [i for i, r in self.table.rows.items() if pred(r.values)]
        if doomed:
            self._removed(doomed, "delete")
            self.side.ops.add("delete")

    def update(self, pred: Pred, column: int, expr: Expr) -> None:
        """Rows the predicate matches whose value changes get a new image (new identity, same root);
        rows it leaves equal are untouched."""
        changed = [(i, r) for i, r in self.table.rows.items()
                   if pred(r.values) and expr(r.values.get(column)) != r.values.get(column)]
        if not changed:
            return
        images = [{**r.values, column: expr(r.values.get(column))} for _, r in changed]
        roots = [r.root for _, r in changed]
        self.side.updates.update(root for root in roots if root in self.side.base_ids)
        self.side.compacted_before_update |= self.side.compacted
        self._removed([i for i, _ in changed], "update")
        self.table._write(images, roots)
        self.side.ops.add("update")

    def upsert(self, rows: list[dict]) -> None:
        """Keyed: a key absent is inserted, a key present with other values replaced (an update)."""
        t = self.table
        current = t.by_key()
        latest = {}
        for r in rows:
            latest[t._by_id(r)[KEY]] = t._by_id(r)
        inserts, images, roots, doomed = [], [], [], []
        for key, values in latest.items():
            full = {c.id: values.get(c.id) for c in t.columns}
            if key not in current:
                inserts.append(full)
            elif t.project(current[key].values) != t.project(full):
                identity = next(i for i, r in t.rows.items() if r is current[key])
                doomed.append(identity)
                images.append(full)
                roots.append(current[key].root)
        if doomed:
            self._removed(doomed, "update")
            t._write(images, roots)
            self.side.ops.add("update")
        if inserts:
            t._write(inserts)
            self.side.ops.add("insert")

    def overwrite(self, rows: list[dict]) -> None:
        """The whole table becomes `rows`; rows it reproduces keep their identity (no change)."""
        t = self.table
        wanted = Counter(t.project(t._by_id(r)) for r in rows)
        have = {}
        for identity in sorted(t.rows):
            have.setdefault(t.project(t.rows[identity].values), []).append(identity)
        doomed, added = [], []
        for image in set(wanted) | set(have):
            ids = have.get(image, [])
            keep = min(len(ids), wanted[image])
            doomed += ids[keep:]
            added += [dict(zip([c.id for c in t.columns], image))] * (wanted[image] - keep)
        if doomed or added:
            self._removed(doomed, "overwrite")
            t._write(added)
            self.side.ops.add("overwrite")

    def compact(self) -> None:
        """Changes no row and keeps every identity: nothing to model but that it happened."""
        self.side.compacted = True

    # ------------------------------------------------------------ DDL
    def add_column(self, name: str, type_: str) -> None:
        t = self.table
        t.columns.append(Column(next(t.universe.columns), name, type_))

    def drop_column(self, name: str) -> None:
        """Rows keep the value under the dropped id, as files do: a change feed in a schema that still has the
        column (the other side's, A6.3 theirs) shows it."""
        self.table.columns.remove(self.table.column(name))

    def rename_column(self, old: str, new: str) -> None:
        t = self.table
        t.columns = [Column(c.id, new, c.type) if c.name == old else c for c in t.columns]

    def widen(self, name: str, type_: str) -> None:
        t = self.table
        assert TYPE_RANK[type_] > TYPE_RANK[t.column(name).type], "a type only widens"
        t.columns = [Column(c.id, c.name, type_) if c.name == name else c for c in t.columns]


@dataclass
class Conflict:
    rule: str  # CONFLICT, A1, A3, A6.1, 3.4 insert, 3.4 update/delete, 3.4 cells
    detail: str = ""


@dataclass
class MergeOutcome:
    conflicts: list[Conflict]
    table: Table | None  # the merged version; None when conflicts stop the merge (abort)
    side: Side | None = None  # what the merge commit did relative to the base, for a later merge

    @property
    def rules(self) -> set:
        return {c.rule for c in self.conflicts}


# ---------------------------------------------------------------- schema (3.3 A6, 3.5)
def merge_schema(base: Table, src: Table, dest: Table, prefer: str | None) -> tuple[list[Column], list[Conflict]]:
    b = {c.id: c for c in base.columns}
    s = {c.id: c for c in src.columns}
    d = {c.id: c for c in dest.columns}
    merged, conflicts = [], []
    for cid in list(d) + [c for c in s if c not in d]:
        if cid in b and (cid not in s or cid not in d):
            continue  # dropped on a side: drop wins
        if cid not in b:
            merged.append(s.get(cid) or d[cid])
            continue
        name = s[cid].name if s[cid].name != b[cid].name else d[cid].name
        # A6.1 (as the seed says): both sides altered the column (a rename or a type) and src's final type,
        # which becomes dest's, is narrower than dest's.
        s_altered, d_altered = s[cid] != b[cid], d[cid] != b[cid]
        type_ = s[cid].type if s[cid].type != b[cid].type else d[cid].type
        if s_altered and d_altered and TYPE_RANK[d[cid].type] > TYPE_RANK[s[cid].type]:
            conflicts.append(Conflict("A6.1", name))
            type_ = d[cid].type if prefer == "ours" else s[cid].type
        merged.append(Column(cid, name, type_))
    return merged, conflicts


# ---------------------------------------------------------------- merge (3.3, 3.4, 3.6)
def merge(base: Table, src: Branch, dest: Branch, on_conflict: str = "abort") -> MergeOutcome:
    """Merge src's table into dest's, from their common `base` version. on_conflict: abort | ours | theirs."""
    prefer = None if on_conflict == "abort" else on_conflict
    columns, conflicts = merge_schema(base, src.table, dest.table, prefer)
    if not columns:
        # A6.3 (beyond SPEC, which is silent): the drops of both sides leave no column, so no row can be compared;
        # only the operation pairs the matrix forbids are reported with it, and ours/theirs take that side's
        # table as a whole.
        conflicts += _forbidden_pairs(src.side, dest.side) + [Conflict("A6.3")]
        if prefer is None:
            return MergeOutcome(conflicts, None)
        chosen = src if prefer == "theirs" else dest
        return MergeOutcome(conflicts, chosen.table.copy(),
                            Side(chosen.side.base_ids, set(chosen.side.ops), dict(chosen.side.removed)))
    if base.keyed:
        rows, row_conflicts = _merge_keyed(base, src.table, dest.table, columns, prefer)
    else:
        rows, row_conflicts = _merge_keyless(base, src, dest, columns, prefer)
    conflicts += row_conflicts
    if conflicts and prefer is None:
        return MergeOutcome(conflicts, None)
    table = Table(base.universe, base.keyed, columns)
    table.rows = rows
    side = Side(src.side.base_ids, src.side.ops | dest.side.ops, {**src.side.removed, **dest.side.removed})
    return MergeOutcome(conflicts, table, side)


def _values(row: Row | None, columns: list[Column]) -> tuple | None:
    return None if row is None else tuple(row.values.get(c.id) for c in columns)


def _merge_keyed(base: Table, src: Table, dest: Table, columns: list[Column], prefer: str | None):
    """SPEC 3.4: per key, by values against the base (a side whose row equals the base row did not change it)."""
    b, s, d = base.by_key(), src.by_key(), dest.by_key()
    key_index = [c.id for c in columns].index(KEY)
    merged_rows, conflicts = [], []
    for key in sorted(set(b) | set(s) | set(d)):
        bv, sv, dv = (_values(x.get(key), columns) for x in (b, s, d))
        if sv == bv:
            result = dv
        elif dv == bv or sv == dv:
            result = sv
        elif bv is not None and sv is not None and dv is not None:
            cells, clash = [], False
            for i in range(len(columns)):
                if sv[i] == bv[i] or sv[i] == dv[i]:
                    cells.append(dv[i])
                elif dv[i] == bv[i]:
                    cells.append(sv[i])
                else:
                    clash = True
                    cells.append(sv[i] if prefer == "theirs" else dv[i])
            if clash:
                conflicts.append(Conflict("3.4 cells", repr(key)))
            result = tuple(cells)
        else:
            conflicts.append(Conflict("3.4 insert" if bv is None else "3.4 update/delete", repr(key)))
            result = sv if prefer == "theirs" else dv
        if result is not None:
            assert result[key_index] == key
            merged_rows.append(result)
    rows = {("merged", i): Row(("merged", i), dict(zip([c.id for c in columns], r))) for i, r in
            enumerate(merged_rows)}
    return rows, conflicts


def _merge_keyless(base: Table, src: Branch, dest: Branch, columns: list[Column], prefer: str | None):
    s_side, d_side = src.side, dest.side
    conflicts = _forbidden_pairs(s_side, d_side)
    if s_side.overwrote or d_side.overwrote:
        return _count_merge(base, src, dest, columns), conflicts
    a1 = s_side.touched("update") & d_side.touched("delete")
    a3 = s_side.touched("update") & d_side.touched("update")
    conflicts += [Conflict("A1", repr(seg)) for seg in sorted(a1)] + [Conflict("A3", repr(seg)) for seg in sorted(a3)]
    # Identity rules: base rows neither side removed, plus each side's new rows (A2: deleted once).
    s_rows, d_rows = dict(src.table.rows), dict(dest.table.rows)
    base_ids = set(base.rows)
    contested = contested_rows(s_side, d_side)
    if prefer and contested:
        # 3.6: a contested base row takes the preferred side's final version: the other side's change of it,
        # with its later images, is dropped. Every other row merges by the rules, as without the conflict.
        loser = s_rows if prefer == "ours" else d_rows
        for identity in list(loser):
            if identity not in base_ids and loser[identity].root in contested:
                del loser[identity]
        for identity in contested:
            loser[identity] = base.rows[identity]
    rows = {i: r for i, r in base.rows.items() if i in s_rows and i in d_rows}
    rows.update({i: r for i, r in s_rows.items() if i not in base_ids})
    rows.update({i: r for i, r in d_rows.items() if i not in base_ids})
    return rows, conflicts


def contested_rows(s_side: Side, d_side: Side) -> set:
    """SPEC 3.6 on keyless tables: the base rows ours/theirs settle, those a src update and a dest update or
    delete both changed (each in a segment A1/A3 contest). A CONFLICT cell (an update or delete on src
    against an insert on dest) contests no row: an insert is of new rows."""
    return {identity for identity, how in s_side.removed.items()
            if how == "update" and d_side.removed.get(identity) in ("update", "delete")}


def _forbidden_pairs(s_side: Side, d_side: Side) -> list[Conflict]:
    """The row operation pairs the matrix marks CONFLICT (keyless tables: keyed ones decide per key)."""
    return [Conflict("CONFLICT", f"{a} on src, {b} on dest")
            for a, b in sorted(ROW_CONFLICT_CELLS) if a in s_side.ops and b in d_side.ops]


def _count_merge(base: Table, src: Branch, dest: Branch, columns: list[Column]) -> dict:
    """SPEC 3.3 overwrites on keyless tables: each distinct row's count merges three-way, after A4 drops
    src's update images of base rows dest overwrote."""
    b, d = base.read(columns), dest.table.read(columns)
    s_rows = dict(src.table.rows)
    if dest.side.overwrote:
        # A4 holds whether or not src overwrote too. dest's overwrites removed some copies of a base row (SPEC
        # 3.3: "base rows that dest's overwrite removed or changed"; not those it kept and changed later by
        # another operation): the copies src's own overwrite removed first (an overwrite removes the last
        # copies, on either side), then the ones src updated, whose updates are dropped.
        # Copies are matched as whole base rows (all the base's columns), not in the merged columns: two base
        # rows that differ only in a column the merge drops are different rows to an overwrite.
        whole = base.columns
        overwritten = Counter(_values(base.rows[identity], whole)
                              for identity, how in dest.side.removed.items() if how == "overwrite")
        updated, src_overwrote = {}, Counter()  # base image -> base identities src updated | overwrote
        for identity, how in sorted(src.side.removed.items()):
            if how == "update":
                updated.setdefault(_values(base.rows[identity], whole), []).append(identity)
            elif how == "overwrite":
                src_overwrote[_values(base.rows[identity], whole)] += 1
        for image, identities in updated.items():
            dropped = identities[:max(0, overwritten[image] - src_overwrote[image])]
            for identity in dropped:
                for i in [i for i, r in s_rows.items() if r.root == identity]:
                    del s_rows[i]
                s_rows[identity] = base.rows[identity]
    s = Counter(_values(r, columns) for r in s_rows.values())
    merged = Counter()
    for image in set(b) | set(s) | set(d):
        delta_s, delta_d = s[image] - b[image], d[image] - b[image]
        merged[image] = max(0, d[image] + (delta_s if delta_s != delta_d else 0))
    rows, n = {}, itertools.count()
    for image, count in sorted(merged.items(), key=repr):
        for _ in range(count):
            identity = ("merged", next(n))
            rows[identity] = Row(identity, dict(zip([c.id for c in columns], image)))
    return rows
