"""dbt from the shell: wall time of each command, as a user types it, on four setups side by side.

    python bench/dbt_cli.py [--repeats 1] [--keep]

Each command is its own `dbt ...` process started from the shell (a subprocess here), so every setup
pays what a user pays per invocation: Python and dbt's start, the profile, and the Spark session.
The sample project (`sample_project/`, models tagged `branchspark_only` excluded), per setup:

    warm engine     branchspark, `method: local`: the warm local Spark engine, started once by an
                    untimed warm-up invocation (`dbt debug`) before the timed commands, which wait
                    for the engine's own warm-up (engine/warmup.py) to end, as a user's next command
                    typed after the start would
    session         branchspark, `method: session`: a Spark JVM started by each invocation
    dbt-spark       plain dbt-spark, `method: session`, Parquet (the copy bench/dbt_run.py makes)
    dbt-duckdb      dbt-duckdb on a copy of the project (the floor: dbt's own overhead); only what
                    DuckDB's SQL needs is changed: `date_sub(d, 3)` -> `d - interval 3 day`, and
                    fct_orders' incremental strategy `merge` -> `delete+insert` on the same key

Timed, in this order: `dbt seed`, `dbt run`, `dbt run` again (incremental: fct_orders takes the 2
rows `add_late_orders`, untimed, adds) and `dbt test`. Before them, each setup's project gets an
untimed `dbt parse` (dbt's partial-parse file; every later invocation of every setup then parses
alike). Spark: `local[2]`, 2 shuffle partitions, no UI on every Spark setup; the engine has 2 GB of
driver memory ($BRANCHSPARK_ENGINE_MEMORY), its own state directory in the scratch dir, and is
stopped at the end. Setups run one after another (never two JVMs at once), alternating order per
repeat; medians of `--repeats` cycles. Targets: warm engine <= 0.35x dbt-spark for the sum, and
<= 3x dbt-duckdb. dbt-duckdb (`pip install -e '.[bench]'`) is installed first when missing, with a
note. Exits 0 whatever the ratios are. On dbt-spark two data tests fail, as they do in bench/dbt_run.py's
copy: fct_orders appends instead of merging (duplicate order_ids) and its seed loads an empty cell as
'None'; the tests still run in full, so `dbt test` is timed all the same. `--setups` runs some only.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from common import report, scratch_dir
from dbt_run import REPO, SELECT, copy_project, setup_branchspark, setup_dbt_spark, write_yaml

SETUPS = ("warm engine", "session", "dbt-spark", "dbt-duckdb")
TIMED = ("dbt seed", "dbt run", "dbt run (incremental)", "dbt test")
TARGET_VS_SPARK, TARGET_VS_DUCKDB = 0.35, 3.0
BIN = os.path.dirname(sys.executable)


def ensure_dbt_duckdb() -> None:
    try:
        import dbt.adapters.duckdb  # noqa: F401
    except ImportError:
        print("note: dbt-duckdb is not installed; installing it into this environment "
              "(pip install -e '.[bench]')", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "-e", f"{REPO}[bench]"], check=True)


def setup_engine(side_dir: str) -> str:
    """The branchspark copy with `method: local`: the engine owns master and memory, so only runtime
    settings stay in spark_config."""
    import yaml

    project = setup_branchspark(side_dir)
    path = os.path.join(side_dir, "profiles.yml")
    with open(path) as src:
        profiles = yaml.safe_load(src)
    for output in profiles["branchspark_sample"]["outputs"].values():
        output["method"] = "local"
        output["spark_config"] = {"spark.sql.shuffle.partitions": "2", "spark.sql.ansi.enabled": "false"}
    write_yaml(path, profiles)
    return project


def setup_duckdb(side_dir: str) -> str:
    import yaml

    project = copy_project(side_dir)
    config_path = os.path.join(project, "dbt_project.yml")
    with open(config_path) as src:
        config = yaml.safe_load(src)
    config["profile"] = "duckdb_bench"
    write_yaml(config_path, config)
    fct = os.path.join(project, "models", "marts", "fct_orders.sql")
    with open(fct) as src:
        text = src.read()
    text, strategies = re.subn(r"incremental_strategy\s*=\s*'merge'", "incremental_strategy='delete+insert'", text)
    text, dates = re.subn(r"date_sub\((max\(order_date\)), 3\)", r"\1 - interval 3 day", text)
    if strategies != 1 or dates != 1:
        raise SystemExit(f"{fct}: expected one merge strategy and one date_sub to adapt for DuckDB")
    with open(fct, "w") as out:
        out.write(text)
    macro = os.path.join(project, "macros", "late_orders.sql")
    with open(macro) as src:
        text = src.read()
    with open(macro, "w") as out:  # a DuckDB target has no branch
        out.write(text.replace(' ~ " on branch " ~ target.branch', ""))
    write_yaml(os.path.join(side_dir, "profiles.yml"), {"duckdb_bench": {"target": "dev", "outputs": {
        "dev": {"type": "duckdb", "path": os.path.join(side_dir, "bench.duckdb"), "schema": "shop", "threads": 1},
    }}})
    return project


def dbt(side_dir: str, project: str, log, *args: str, failing_tests_ok: bool = False) -> float:
    command = [os.path.join(BIN, "dbt"), *args, "--project-dir", project, "--profiles-dir", side_dir]
    log.write(f"\n######## {' '.join(command)}\n")
    log.flush()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=side_dir, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    # exit code 1 of `dbt test`: it ran, and some data tests failed (dbt-spark's, see the docstring)
    if done.returncode != 0 and not (failing_tests_ok and done.returncode == 1):
        raise SystemExit(f"`dbt {' '.join(args)}` failed in {side_dir}; its log: {log.name}")
    return seconds


def wait_for_engine_warmup(timeout: float = 300) -> None:
    """Until the engine's own warm-up (engine/warmup.py), which it runs right after it answers, has ended:
    the timed commands then measure the engine warm, as between a user's commands."""
    from dbt.adapters.branchspark.engine.state import EngineHome

    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        state = EngineHome().read()
        if state is None or state.warmed_at is not None:
            break
        time.sleep(0.5)
    state = EngineHome().read()
    done = "failed" if state and state.warmed_at == -1.0 else "done"
    print(f"engine warm-up {done}; waited {time.perf_counter() - start:.1f} s for it", flush=True)


