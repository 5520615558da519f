"""The Iceberg REST catalog API (apache/iceberg open-api/rest-catalog-open-api.yaml) as a Starlette app
mounted at /iceberg: reads of tables and views, and writes of namespaces and tables on a branch (writes.py).

`GET /v1/config?warehouse=<ref>` answers a URL prefix that carries the ref, so every later request names
its branch or version. Errors use the protocol's shape: {"error": {"message", "type", "code"}}.
"""
from __future__ import annotations

import base64
import binascii
import hmac
import json

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from ..core import errors
from .schema import Unsupported
from .service import CatalogService, ViewNotFound
from .writes import CatalogWrites, CommitFailed, Forbidden, NamespaceNotEmpty

NOT_WRITABLE = ("branchspark serve does not take this write (views are read-only through Iceberg): write it with "
                "branchspark (dbt run with a target on that branch, or Lakehouse.transaction in Python)")
_NAMESPACE_SEPARATOR = "\x1f"
_ENDPOINTS = [
    "GET /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}", "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}", "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "GET /v1/{prefix}/namespaces/{namespace}/views", "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    # writes (on a branch; fixed versions and protected branches refuse them)
    "POST /v1/{prefix}/namespaces", "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties", "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}", "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/transactions/commit",
]


def error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


def encode_prefix(ref: str) -> str:
    """A branch ref as one URL path segment (refs may hold '/' and '@')."""
    return "r" + base64.urlsafe_b64encode(ref.encode()).decode().rstrip("=")


def decode_prefix(prefix: str) -> str:
    if not prefix.startswith("r"):
        raise errors.InvalidArgument(f"unknown catalog prefix '{prefix}': ask GET /v1/config?warehouse=<branch> first")
    body = prefix[1:]
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise errors.InvalidArgument(f"unknown catalog prefix '{prefix}': ask GET /v1/config?warehouse=<branch> "
                                     f"first") from None


class _Handlers:
    def __init__(self, service: CatalogService):
        self.service = service
        self.writes = CatalogWrites(service)

    @staticmethod
    def _ref(request: Request) -> str:
        return decode_prefix(request.path_params["prefix"])

    def _snapshot(self, request: Request):
        return self.service.snapshot(decode_prefix(request.path_params["prefix"]))

    @staticmethod
    def _namespace(request: Request) -> str:
        name = request.path_params["namespace"]
        if _NAMESPACE_SEPARATOR in name:
            raise errors.DatabaseNotFound(name.replace(_NAMESPACE_SEPARATOR, "."), "this catalog (one namespace "
                                                                                   "level: databases)")
        return name

    def config(self, request: Request) -> Response:
        warehouse = request.query_params.get("warehouse") or "main"
        self.service.snapshot(warehouse)  # an unknown branch or version fails here, with its name
        return JSONResponse({"defaults": dict(self.service.file_io), "overrides": {"prefix": encode_prefix(warehouse)},
                             "endpoints": _ENDPOINTS})

    def namespaces(self, request: Request) -> Response:
        snapshot = self._snapshot(request)
        if request.query_params.get("parent"):
            parent = request.query_params["parent"]
            self.service.database(snapshot, parent)
            return JSONResponse({"namespaces": []})
        return JSONResponse({"namespaces": [[d.name] for d in self.service.databases(snapshot)]})

    def namespace(self, request: Request) -> Response:
        database = self.service.database(self._snapshot(request), self._namespace(request))
        if request.method == "HEAD":
            return Response(status_code=204)
        return JSONResponse({"namespace": [database.name],
                             "properties": {k: str(v) for k, v in database.properties.items()}})

    def tables(self, request: Request) -> Response:
        return self._names(request, "table")

    def views(self, request: Request) -> Response:
        return self._names(request, "view")

    def _names(self, request: Request, kind: str) -> Response:
        database = self._namespace(request)
        names = self.service.names(self._snapshot(request), database, kind)
        return JSONResponse({"identifiers": [{"namespace": [database], "name": n} for n in names]})

    @staticmethod
    def _object_namespace(request: Request, kind: str, branch: str) -> str:
        """The namespace of a table or view request. A deeper one holds no table or view: Spark's Iceberg
        catalog asks for `db.table.snapshots` as table `snapshots` in namespace `db.table` and reads the metadata
        table `snapshots` of `db.table` only when told there is no such table (not no such namespace)."""
        name = request.path_params["namespace"]
        if _NAMESPACE_SEPARATOR in name:
            full = f"{name.replace(_NAMESPACE_SEPARATOR, '.')}.{request.path_params[kind]}"
            raise errors.TableNotFound(full, branch) if kind == "table" else ViewNotFound(full, branch)
        return name

    def table(self, request: Request) -> Response:
        snapshot = self._snapshot(request)
        database = self._object_namespace(request, "table", snapshot.ns.label)
        name = request.path_params["table"]
        if request.method == "HEAD":
            if not self.service.has(snapshot, database, name, "table"):
                raise errors.TableNotFound(f"{database}.{name}", snapshot.ns.label)
            return Response(status_code=204)
        return Response(self.service.load_table(snapshot, database, name), media_type="application/json")

    def view(self, request: Request) -> Response:
        snapshot = self._snapshot(request)
        database = self._object_namespace(request, "view", snapshot.ns.label)
        name = request.path_params["view"]
        if request.method == "HEAD":
            if not self.service.has(snapshot, database, name, "view"):
                raise ViewNotFound(f"{database}.{name}", snapshot.ns.label)
            return Response(status_code=204)
        return Response(self.service.load_view(snapshot, database, name), media_type="application/json")


