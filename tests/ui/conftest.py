"""`branchspark ui` served for real: one small catalog per module, the app on uvicorn in a thread of the test
process (sharing its SparkSession), on a free loopback port."""
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
import uvicorn

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.adapters.branchspark.ui.app import create_app

TOKEN = "ui-test-token-4f1e9c"


def build_catalog(lh: Lakehouse, spark) -> None:
    """main: shop.orders (keyed on id) and shop.events (keyless); branches that differ, merge cleanly, conflict
    (the same cell changed on both sides) and will pause, deletes rows; main protected."""
    with lh.transaction("main", message="create the shop") as tx:
        tx.create_database("shop")
        tx.create_table_as("shop.orders", spark.createDataFrame(
            [(i, float(i * 10), "new") for i in range(1, 6)], "id bigint, amount double, status string"),
            primary_key=["id"])
        tx.create_table_as("shop.events", spark.createDataFrame([(1, "open"), (2, "close")], "id int, kind string"))
    for name in ("dev", "hotfix", "patch", "stage"):
        lh.create_branch(name, "main")
    lh.branch("dev").update("shop.orders", "id = 2", {"amount": "25.5"}, message="dev: reprice order 2")
    lh.branch("dev").insert("shop.events", spark.createDataFrame([(3, "reopen")], "id int, kind string"),
                            message="dev: one more event")
    lh.branch("hotfix").update("shop.orders", "id = 3", {"status": "'held'"}, message="hotfix: hold order 3")
    lh.branch("main").update("shop.orders", "id = 3", {"status": "'shipped'"}, message="main: ship order 3")
    lh.branch("patch").update("shop.orders", "id = 4", {"amount": "44.0"}, message="patch: order 4 is 44")
    lh.branch("stage").update("shop.orders", "id = 4", {"amount": "40.5"}, message="stage: order 4 is 40.5")
    lh.merge("dev", "stage", message="merge dev into stage")
    # trim: order 5 deleted (its tombstone names a file main's update deleted from too), events compacted (rows
    # kept under their old row ids) then event 1 deleted
    lh.create_branch("trim", "main")
    lh.branch("trim").delete("shop.orders", "id = 5", message="trim: drop order 5")
    lh.branch("trim").compact("shop.events", message="trim: compact events")
    lh.branch("trim").delete("shop.events", "id = 1", message="trim: drop event 1")
    lh.protect_branch("main")  # writable only by merge from here on


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Served:
    def __init__(self, app):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("branchspark ui did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    lh = Lakehouse(spark, str(tmp_path_factory.mktemp("ui") / "warehouse"))
    build_catalog(lh, spark)
    yield lh
    lh.store.dispose()


@pytest.fixture(scope="module")
def served(lake):
    """Pages open on loopback, writes with the token (as `branchspark ui` without --token)."""
    with Served(create_app(lake, TOKEN, reads_need_token=False)) as server:
        yield server


def fetch(url: str, data: bytes | None = None, headers: dict | None = None) -> tuple[int, str, dict]:
    """(status, body, headers) of one request, without following redirects."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=120) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)
