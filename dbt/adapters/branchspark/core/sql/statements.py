"""The branch statements of SPEC 9, parsed: one small recursive-descent parser, pure Python.

    MERGE BRANCH src [TO dest] [WITH (strategy = 'merge', on_conflict = 'theirs', dry_run = true, message = '...')]
    CREATE BRANCH [IF NOT EXISTS] name [FROM ref] [AT TIMESTAMP 'time']
    DROP BRANCH [IF EXISTS] name [FORCE]
    USE BRANCH name
    SHOW BRANCHES
    SHOW LOG [ON ref] [LIMIT n]
    SHOW MERGE STATUS [ON dest]
    RESOLVE CONFLICTS ON dest [TABLE db.t] TAKE OURS | THEIRS
    CONTINUE MERGE [ON dest]
    ABORT MERGE [ON dest]

`parse_branch_statement` returns None for any other statement (it goes to Spark unchanged). Once a
statement's first words make it a branch statement, anything wrong in it is a `SqlSyntaxError`: one line
giving the line and column, what was expected and what was found. Names and refs are bare words
(`dev`, `feature/x`, `a1b2c3d4`, `dev@2026-11-21T10:00`), backquoted or quoted strings; keywords are
case-insensitive. Missing destinations stay None: the session's current branch fills them in.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import BranchsparkError


class SqlSyntaxError(BranchsparkError):
    """A branch statement that does not parse; nothing ran."""

    def __init__(self, text: str, position: int, expected: str, found: str):
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        near = " ".join(text[position:position + 30].split())
        super().__init__(f"syntax error at line {line}, column {column}: expected {expected}, found {found}"
                         + (f" (near: {near})" if near else ""))
        self.line, self.column, self.position = line, column, position
        self.expected, self.found = expected, found
        self.lead = 0  # what was cut from the statement's start (leading blanks and comments)

    def within(self, script: str, offset: int) -> "SqlSyntaxError":
        """The same error placed in the script the statement was cut from, at `offset`."""
        return SqlSyntaxError(script, offset + self.lead + self.position, self.expected, self.found)


_LEAD = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)


def without_lead(text: str) -> tuple[str, int]:
    """`text` from its first word on (dbt prepends a query comment and blank lines), and how much was cut:
    an error's line and column count from the statement's first word."""
    lead = _LEAD.match(text).end()
    return text[lead:], lead


# -- the statements ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MergeBranch:
    src: str
    dest: str | None = None
    options: dict = field(default_factory=dict)  # strategy, on_conflict, dry_run, message


@dataclass(frozen=True)
class CreateBranch:
    name: str
    source: str | None = None  # None: the session's current branch
    at_time: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropBranch:
    name: str
    if_exists: bool = False
    force: bool = False


@dataclass(frozen=True)
class UseBranch:
    name: str


@dataclass(frozen=True)
class ShowBranches:
    pass


@dataclass(frozen=True)
class ShowLog:
    ref: str | None = None
    limit: int | None = None


@dataclass(frozen=True)
class ShowMergeStatus:
    dest: str | None = None


@dataclass(frozen=True)
class ResolveConflicts:
    dest: str
    take: str  # ours | theirs
    table: str | None = None


@dataclass(frozen=True)
class ContinueMerge:
    dest: str | None = None


@dataclass(frozen=True)
class AbortMerge:
    dest: str | None = None


BranchStatement = (MergeBranch | CreateBranch | DropBranch | UseBranch | ShowBranches | ShowLog | ShowMergeStatus
                   | ResolveConflicts | ContinueMerge | AbortMerge)

MERGE_OPTIONS = {"strategy": "text", "on_conflict": "text", "dry_run": "bool", "message": "text"}

# The first words that make a statement a branch statement (anything else goes to Spark).
_LEADS = (("merge", "branch"), ("create", "branch"), ("drop", "branch"), ("use", "branch"), ("show", "branches"),
          ("show", "log"), ("show", "merge"), ("resolve", "conflicts"), ("continue", "merge"), ("abort", "merge"))


# -- the lexer ---------------------------------------------------------------------------------------------
WORD, STRING, QUOTED, PUNCT, END = "word", "string", "quoted", "punct", "end"
_LEXEME = re.compile(r"""
    (?P<space>\s+|--[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<punct>[(),=;])
  | (?P<word>[^\s(),=;'"`]+)
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str  # a string's or quoted name's value, unquoted
    start: int

    def describe(self) -> str:
        if self.kind == END:
            return "the end of the statement"
        if self.kind == STRING:
            return f"the string '{self.text}'"
        return f"'{self.text}'"


def _lex(text: str) -> list[Token]:
    found, at = [], 0
    while at < len(text):
        m = _LEXEME.match(text, at)
        if m is None:  # an unclosed quote
            raise SqlSyntaxError(text, at, "a closing quote", "an unclosed quote")
        kind = m.lastgroup
        if kind == "string":
            body = m.group()[1:-1]
            quote = m.group()[0]
            found.append(Token(STRING, body.replace(quote * 2, quote).replace("\\" + quote, quote), at))
        elif kind == "quoted":
            found.append(Token(QUOTED, m.group()[1:-1].replace("``", "`"), at))
        elif kind != "space":
            found.append(Token(WORD if kind == "word" else PUNCT, m.group(), at))
        at = m.end()
    while found and found[-1].kind == PUNCT and found[-1].text == ";":  # one trailing `;` ends the statement
        found.pop()
    return found + [Token(END, "", len(text.rstrip().rstrip(";").rstrip()))]


# -- the parser --------------------------------------------------------------------------------------------
def is_branch_statement(text: str) -> bool:
    """Whether `text`'s first two words make it a branch statement (comments and case ignored)."""
    words = [t.text.lower() for t in _lex_leading(text)]
    return tuple(words[:2]) in _LEADS


def _lex_leading(text: str) -> list[Token]:
    try:
        return [t for t in _lex(text)[:2] if t.kind == WORD]
    except SqlSyntaxError:  # an unclosed quote further on: the lead words decide, the parser reports it
        m = re.match(r"\s*(\S+)\s+(\S+)", text)
        return [Token(WORD, w, 0) for w in (m.groups() if m else ())]


def parse_branch_statement(text: str) -> BranchStatement | None:
    """The branch statement `text` is, or None when it is not one (then it is Spark's)."""
    if not is_branch_statement(text):
        return None
    statement, lead = without_lead(text)
    try:
        return _Parser(statement).statement()
    except SqlSyntaxError as bad:
        bad.lead = lead
        raise


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _lex(text)
        self.at = 0

    # -- tokens
    @property
    def token(self) -> Token:
        return self.tokens[self.at]

    def fail(self, expected: str) -> SqlSyntaxError:
        return SqlSyntaxError(self.text, self.token.start, expected, self.token.describe())

    def peek_word(self, *words: str) -> bool:
        return self.token.kind == WORD and self.token.text.lower() in words

    def accept(self, *words: str) -> bool:
        if self.peek_word(*words):
            self.at += 1
            return True
        return False

    def expect(self, word: str, after: str = "") -> None:
        if not self.accept(word):
            raise self.fail(f"{word.upper()}{after}")

    def expect_punct(self, char: str, what: str) -> None:
        if not (self.token.kind == PUNCT and self.token.text == char):
            raise self.fail(what)
        self.at += 1

    def name(self, what: str) -> str:
        """A branch name, a ref or a table name: a bare word, a backquoted name or a string."""
        token = self.token
        if token.kind not in (WORD, QUOTED, STRING) or not token.text:
            raise self.fail(what)
        self.at += 1
        return token.text

    def end(self) -> None:
        if self.token.kind != END:
            raise self.fail("the end of the statement")

    # -- statements
    def statement(self) -> BranchStatement:
        first = self.token.text.lower()
        self.at += 1
        parsed = getattr(self, f"_{first}")()
        self.end()
        return parsed

    def _merge(self) -> BranchStatement:
        self.expect("branch")
        if self.peek_word("to", "with"):
            raise self.fail("the branch to merge (MERGE BRANCH src)")
        src = self.name("the branch to merge (MERGE BRANCH src)")
        dest = self.name("the branch to merge into after TO") if self.accept("to") else None
        options = self._merge_options() if self.accept("with") else {}
        return MergeBranch(src, dest, options)

    def _merge_options(self) -> dict:
        self.expect_punct("(", "'(' after WITH")
        options = {}
        while True:
            key_token = self.token
            key = self.name(f"an option ({', '.join(MERGE_OPTIONS)})").lower()
            if key not in MERGE_OPTIONS or key_token.kind != WORD:
                self.at -= 1
                raise self.fail(f"an option ({', '.join(MERGE_OPTIONS)})")
            if key in options:
                self.at -= 1
                raise self.fail(f"each option once ({key} is given twice)")
            self.expect_punct("=", f"'=' after {key}")
            value = self.name(f"a value for {key}")
            if MERGE_OPTIONS[key] == "bool":
                if value.lower() not in ("true", "false"):
                    self.at -= 1
                    raise self.fail(f"true or false for {key}")
                options[key] = value.lower() == "true"
            else:
                options[key] = value if key == "message" else value.lower()  # modes are case-insensitive
            if self.token.kind == PUNCT and self.token.text == ",":
                self.at += 1
                continue
            self.expect_punct(")", "',' or ')' in the WITH options")
            return options

    def _create(self) -> BranchStatement:
        self.expect("branch")
        if_not_exists = False
        if self.accept("if"):
            self.expect("not", " EXISTS after IF")
            self.expect("exists", " after IF NOT")
            if_not_exists = True
        name = self.name("the new branch's name (CREATE BRANCH name)")
        source = self.name("a branch, commit id or branch@time after FROM") if self.accept("from") else None
        at_time = None
        if self.accept("at"):
            self.expect("timestamp", " after AT")
            if self.token.kind != STRING:
                raise self.fail("a quoted time after AT TIMESTAMP, e.g. '2026-11-21T10:00:00'")
            at_time = self.name("a quoted time")
        return CreateBranch(name, source, at_time, if_not_exists)

    def _drop(self) -> BranchStatement:
        self.expect("branch")
        if_exists = False
        if self.accept("if"):
            self.expect("exists", " after IF")
            if_exists = True
        name = self.name("the branch to drop (DROP BRANCH name)")
        return DropBranch(name, if_exists, self.accept("force"))

    def _use(self) -> BranchStatement:
        self.expect("branch")
        return UseBranch(self.name("the branch to use (USE BRANCH name)"))

    def _show(self) -> BranchStatement:
        if self.accept("branches"):
            return ShowBranches()
        if self.accept("log"):
            ref = self.name("a branch, commit id or branch@time after ON") if self.accept("on") else None
            limit = None
            if self.accept("limit"):
                if not (self.token.kind == WORD and self.token.text.isdigit() and int(self.token.text) > 0):
                    raise self.fail("a positive whole number after LIMIT")
                limit = int(self.token.text)
                self.at += 1
            return ShowLog(ref, limit)
        self.expect("merge")
        self.expect("status", " after SHOW MERGE")
        return ShowMergeStatus(self._on_dest())

    def _resolve(self) -> BranchStatement:
        self.expect("conflicts")
        self.expect("on", " and the branch the merge is paused on")
        dest = self.name("the branch the merge is paused on after ON")
        table = self.name("a table (database.table) after TABLE") if self.accept("table") else None
        self.expect("take", " OURS or TAKE THEIRS")
        if not self.peek_word("ours", "theirs"):
            raise self.fail("OURS or THEIRS after TAKE")
        take = self.token.text.lower()
        self.at += 1
        return ResolveConflicts(dest, take, table)

    def _continue(self) -> BranchStatement:
        self.expect("merge")
        return ContinueMerge(self._on_dest())

    def _abort(self) -> BranchStatement:
        self.expect("merge")
        return AbortMerge(self._on_dest())

    def _on_dest(self) -> str | None:
        return self.name("the branch the merge is into after ON") if self.accept("on") else None