def _handle(method=None, **writes):
    """An endpoint: GET/HEAD run `method`, other methods their write (`post=`, `delete=`), each in a worker
    thread; a method the endpoint lacks is refused (views stay read-only)."""
    async def endpoint(request: Request) -> Response:
        if request.method in ("GET", "HEAD"):
            chosen = method
        else:
            chosen = writes.get(request.method.lower())
            if chosen is None:
                return error(403 if request.method in ("POST", "PUT", "DELETE", "PATCH") else 405,
                             "ForbiddenException", NOT_WRITABLE)
            body = await request.body()
            try:
                request.state.body = json.loads(body) if body else {}
            except ValueError as exc:
                return error(400, "BadRequestException", f"the request body is no JSON: {exc}")
            if not isinstance(request.state.body, dict):
                return error(400, "BadRequestException", "the request body must be a JSON object")
        if chosen is None:
            return error(405, "BadRequestException", f"{request.method} is not served at {request.url.path}")
        return await run_in_threadpool(_answer, chosen, request)

    return endpoint


def _answer(method, request: Request) -> Response:
    try:
        return method(request)
    except errors.BranchNotFound as exc:
        return error(404, "NoSuchWarehouseException", str(exc))
    except errors.CommitNotFound as exc:
        return error(404, "NoSuchWarehouseException", str(exc))
    except errors.DatabaseNotFound as exc:
        return error(404, "NoSuchNamespaceException", str(exc))
    except errors.TableNotFound as exc:
        return error(404, "NoSuchTableException", str(exc))
    except ViewNotFound as exc:
        return error(404, "NoSuchViewException", str(exc))
    except Unsupported as exc:
        return error(501 if request.method in ("GET", "HEAD") else 400,
                     "UnsupportedOperationException" if request.method in ("GET", "HEAD") else "BadRequestException",
                     str(exc))
    except CommitFailed as exc:
        return error(409, "CommitFailedException", str(exc))
    except NamespaceNotEmpty as exc:
        return error(409, "NamespaceNotEmptyException", str(exc))
    except errors.AlreadyExists as exc:
        return error(409, "AlreadyExistsException", str(exc))
    except (Forbidden, errors.ProtectedBranch) as exc:
        return error(403, "ForbiddenException", str(exc))
    except errors.BranchsparkError as exc:
        return error(400, "BadRequestException", str(exc))
    except (ValueError, KeyError, TypeError) as exc:  # a malformed request body (pydantic's errors are ValueErrors)
        if request.method in ("GET", "HEAD"):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return error(400, "BadRequestException", f"malformed request: {first}")


