"""`branchspark ui` (SPEC 10): server-rendered pages over the catalog on the same Starlette app as
`branchspark serve`, whose Iceberg REST catalog stays mounted at /iceberg.

Pages have stable URLs shaped like a code host's: `/`, `/log/{ref}`, `/commit/{id}`, `/compare/{from}...{to}`
and `/compare/{from}..{to}` (`?table=db.t&page=N`, `&format=csv`), `/merge/{src}/into/{dest}`,
`/merge-status/{dest}`, `/table/{ref}/{db}.{table}`. Each reads through the core (ui/history.py, compare.py,
merges.py, tables.py); who may read and write is ui/access.py. Handlers run in Starlette's thread pool; the
write actions one at a time.
"""
from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from ..core import errors
from ..core.catalog.url import redact_text
from ..core.diff import THREE_DOT
from ..core.lakehouse import Lakehouse
from ..iceberg.routes import create_app as create_iceberg_app
from ..iceberg.service import CatalogService
from . import commits, compare, history, merges, tables
from .access import COOKIE, Access, same_origin
from .cache import ByCommits, FooterRows

TEMPLATES = Path(__file__).parent / "templates"
_MERGE_CHOICES = ("abort", "pause", "ours", "theirs")
_FORM_LIMIT = 65536


def ref_url(value) -> str:
    """A ref (branch names may hold '/') as a URL path part."""
    return quote(str(value), safe="/@:")


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["u"] = ref_url
    env.filters["short"] = lambda commit_id: str(commit_id)[:12]
    env.filters["when"] = lambda ts: f"{ts:%Y-%m-%d %H:%M:%S}"
    return env