def cycle(setup: str, root: str, repeat: int, environment: dict) -> dict:
    side_dir = os.path.join(root, f"{setup.replace(' ', '-')}-{repeat}")
    os.makedirs(side_dir)
    project = {"warm engine": setup_engine, "session": setup_branchspark, "dbt-spark": setup_dbt_spark,
               "dbt-duckdb": setup_duckdb}[setup](side_dir)
    target = ["--target", "dev"]
    os.environ.update(environment)
    with open(os.path.join(side_dir, "dbt.log"), "w") as log:
        dbt(side_dir, project, log, "parse", *target)
        if setup == "warm engine":
            dbt(side_dir, project, log, "debug", *target)  # the warm-up invocation (starts the engine once)
            wait_for_engine_warmup()
        times = {"dbt seed": dbt(side_dir, project, log, "seed", *SELECT, *target),
                 "dbt run": dbt(side_dir, project, log, "run", *SELECT, *target)}
        dbt(side_dir, project, log, "run-operation", "add_late_orders", *target)
        times["dbt run (incremental)"] = dbt(side_dir, project, log, "run", *SELECT, *target)
        times["dbt test"] = dbt(side_dir, project, log, "test", *SELECT, *target, failing_tests_ok=setup == "dbt-spark")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=1, help="timed cycles per setup")
    parser.add_argument("--keep", action="store_true", help="keep the scratch dir")
    parser.add_argument("--setups", default=",".join(SETUPS), help="comma-separated subset of: " + ", ".join(SETUPS))
    args = parser.parse_args()
    chosen = tuple(setup for setup in SETUPS if setup in args.setups.split(","))
    if "dbt-duckdb" in chosen:
        ensure_dbt_duckdb()
    root = scratch_dir("dbt-cli")
    environment = {"DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1",
                   "PYSPARK_PYTHON": sys.executable, "BRANCHSPARK_ENGINE_HOME": os.path.join(root, "engine"),
                   "BRANCHSPARK_ENGINE_MASTER": "local[2]"}
    print(f"scratch dir {root}; load average {os.getloadavg()[0]:.2f} at start", flush=True)
    samples = {setup: [] for setup in chosen}
    try:
        for repeat in range(args.repeats):
            for setup in (chosen if repeat % 2 == 0 else chosen[::-1]):
                samples[setup].append(cycle(setup, root, repeat, environment))
                print(f"cycle {repeat + 1}/{args.repeats} of {setup}: "
                      + ", ".join(f"{k} {v:.1f} s" for k, v in samples[setup][-1].items()), flush=True)
    finally:
        subprocess.run([os.path.join(BIN, "branchspark"), "engine", "stop"], env={**os.environ, **environment})

    def median(setup: str, key: str) -> float:
        return statistics.median(sample[key] for sample in samples[setup])

    rows = [(f"{command}: {setup}", median(setup, command)) for command in TIMED for setup in chosen]
    totals = {setup: statistics.median(sum(s.values()) for s in samples[setup]) for setup in chosen}
    rows += [(f"sum: {setup}", totals[setup]) for setup in chosen]
    ratios = [(f"sum: {a} / {b}", totals[a] / totals[b], target) for a, b, target in (
        ("warm engine", "dbt-spark", TARGET_VS_SPARK), ("warm engine", "dbt-duckdb", TARGET_VS_DUCKDB),
        ("session", "dbt-spark", 1.15)) if a in totals and b in totals]
    report(f"sample dbt project from the shell, median of {args.repeats} cycle(s) per setup", rows, ratios)
    print(f"\nload average {os.getloadavg()[0]:.2f} at end")
    if args.keep:
        print(f"kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