def _refuse(request: Request) -> Response:
    if request.method in ("GET", "HEAD"):
        return error(404, "NotFoundException", f"no such endpoint: {request.method} {request.url.path}")
    return error(404, "NotFoundException", f"no such endpoint: {request.method} {request.url.path}")


class _BearerToken(BaseHTTPMiddleware):
    def __init__(self, app, token: str):
        super().__init__(app)
        self.expected = f"Bearer {token}".encode()

    async def dispatch(self, request, call_next):
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, self.expected):
            return error(401, "NotAuthorizedException",
                         "this branchspark catalog needs a bearer token: give the client the token `branchspark "
                         "serve --token` was started with")
        return await call_next(request)


class _WriteHandlers(_Handlers):
    """The write side: each request one branchspark commit on the prefix's branch (writes.py)."""

    def create_namespace(self, request: Request) -> Response:
        return JSONResponse(self.writes.create_namespace(self._ref(request), request.state.body))

    def drop_namespace(self, request: Request) -> Response:
        self.writes.drop_namespace(self._ref(request), self._namespace(request))
        return Response(status_code=204)

    def namespace_properties(self, request: Request) -> Response:
        return JSONResponse(self.writes.update_namespace_properties(self._ref(request), self._namespace(request),
                                                                    request.state.body))

    def create_table(self, request: Request) -> Response:
        body = self.writes.create_table(self._ref(request), self._namespace(request), request.state.body)
        return Response(body, media_type="application/json")

    def register_table(self, request: Request) -> Response:
        body = self.writes.register_table(self._ref(request), self._namespace(request), request.state.body)
        return Response(body, media_type="application/json")

    def commit_table(self, request: Request) -> Response:
        body = self.writes.commit_table(self._ref(request), self._namespace(request), request.path_params["table"],
                                        request.state.body)
        return Response(body, media_type="application/json")

    def drop_table(self, request: Request) -> Response:
        self.writes.drop_table(self._ref(request), self._namespace(request), request.path_params["table"])
        return Response(status_code=204)

    def rename_table(self, request: Request) -> Response:
        self.writes.rename_table(self._ref(request), request.state.body)
        return Response(status_code=204)

    def commit_transaction(self, request: Request) -> Response:
        self.writes.commit_transaction(self._ref(request), request.state.body)
        return Response(status_code=204)


def create_app(service: CatalogService, token: str | None = None) -> Starlette:
    handlers = _WriteHandlers(service)
    every = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"]
    routes = [
        Route("/v1/config", _handle(handlers.config), methods=every),
        Route("/v1/{prefix}/namespaces", _handle(handlers.namespaces, post=handlers.create_namespace), methods=every),
        Route("/v1/{prefix}/namespaces/{namespace}", _handle(handlers.namespace, delete=handlers.drop_namespace),
              methods=every),
        Route("/v1/{prefix}/namespaces/{namespace}/properties", _handle(post=handlers.namespace_properties),
              methods=every),
        Route("/v1/{prefix}/namespaces/{namespace}/tables", _handle(handlers.tables, post=handlers.create_table),
              methods=every),
        Route("/v1/{prefix}/namespaces/{namespace}/tables/{table}",
              _handle(handlers.table, post=handlers.commit_table, delete=handlers.drop_table), methods=every),
        Route("/v1/{prefix}/namespaces/{namespace}/register", _handle(post=handlers.register_table), methods=every),
        Route("/v1/{prefix}/tables/rename", _handle(post=handlers.rename_table), methods=every),
        Route("/v1/{prefix}/transactions/commit", _handle(post=handlers.commit_transaction), methods=every),
        Route("/v1/{prefix}/namespaces/{namespace}/views", _handle(handlers.views), methods=every),
        Route("/v1/{prefix}/namespaces/{namespace}/views/{view}", _handle(handlers.view), methods=every),
        Route("/v1/{rest:path}", _refuse, methods=every),
    ]
    middleware = [Middleware(_BearerToken, token=token)] if token else []
    return Starlette(routes=[Mount("/iceberg", routes=routes)], middleware=middleware)