class Pages:
    def __init__(self, lakehouse: Lakehouse, access: Access, keep: bool = True):
        self.lakehouse = lakehouse
        self.access = access
        self.env = _environment()
        self.write_lock = threading.Lock()
        self.kept = ByCommits() if keep else ByCommits(limit=0)
        # rows per segment id read from Parquet footers (segments never change); None: read them every time
        self.footer_rows: FooterRows | None = FooterRows() if keep else None

    def head(self, ref: str) -> str:
        """The commit a ref names now (a branch's head is read fresh on every request)."""
        return self.lakehouse.resolve(ref).id

    # ------------------------------------------------------------ plumbing
    def render(self, request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        signed_in = self.access.signed_in(request)
        html = self.env.get_template(name).render(
            request=request, signed_in=signed_in, csrf=self.access.csrf_value if signed_in else "",
            reads_need_token=self.access.reads_need_token, path=request.url.path, **context)
        return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store",
                                                               "X-Frame-Options": "DENY",
                                                               "Referrer-Policy": "same-origin"})

    def error(self, request: Request, status: int, message: str) -> HTMLResponse:
        return self.render(request, "error.html", status, message=redact_text(message))

    def endpoint(self, method):
        """A page: access checked (the `?token=` sign-in, reads, writes), the core's errors shown as one line."""
        async def run(request: Request) -> Response:
            if request.method == "GET" and "token" in request.query_params:
                return self._sign_in(request, request.query_params["token"], _without_token(request))
            if not self.access.may_read(request):
                return self.render(request, "login.html", 401, next=request.url.path,
                                   message="this server needs its token: sign in")
            form = None
            if request.method == "POST":
                form = await _form(request)
                refusal = self.access.write_refusal(request, form)
                if refusal is not None:
                    return self.error(request, 401 if not self.access.signed_in(request) else 403, refusal)
            try:
                return await run_in_threadpool(method, request, form)
            except errors.NotFound as exc:
                return self.error(request, 404, str(exc))
            except errors.BranchsparkError as exc:
                return self.error(request, 409 if isinstance(exc, (errors.MergeConflict, errors.StaleHead))
                                  else 400, str(exc))
        return run

    def _sign_in(self, request: Request, given: str, target: str) -> Response:
        if not self.access.is_token(given):
            return self.render(request, "login.html", 401, next=target, message="that is not this server's token")
        response = RedirectResponse(target if _local(target) else "/", status_code=303)
        response.set_cookie(COOKIE, self.access.session_value, httponly=True, samesite="strict", path="/")
        return response

    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return self.render(request, "login.html", next=request.query_params.get("next", "/"), message="")
        form = await _form(request)
        if not same_origin(request):
            return self.error(request, 403, "refused: the sign-in came from another site")
        return self._sign_in(request, str(form.get("token") or ""), str(form.get("next") or "/"))

    # --------------------------------------------------------------- reads
    def branches(self, request: Request, _form) -> Response:
        return self.render(request, "branches.html", rows=history.branch_rows(self.lakehouse))

    def log(self, request: Request, _form) -> Response:
        ref = request.path_params["ref"]
        offset = _int(request.query_params.get("offset"), 0)
        found = history.history(self.lakehouse, ref, offset, _int(request.query_params.get("limit"), 100))
        return self.render(request, "log.html", history=found, row_height=28)

    def commit(self, request: Request, _form) -> Response:
        store = self.lakehouse.store
        commit = self.lakehouse.commit_by_id(request.path_params["commit_id"])
        if commit is None:
            raise errors.CommitNotFound(request.path_params["commit_id"])
        operations = store.operations(commit.id)
        by_object: dict[str, list] = {}
        for op in operations:
            by_object.setdefault(op.object_name, []).append(op)
        # the rows each table's files gained and lost against the first parent: catalog metadata, no Spark
        counts = self.kept.get(("commit", commit.id), lambda: commits.file_rows(self.lakehouse, commit,
                                                                                self.footer_rows))
        return self.render(request, "commit.html", commit=commit, by_object=by_object, counts=counts,
                           op_detail=_op_detail)

    def compare(self, request: Request, _form) -> Response:
        spec = request.path_params["spec"]
        from_ref, to_ref, mode = compare.parse_spec(spec)
        table = request.query_params.get("table")
        if table and request.query_params.get("format") == "csv":
            lines = compare.csv_lines(self.lakehouse, from_ref, to_ref, mode, table)
            name = f"diff-{table}.csv".replace("/", "_")
            return StreamingResponse(lines, media_type="text/csv",
                                     headers={"Content-Disposition": f'attachment; filename="{name}"'})
        heads = (from_ref, self.head(from_ref), to_ref, self.head(to_ref), mode)
        if table:
            number = _int(request.query_params.get("page"), 0)
            # the counts the compare page found for the same commits, if it was asked first: not counted again
            summary = self.kept.peek(("compare", *heads))
            known = next((t for t in summary.tables if t.table == table.lower()), None) if summary else None
            page = self.kept.get(("rows", *heads, table, number), lambda: compare.table_page(
                self.lakehouse, from_ref, to_ref, mode, table, number, memo=self.footer_rows, known=known))
            return self.render(request, "compare_table.html", spec=spec, from_ref=from_ref, to_ref=to_ref,
                               mode=mode, page=page, three_dot=mode == THREE_DOT,
                               csv_url=f"/compare/{ref_url(spec)}?{urlencode({'table': table, 'format': 'csv'})}")
        found = self.kept.get(("compare", *heads),
                              lambda: compare.summary(self.lakehouse, from_ref, to_ref, mode, self.footer_rows))
        return self.render(request, "compare.html", spec=spec, from_ref=from_ref, to_ref=to_ref, mode=mode,
                           diff=found, three_dot=mode == THREE_DOT)

    def compare_form(self, request: Request, _form) -> Response:
        """The header's compare form, without JavaScript: to the compare page's own URL."""
        from_ref = request.query_params.get("from") or "main"
        to_ref = request.query_params.get("to") or ""
        if not to_ref:
            raise errors.InvalidArgument("name the branch or version to compare with (the second field)")
        return RedirectResponse(f"/compare/{ref_url(from_ref)}...{ref_url(to_ref)}", status_code=303)

    def table(self, request: Request, _form) -> Response:
        ref, name = _split_table(request.path_params["spec"])
        found = self.kept.get(("table", ref, self.head(ref), name.lower()),
                              lambda: tables.table_page(self.lakehouse, ref, name, self.footer_rows))
        return self.render(request, "table.html", page=found, ref=ref)

    # ------------------------------------------------ merge preview, merge
    def merge(self, request: Request, form) -> Response:
        src, dest = _split_merge(request.path_params["spec"])
        if request.method == "POST":
            on_conflict = str(form.get("on_conflict") or "abort")
            if on_conflict not in _MERGE_CHOICES:
                raise errors.InvalidArgument(f"on_conflict '{on_conflict}' is not one of {', '.join(_MERGE_CHOICES)}")
            with self.write_lock:
                result = merges.merge(self.lakehouse, src, dest, on_conflict)
            target = f"/merge-status/{ref_url(dest)}" if result.status == "paused" else f"/log/{ref_url(dest)}"
            return RedirectResponse(target, status_code=303)
        found = self.kept.get(("merge", src, self.head(src), dest, self.head(dest), self._paused(dest)),
                              lambda: merges.preview(self.lakehouse, src, dest))
        return self.render(request, "merge.html", src=src, dest=dest, preview=found, choices=_MERGE_CHOICES)

    def _paused(self, branch: str) -> bool:
        """Whether a merge into `branch` is paused (a preview then says so instead of planning)."""
        return self.lakehouse.store.find_branch(branch) is not None and \
            self.lakehouse.merge_status(branch)["phase"] != merges.NOT_STARTED

    def merge_status(self, request: Request, form) -> Response:
        dest = request.path_params["dest"]
        if request.method == "POST":
            action = str(form.get("action") or "")
            with self.write_lock:
                if action == "resolve":
                    take = str(form.get("take") or "")
                    if take not in ("ours", "theirs"):
                        raise errors.InvalidArgument(f"take '{take}' is neither ours nor theirs")
                    merges.resolve(self.lakehouse, dest, str(form.get("table") or "") or None, take)
                elif action == "continue":
                    merges.finish(self.lakehouse, dest)
                    return RedirectResponse(f"/log/{ref_url(dest)}", status_code=303)
                elif action == "abort":
                    merges.abort(self.lakehouse, dest)
                else:
                    raise errors.InvalidArgument(f"unknown action '{action}': resolve, continue or abort")
            return RedirectResponse(f"/merge-status/{ref_url(dest)}", status_code=303)
        state, paused_tables = merges.paused(self.lakehouse, dest)
        return self.render(request, "merge_status.html", dest=dest, state=state, tables=paused_tables)


