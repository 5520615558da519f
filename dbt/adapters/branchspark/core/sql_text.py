"""Lexical helpers over Spark SQL text: split statements, find and rewrite table names.

Branch relations live in the Spark session as temp views named with one
backquoted identifier, `` `schema.table` ``. SQL written by hand (tests, hooks,
analyses) says `schema.table`, which Spark would look up in its own catalog;
`qualify_branch_relations` rewrites such names when they denote a relation of
the branch. The scanner skips string literals, comments and quoted names, so
text inside them is never touched.
"""

import re
from typing import Callable, Iterator, List, Optional, Tuple

_IDENT_START = re.compile(r"[A-Za-z_]")
_IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")

# token kinds
IDENT, QUOTED, STRING, COMMENT, SPACE, OTHER = "ident", "quoted", "string", "comment", "space", "other"


def tokens(sql: str) -> Iterator[Tuple[str, int, int]]:
    """(kind, start, end) over `sql`; every character belongs to exactly one token."""
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":
            j = i + 1
            while j < n:
                if sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:  # doubled quote
                        j += 2
                        continue
                    break
                j += 1
            yield STRING, i, min(j + 1, n)
            i = j + 1
        elif c == "`":
            j = i + 1
            while j < n:
                if sql[j] == "`":
                    if j + 1 < n and sql[j + 1] == "`":
                        j += 2
                        continue
                    break
                j += 1
            yield QUOTED, i, min(j + 1, n)
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            yield COMMENT, i, j
            i = j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            j = n if j < 0 else j + 2
            yield COMMENT, i, j
            i = j
        elif c.isspace():
            j = i
            while j < n and sql[j].isspace():
                j += 1
            yield SPACE, i, j
            i = j
        elif _IDENT_START.match(c):
            j = i
            while j < n and _IDENT_CHAR.match(sql[j]):
                j += 1
            yield IDENT, i, j
            i = j
        else:
            yield OTHER, i, i + 1
            i += 1


def split_statements(sql: str) -> List[str]:
    """Top-level statements of `sql`, split on `;` outside literals and comments."""
    return [sql[start:end] for start, end in statement_spans(sql)]


def statement_spans(sql: str) -> List[Tuple[int, int]]:
    """(start, end) of each top-level statement of `sql` (split on `;` outside literals and comments)."""
    spans, start = [], 0
    for kind, s, e in tokens(sql):
        if kind == OTHER and sql[s] == ";":
            spans.append((start, s))
            start = e
    spans.append((start, len(sql)))
    return [(s, e) for s, e in spans if strip_comments(sql[s:e]).strip()]


def strip_comments(sql: str) -> str:
    return "".join(sql[s:e] if kind != COMMENT else " " for kind, s, e in tokens(sql))


def unquote(name_token: str) -> str:
    if name_token.startswith("`") and name_token.endswith("`") and len(name_token) >= 2:
        return name_token[1:-1].replace("``", "`")
    return name_token


def core_table_name(schema: str, identifier: str) -> str:
    """The catalog's name of a table: `database.table`, lower case (Spark names are case-insensitive)."""
    return f"{schema}.{identifier}".lower()


def quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def qualify_branch_relations(sql: str, is_branch_relation: Callable[[str, str], bool]) -> str:
    """Rewrite `schema.table` (any quoting) to `` `schema.table` `` where it names a branch relation."""
    toks = [(kind, sql[s:e]) for kind, s, e in tokens(sql)]
    out: List[str] = []
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        if (
            kind in (IDENT, QUOTED)
            and i + 2 < len(toks)
            and toks[i + 1] == (OTHER, ".")
            and toks[i + 2][0] in (IDENT, QUOTED)
            and not (i > 0 and toks[i - 1] == (OTHER, "."))
            and not (i + 3 < len(toks) and toks[i + 3] == (OTHER, "."))
        ):
            schema, table = unquote(text), unquote(toks[i + 2][1])
            if is_branch_relation(schema, table):
                out.append(quote_identifier(f"{schema}.{table}"))
                i += 3
                continue
        out.append(text)
        i += 1
    return "".join(out)


def parse_relation_name(name_token: str) -> Tuple[Optional[str], str]:
    """(schema, table) of a name as written: `s.t`, `` `s`.`t` ``, `` `s.t` `` or a bare `t`."""
    parts = [unquote(p) for kind, p in _name_parts(name_token)]
    if len(parts) == 1:
        if name_token.startswith("`") and "." in parts[0]:
            schema, _, table = parts[0].partition(".")
            return schema, table
        return None, parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    # catalog.schema.table: the catalog part names the session catalog, ignore it
    return parts[-2], parts[-1]


def _name_parts(name_token: str) -> List[Tuple[str, str]]:
    return [(kind, name_token[s:e]) for kind, s, e in tokens(name_token) if kind in (IDENT, QUOTED)]


# A (possibly qualified, possibly quoted) object name, for the statement router's patterns.
NAME_PATTERN = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)(?:\s*\.\s*(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)){0,2}"


def split_top_level(text: str, separator: str = ",", type_brackets: bool = False) -> List[str]:
    """Split on `separator` outside parentheses, literals and quoted names (and, for column
    definitions, outside the angle brackets of `map<k,v>` / `struct<...>` types)."""
    opening, closing = ("([{<", ")]}>") if type_brackets else ("([{", ")]}")
    parts, depth, start = [], 0, 0
    for kind, s, e in tokens(text):
        if kind != OTHER:
            continue
        ch = text[s]
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == separator and depth == 0:
            parts.append(text[start:s])
            start = e
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def find_top_level_keyword(text: str, keyword: str) -> int:
    """Position of the first `keyword` (case-insensitive, a whole word) outside parentheses, or -1."""
    depth = 0
    for kind, s, e in tokens(text):
        if kind == OTHER:
            if text[s] == "(":
                depth += 1
            elif text[s] == ")":
                depth -= 1
        elif kind == IDENT and depth == 0 and text[s:e].lower() == keyword.lower():
            return s
    return -1
