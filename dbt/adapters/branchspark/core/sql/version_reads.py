"""Reads at another version in a query's text, and the table functions, as session temp views.

    SELECT * FROM shop.orders VERSION AS OF 'dev'              -- a branch, a commit id or 'branch@time'
    SELECT * FROM shop.orders TIMESTAMP AS OF '2026-11-21 10:00'   -- the session's branch at that time
    SELECT * FROM branch_changes('shop.orders', 'a1b2c3d4', 'main' [, net])
    SELECT * FROM branch_diff('main', 'dev', 'shop.orders' [, mode])

Spark's own parser knows `VERSION AS OF`, but branch relations are temp views, which it cannot time-travel;
and `branch_changes` / `branch_diff` are no functions of Spark's. `find_relations` finds them in the text
(pure Python, with the positions a syntax error points at); `rewrite` puts the name of a temp view over the
core's read, change feed or diff in their place, so Spark then plans the query as usual. The views are lazy
plans pinned to the commits resolved at the statement, under fresh names.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..changes.request import make_request
from ..diff.relation import table_diff_relation
from ..errors import InvalidArgument
from ..operations import ObjectKind
from ..sql_text import COMMENT, IDENT, OTHER, QUOTED, SPACE, STRING, tokens, unquote
from .statements import SqlSyntaxError, without_lead

VERSION_VIEW_PREFIX = "bs_version__"
FUNCTION_VIEW_PREFIX = "bs_function__"
TABLE_FUNCTIONS = {"branch_changes": ("table", "from", "to", "net"), "branch_diff": ("from", "to", "table", "mode")}
_REQUIRED = {"branch_changes": 2, "branch_diff": 3}


@dataclass(frozen=True)
class VersionRead:
    """`table VERSION AS OF 'ref'` (ref set) or `table TIMESTAMP AS OF 'time'` (time set)."""

    table: str  # database.table, lower case
    ref: str | None = None
    time: str | None = None


@dataclass(frozen=True)
class TableFunction:
    name: str  # branch_changes | branch_diff
    args: dict  # by TABLE_FUNCTIONS' names; values: str, int, bool or None


@dataclass(frozen=True)
class Found:
    start: int
    end: int  # the span of `sql` the temp view's name replaces
    relation: VersionRead | TableFunction


def find_relations(sql: str) -> list[Found]:
    """Every version read and table function of `sql`, in order (none inside strings or comments)."""
    try:
        return _find(sql)
    except SqlSyntaxError as bad:  # counted from the statement's first word, as the branch statements are
        statement, lead = without_lead(sql)
        placed = SqlSyntaxError(statement, bad.position - lead, bad.expected, bad.found)
        placed.lead = lead
        raise placed from None


def _find(sql: str) -> list[Found]:
    toks = [(kind, s, e) for kind, s, e in tokens(sql) if kind not in (SPACE, COMMENT)]
    found, i = [], 0
    while i < len(toks):
        kind, s, e = toks[i]
        word = sql[s:e].lower()
        if kind == IDENT and word in TABLE_FUNCTIONS and _is(sql, toks, i + 1, "("):
            found_function, i = _table_function(sql, toks, i)
            found.append(found_function)
            continue
        if kind in (IDENT, QUOTED) and not _is(sql, toks, i - 1, "."):
            name_end = i
            while _is(sql, toks, name_end + 1, ".") and name_end + 2 < len(toks) \
                    and toks[name_end + 2][0] in (IDENT, QUOTED):
                name_end += 2
            words = [sql[ts:te].lower() for _, ts, te in toks[name_end + 1:name_end + 4]]
            if len(words) == 3 and words[0] in ("version", "timestamp") and words[1:] == ["as", "of"] \
                    and all(k == IDENT for k, _, _ in toks[name_end + 1:name_end + 4]):
                found.append(_version_read(sql, toks, i, name_end))
                i = name_end + 5
                continue
            i = name_end + 1
            continue
        i += 1
    return found


def _is(sql: str, toks, i: int, char: str) -> bool:
    return 0 <= i < len(toks) and toks[i][0] == OTHER and sql[toks[i][1]:toks[i][2]] == char


def _version_read(sql: str, toks, first: int, last: int) -> Found:
    parts = [unquote(sql[s:e]) for kind, s, e in toks[first:last + 1] if kind in (IDENT, QUOTED)]
    start = toks[first][1]
    if len(parts) == 1 and "." in parts[0]:  # `db.t` in one pair of backquotes
        parts = parts[0].split(".", 1)
    if len(parts) < 2:
        raise SqlSyntaxError(sql, start, "a table as database.table before VERSION AS OF", f"'{parts[0]}'")
    table = ".".join(parts[-2:]).lower()
    keyword = sql[toks[last + 1][1]:toks[last + 1][2]].lower()
    if last + 4 >= len(toks) or toks[last + 4][0] != STRING:
        at = toks[last + 4][1] if last + 4 < len(toks) else len(sql)
        what = ("a quoted version after VERSION AS OF: a branch, a commit id or 'branch@time'" if keyword == "version"
                else "a quoted time after TIMESTAMP AS OF, e.g. '2026-11-21 10:00:00'")
        raise SqlSyntaxError(sql, at, what, _describe(sql, toks, last + 4))
    value = _string_value(sql, toks[last + 4])
    relation = VersionRead(table, ref=value) if keyword == "version" else VersionRead(table, time=value)
    return Found(start, toks[last + 4][2], relation)


def _table_function(sql: str, toks, at: int) -> tuple[Found, int]:
    name = sql[toks[at][1]:toks[at][2]].lower()
    names = TABLE_FUNCTIONS[name]
    values, i = [], at + 2
    while True:
        if _is(sql, toks, i, ")") and not values:
            break
        kind, s, e = toks[i] if i < len(toks) else (None, len(sql), len(sql))
        if kind == STRING:
            values.append(_string_value(sql, toks[i]))
            i += 1
        elif kind == IDENT and sql[s:e].lower() in ("null", "true", "false"):
            values.append({"null": None, "true": True, "false": False}[sql[s:e].lower()])
            i += 1
        elif kind == OTHER and sql[s].isdigit():  # a number is one OTHER token per digit
            j = i
            while j < len(toks) and toks[j][0] in (OTHER, IDENT) and sql[toks[j][1]:toks[j][2]].isalnum() \
                    and (j == i or toks[j][1] == toks[j - 1][2]):
                j += 1
            number = sql[s:toks[j - 1][2]]
            values.append(0 if number.strip("0") == "" else number)  # 0: from the start; else an id prefix
            i = j
        else:
            raise SqlSyntaxError(sql, s, f"a quoted argument of {name}({', '.join(names)})", _describe(sql, toks, i))
        if _is(sql, toks, i, ","):
            i += 1
            continue
        if _is(sql, toks, i, ")"):
            break
        raise SqlSyntaxError(sql, toks[i][1] if i < len(toks) else len(sql), f"',' or ')' in {name}(...)",
                             _describe(sql, toks, i))
    if not _REQUIRED[name] <= len(values) <= len(names):
        raise SqlSyntaxError(sql, toks[at][1], f"{name}({', '.join(names)}) with {_REQUIRED[name]} to "
                                               f"{len(names)} arguments", f"{len(values)}")
    args = {key: value for key, value in zip(names, values)}
    return Found(toks[at][1], toks[i][2], TableFunction(name, args)), i + 1


def _string_value(sql: str, token) -> str:
    text = sql[token[1]:token[2]]
    quote = text[0]
    return text[1:-1].replace(quote * 2, quote).replace("\\" + quote, quote)


def _describe(sql: str, toks, i: int) -> str:
    if i >= len(toks):
        return "the end of the statement"
    return f"'{sql[toks[i][1]:toks[i][2]]}'"


def rewrite(sql: str, found: list[Found], view_names: list[str]) -> str:
    """`sql` with each found relation's span replaced by its temp view's (backquoted) name."""
    out, at = [], 0
    for item, name in zip(found, view_names):
        out += [sql[at:item.start], f"`{name}`"]
        at = item.end
    return "".join(out + [sql[at:]])


# -- the temp views ------------------------------------------------------------------------------------------
def register(lakehouse, relation: VersionRead | TableFunction, branch: str) -> str:
    """A temp view over `relation` read on `lakehouse` (`branch`: the session's, for times and defaults);
    returns its name."""
    if isinstance(relation, VersionRead):
        frame = _version_frame(lakehouse, relation, branch)
        prefix = VERSION_VIEW_PREFIX
    else:
        frame = _function_frame(lakehouse, relation, branch)
        prefix = FUNCTION_VIEW_PREFIX
    name = f"{prefix}{uuid.uuid4().hex[:16]}"
    # kept after the statement: through Spark Connect a query's DataFrame resolves its views when it runs
    frame.createOrReplaceTempView(name)
    return name


def _version_frame(lakehouse, read: VersionRead, branch: str):
    snapshot = lakehouse.snapshot(read.ref) if read.ref is not None else lakehouse.snapshot(branch, read.time)
    state = snapshot.state(read.table)
    if state.kind == ObjectKind.VIEW:  # its SQL names the session's relations, not those of that version
        raise InvalidArgument(f"{read.table} is a view: VERSION AS OF and TIMESTAMP AS OF read tables; read "
                              f"the tables it selects from at that version instead")
    return snapshot.read(read.table)


def _function_frame(lakehouse, call: TableFunction, branch: str):
    args = call.args
    if call.name == "branch_changes":
        request = make_request(lakehouse, str(args["table"]), args.get("from"), args.get("to"), None,
                               args.get("net", False), branch)
        return request.frame(lakehouse)
    to = args["to"] if args.get("to") is not None else branch
    return table_diff_relation(lakehouse, str(args["table"]).lower(), args["from"], to, args.get("mode"))