def create_app(lakehouse: Lakehouse, token: str, reads_need_token: bool, keep: bool = True) -> Starlette:
    """The pages, and the Iceberg REST catalog at /iceberg (which needs the token when reads do). `keep=False`:
    every page computed afresh (bench/ui.py measures both)."""
    pages = Pages(lakehouse, Access(token, reads_need_token), keep)
    page = pages.endpoint
    routes = [
        Route("/", page(pages.branches)),
        Route("/login", pages.login, methods=["GET", "POST"]),
        Route("/log/{ref:path}", page(pages.log)),
        Route("/commit/{commit_id}", page(pages.commit)),
        Route("/compare/{spec:path}", page(pages.compare)),
        Route("/compare-form", page(pages.compare_form)),
        Route("/table/{spec:path}", page(pages.table)),
        Route("/merge/{spec:path}", page(pages.merge), methods=["GET", "POST"]),
        Route("/merge-status/{dest:path}", page(pages.merge_status), methods=["GET", "POST"]),
        Mount("", app=create_iceberg_app(CatalogService(lakehouse), token if reads_need_token else None)),
    ]
    return Starlette(routes=routes)


async def _form(request: Request) -> dict[str, str]:
    """A posted form's fields. The pages post only URL-encoded forms of a few short fields, read here with the
    standard library rather than a multipart parser; anything else is an empty form (and so refused)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        return {}
    body = await request.body()
    if len(body) > _FORM_LIMIT:
        return {}
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def _int(value, default: int) -> int:
    try:
        return max(0, int(value)) if value is not None else default
    except ValueError:
        raise errors.InvalidArgument(f"'{value}' is not a number") from None


def _local(target: str) -> bool:
    return target.startswith("/") and not target.startswith("//") and "\\" not in target


def _without_token(request: Request) -> str:
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    return request.url.path + (f"?{urlencode(query)}" if query else "")


def _split_merge(spec: str) -> tuple[str, str]:
    src, sep, dest = spec.partition("/into/")
    if not sep or not src or not dest:
        raise errors.InvalidArgument(f"'/merge/{spec}' names no merge: use /merge/SRC/into/DEST")
    return src, dest


def _split_table(spec: str) -> tuple[str, str]:
    ref, sep, name = spec.rpartition("/")
    if not sep or not ref or "." not in name:
        raise errors.InvalidArgument(f"'/table/{spec}' names no table: use /table/REF/DATABASE.TABLE")
    return ref, name


def _op_detail(op) -> str:
    """The parts of an operation's record a reader wants (rows deleted, columns, a rename), not file ids."""
    detail = op.detail or {}
    shown = []
    for key in ("rows", "predicate", "old_name", "columns", "partition_by", "primary_key", "action"):
        if detail.get(key) not in (None, "", [], {}):
            value = detail[key]
            shown.append(f"{key}: {', '.join(map(str, value)) if isinstance(value, (list, tuple)) else value}")
    if detail.get("segments_added"):
        shown.append(f"{len(detail['segments_added'])} segment(s) added")
    return "; ".join(shown)
