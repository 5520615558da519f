"""What a merge did or would do: conflicts and per-object outcomes, printable as tables."""
from __future__ import annotations

from dataclasses import dataclass, field

from .rules import RULE_TEXT, Rule


@dataclass(frozen=True)
class Conflict:
    object_kind: str  # database | table | column
    object_name: str
    src_op: str
    dest_op: str
    rule: Rule | str  # a Rule; str where it comes back from a stored report
    involved: str = ""  # keys, segments or columns

    @property
    def reason(self) -> str:
        return RULE_TEXT.get(self.rule, self.rule)

    def as_row(self) -> dict:
        return {"object": self.object_name, "kind": self.object_kind, "src": self.src_op, "dest": self.dest_op,
                "rule": self.rule, "involved": self.involved, "reason": self.reason}


@dataclass
class Outcome:
    object_kind: str
    object_name: str
    action: str  # added | dropped | renamed | merged | schema | kept (ours) | taken (theirs)
    rows_added: int | None = None
    rows_deleted: int | None = None
    note: str = ""


@dataclass
class MergeResult:
    src: str
    dest: str
    base: str | None
    strategy: str
    status: str  # merged | fast-forward | up-to-date | conflicts | dry-run
    commit_id: str | None = None
    conflicts: list[Conflict] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    resolved: list[Conflict] = field(default_factory=list)  # conflicts settled by on_conflict
    phase: str | None = None  # a paused merge's phase (merge/paused.py)

    @property
    def ok(self) -> bool:
        return not self.conflicts

    def summary(self) -> str:
        head = f"merge {self.src} into {self.dest}: {self.status}"
        if self.phase:
            head += f" ({self.phase})"
        if self.commit_id:
            head += f" (commit {self.commit_id[:12]})"
        if self.conflicts:
            head += f", {len(self.conflicts)} conflict(s)"
        if self.resolved:
            head += f", {len(self.resolved)} conflict(s) resolved by on_conflict"
        return head

    def conflict_rows(self) -> list[dict]:
        return [c.as_row() for c in self.conflicts]

    def outcome_rows(self) -> list[dict]:
        return [{"object": o.object_name, "kind": o.object_kind, "action": o.action,
                 "rows added": "" if o.rows_added is None else o.rows_added,
                 "rows deleted": "" if o.rows_deleted is None else o.rows_deleted, "note": o.note}
                for o in self.outcomes]


def conflict_message(result: MergeResult) -> str:
    first = result.conflicts[0]
    return (f"merge of '{result.src}' into '{result.dest}' stopped with {len(result.conflicts)} conflict(s), "
            f"nothing changed on '{result.dest}' (first: {first.object_name}: {first.src_op} on src vs "
            f"{first.dest_op} on dest, {first.rule}): resolve them on '{result.src}', or merge with "
            f"on_conflict ours or theirs")
