"""Profile fields of a `type: branchspark` target."""

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from dbt.adapters.spark.connections import SparkCredentials
from dbt_common.exceptions import DbtRuntimeError
from dbt.flags import get_flags

from dbt.adapters.branchspark.core.catalog.url import redact_url

SESSION_METHOD = "session"
CONNECT_METHOD = "connect"
LOCAL_METHOD = "local"  # this user's warm local Spark Connect engine (engine/), started on first use
CONNECT_URL_PREFIX = "sc://"


@dataclass
class BranchSparkCredentials(SparkCredentials):
    # dbt-spark requires a host even for in-process sessions; we do not.
    host: Optional[str] = "localhost"
    # `session` (in-process Spark), `local` (the warm local engine) or `connect` (host: sc://host:port).
    method: str = SESSION_METHOD  # type: ignore[assignment]
    branch: str = "main"
    # SQLAlchemy URL of the catalog; None means $BRANCHSPARK_CATALOG_URL, else a SQLite file in the warehouse.
    # A password may stay out of the profile: $BRANCHSPARK_CATALOG_PASSWORD fills it in.
    catalog: Optional[str] = None
    # Where table data goes; relative paths are taken from the project dir.
    warehouse: Optional[str] = None
    spark_config: Dict[str, Any] = field(default_factory=dict)
    # Create `branch` from this branch when it does not exist yet.
    create_branch_from: Optional[str] = None
    # Branches that change only by merge (e.g. [main]); marked protected in the catalog on connect.
    protected_branches: List[str] = field(default_factory=list)
    # How a writing invocation (run, build, seed, snapshot) lands: `run` (default) builds on a run
    # branch merged in as one commit when everything succeeded; `per_model` commits each model straight
    # onto the branch (partial results stay). See docs/runs.md.
    landing: str = "run"
    # Read Delta and Iceberg sources at the versions this commit (or the newest run in this branch's history)
    # recorded, not at their current ones: a preview reproduced after ingestion moved on (docs/sources.md).
    # `--vars '{sources_as_of: ...}'` says the same for one invocation.
    sources_as_of: Optional[str] = None
    # A warehouse on S3 (docs/deploy.md), where the AWS variables do not say it: the endpoint, region and path
    # style become Hadoop's fs.s3a.* keys in spark_config (a key given there wins); the keys become the AWS
    # variables of this process, which S3A and pyarrow read, so that no setting (nor `dbt debug`) holds them.
    s3_endpoint: Optional[str] = None
    s3_region: Optional[str] = None
    s3_path_style: Optional[bool] = None
    s3_access_key_id: Optional[str] = field(default=None, repr=False)
    s3_secret_access_key: Optional[str] = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.schema is None:
            raise DbtRuntimeError("Must specify `schema` in a branchspark profile")
        # Spark has no databases above schemas: database is the schema, as in dbt-spark.
        if self.database is not None and self.database != self.schema:
            raise DbtRuntimeError(
                f"schema: {self.schema}, database: {self.database}: on branchspark, database "
                f"must be omitted or equal to schema"
            )
        self.database = None
        method = str(self.method or SESSION_METHOD)
        if method.startswith(CONNECT_URL_PREFIX):  # the URL given as the method (earlier profiles)
            method, self.host = CONNECT_METHOD, method
        if method not in (SESSION_METHOD, CONNECT_METHOD, LOCAL_METHOD):
            raise DbtRuntimeError(
                f"method: {method}: branchspark supports `local` (a warm local Spark engine), `session` "
                f"(in-process Spark) or `connect` (Spark Connect, with host: sc://HOST:PORT)"
            )
        if method == CONNECT_METHOD and not str(self.host or "").startswith(CONNECT_URL_PREFIX):
            raise DbtRuntimeError(
                f"host: {self.host}: with method: connect, host must be a Spark Connect URL such as "
                f"sc://spark-connect.example.com:15002"
            )
        self.method = method
        if not self.branch:
            raise DbtRuntimeError("branch: must name a catalog branch (e.g. main)")
        self.spark_config = {**self._s3_settings(), **{str(k): str(v) for k, v in (self.spark_config or {}).items()}}
        if isinstance(self.protected_branches, str):
            self.protected_branches = [self.protected_branches]
        self.protected_branches = [str(b) for b in (self.protected_branches or [])]
        self.landing = str(self.landing or "run").lower().replace("-", "_")
        if self.landing not in ("run", "per_model"):
            raise DbtRuntimeError(f"landing: {self.landing}: use `run` (the whole invocation lands as one commit, "
                                  f"or nothing does) or `per_model` (each model commits on the branch)")
        self.server_side_parameters = {str(k): str(v) for k, v in self.server_side_parameters.items()}

    def _s3_settings(self) -> Dict[str, str]:
        if self.s3_access_key_id and self.s3_secret_access_key:
            os.environ["AWS_ACCESS_KEY_ID"] = str(self.s3_access_key_id)
            os.environ["AWS_SECRET_ACCESS_KEY"] = str(self.s3_secret_access_key)
        fields = {"fs.s3a.endpoint": self.s3_endpoint, "fs.s3a.endpoint.region": self.s3_region,
                  "fs.s3a.path.style.access": None if self.s3_path_style is None else str(bool(self.s3_path_style)).lower()}
        return {f"spark.hadoop.{key}": str(value) for key, value in fields.items() if value not in (None, "")}

    @property
    def type(self) -> str:
        return "branchspark"

    @property
    def unique_field(self) -> str:
        return f"{self.resolved_warehouse()}#{self.branch}"

    @property
    def is_remote(self) -> bool:
        return self.method == CONNECT_METHOD

    @property
    def connect_url(self) -> str:
        """The Spark Connect URL (sc://host:port), or "" for an in-process session."""
        return str(self.host) if self.is_remote else ""

    def _connection_keys(self) -> Tuple[str, ...]:
        return ("method", "host", "branch", "catalog", "warehouse", "schema", "create_branch_from",
                "protected_branches", "landing", "sources_as_of")

    def connection_info(self, *, with_aliases: bool = False) -> Iterable[Tuple[str, Any]]:
        """What `dbt debug` prints: the catalog URL without its password."""
        for key, value in super().connection_info(with_aliases=with_aliases):
            yield key, redact_url(value) if key == "catalog" and value else value

    def resolved_warehouse(self) -> str:
        """Absolute warehouse location: URIs as given, paths relative to the project dir."""
        warehouse = self.warehouse or "warehouse"
        if "://" in warehouse or warehouse.startswith("file:"):
            return warehouse
        warehouse = os.path.expanduser(warehouse)
        if not os.path.isabs(warehouse):
            warehouse = os.path.join(_project_dir(), warehouse)
        return os.path.normpath(warehouse)


def _project_dir() -> str:
    """The dbt project dir of this invocation (its --project-dir), else the cwd."""
    try:
        project_dir = getattr(get_flags(), "PROJECT_DIR", None)
    except Exception:  # flags are not set outside a dbt invocation
        project_dir = None
    return os.path.abspath(project_dir or os.getcwd())
