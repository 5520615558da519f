"""branchspark side by side with Delta Lake and Apache Iceberg on the same work, in one run (issue 52).

    python bench/peers.py [--scale 1.0] [--repeats 3] [--warmup 1] [--steps upsert,changes,scan,preview,dbt]
                          [--peers delta,iceberg_cow,iceberg_mor] [--preview-tables 20] [--no-on-41] [--keep]

At scale 1: a table of 10M rows (id, amount, customer; 4 files), 10k changed rows per upsert. `--scale 0.01`
runs the same at 100k rows and 100 changes. Spark processes with the same settings (`local[2]`, 4 shuffle
partitions, 4 GB driver memory, no UI): branchspark in this one (pyspark 4.3, the project's), and the peers
in bench/peers_side.py under .venv-peers (pyspark 4.1 with Iceberg's runtime 1.12.0 and Delta Lake 4.4.0,
`make peers`; Iceberg has no runtime for Spark 4.3 yet), and (unless `--no-on-41`) branchspark again on the
peers' Spark 4.1, in a third process with its own table (bench/peers_branchspark.py): the same upserts, feed and
scan, its ratios to the peers printed beside ours, so that a gap splits into what our code costs and what
Spark's version does (no target of its own). Each step runs on every side in turn, the order
rotating per round, so all sides share the machine's load alike; medians of `--repeats` rounds, after
`--warmup` untimed rounds (1) of the upsert, changes and scan steps: a side's first run of a step loads and
compiles its code paths (quiet, at 1M rows: branchspark's first upsert in a fresh process 2.4 s, its third
0.8 s; Iceberg merge-on-read's 1.45 s and 1.32 s), which a long-lived session or engine pays once. Each
round's time is printed. The peers share one process, so a round warms their JVM with one MERGE per peer
(three) where ours runs one upsert; `--peers iceberg_mor` builds and upserts that peer alone, for rounds in
which each JVM has run as many writes as the other (the changes step needs delta and iceberg_cow, the scan
and preview steps delta and iceberg_mor).

    upsert      `--changed` rows with new amounts, spread over the table: branchspark's upsert on the key (what
                dbt's `merge` incremental strategy runs) against MERGE INTO on Delta (deletion vectors on, as
                the change data feed) and on Iceberg copy-on-write and merge-on-read
    changes     the change rows of the last upsert, read in full: branch_changes (table_changes) against
                Delta's table_changes_by_path and Iceberg's create_changelog_view (copy-on-write: Iceberg's
                changelog does not read merge-on-read deletes); no target, the floors: the files our upsert
                wrote (its segment's and tombstone's), and Delta's change data files of its version, each read
                plain by its side's Spark
    scan        a full scan (every column hashed and summed; the sums must agree) after 1% of the rows were
                deleted (one DELETE, timed once apart): branchspark's
                tombstones against Delta's deletion vectors and Iceberg's position deletes (merge-on-read),
                and the floor: the same hash over a plain Parquet copy of the live rows (written once,
                untimed), read in this process (Spark 4.3) and in the peers' (Spark 4.1, no target: it shows
                whether a peer that reads below our floor does so on its Spark's own Parquet reader); and the
                layouts' floors (no target): our table's data files and Iceberg merge-on-read's, each read plain
                by its side's Spark, every row they hold (the deleted and superseded ones, the upserts' small
                files), what a reader that drops rows by position must read at least
    preview     a CI preview environment of a dbt project of `--preview-tables` tables (20): the 10M-row
                table and 19 small ones of 10k rows each (1/1000 of the big one; built at setup, untimed).
                A project's rows sit in a few fact tables, its staging and dimension models are small, and a
                clone or a branch costs per table, not per row: the small tables carry that per-table cost,
                the big one keeps the rebuild's rows, and `--preview-tables 1` is the one-table step of the
                first runs. The preview of the whole project: one branchspark branch (one catalog row for
                every table) against a Delta SHALLOW CLONE of every table into a preview folder, a Delta
                rebuild (CREATE TABLE AS SELECT) of every table, and an Iceberg branch on every table; wall
                time and bytes written under the warehouse (branchspark: and its catalog file)
    dbt         `dbt run` of the sample project (sample_project/, its models but the branchspark-only
                fct_order_changes) from the shell, wall time of the whole process: branchspark on its warm
                local engine (started and warmed up before the rounds: the run attaches to it) and on
                `method: session` (the run starts its JVM), against dbt-spark 1.11 `method: session` in
                .venv-peers with `file_format: delta` and with `file_format: iceberg` (cold JVM start
                included); one row per branchspark setup. Not scaled by --scale (the sample's seeds); runs
                first and needs neither the generated table nor this process's Spark. Details: bench/peers_dbt.py

Exits 0 whatever the ratios are.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import scratch_dir  # puts the repo on sys.path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS_PYTHON = os.path.join(REPO, ".venv-peers", "bin", "python")
PEERS_JARS = os.path.join(REPO, ".jars", "peers")  # Delta's
SPARK_ICEBERG_JARS = os.path.join(REPO, ".jars", "spark-iceberg")  # Iceberg's runtime, shared with the tests
SPARK = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "4g",
         "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
# Issue 72's targets: at most the best peer's time on each row; the scan also within 1.1x of a plain Parquet
# scan of the same live rows (FLOOR, in this process).
TARGETS = {"upsert": 1.0, "changes": 1.0, "scan": 1.0, "preview": 0.01}
FLOOR = "parquet floor"
FLOOR_PEERS = "parquet, Spark 4.1"  # the same files read by the peers' Spark: is a peer below our floor Spark's?
FLOOR_TARGET = 1.1
# The feed's floors (no target): the files the upsert wrote, read plain by each side's Spark.
FEED_FLOOR = "its files, plain"  # our segment's and tombstone's files, Spark's Parquet source, no catalog or plans
DELTA_CDC_FLOOR = "delta cdc, plain"  # the version's _change_data files, Spark 4.1's Parquet source
# The layout's floors (no target): each table's data files read plain, every row they hold (the deleted ones too):
# what a reader that drops rows by position must read at least, beside the live rows' floor above
OUR_FILES = "our files, plain"
ICEBERG_FILES = "iceberg files, plain"  # Iceberg merge-on-read's data files (not its delete files), Spark 4.1
# branchspark on the peers' Spark (no target of its own): its ratios to the peers are printed beside ours
ON_41 = "branchspark, 4.1"
# the columns printed beside the peers' for what they show, with no target of their own
NO_TARGET = (FLOOR_PEERS, FEED_FLOOR, DELTA_CDC_FLOOR, ON_41, OUR_FILES, ICEBERG_FILES)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers_side  # noqa: E402  (stdlib and pyspark only: the same rows on both sides)
from peers_branchspark import Branchspark  # noqa: E402
from peers_dbt import dbt_step  # noqa: E402


def peers_jars() -> list[str]:
    """Every jar `make peers` copied: Delta's and Iceberg's runtime."""
    return sorted(os.path.join(folder, j) for folder in (PEERS_JARS, SPARK_ICEBERG_JARS)
                  for j in os.listdir(folder) if j.endswith(".jar"))


class SideProcess:
    """A side in a process of .venv-peers' Python (Spark 4.1): one JSON command per line each way."""

    def __init__(self, scratch: str, script: str, log: str, **start):
        if not os.path.exists(PEERS_PYTHON):
            raise SystemExit("bench/peers.py needs the peers' environment: run `make peers` first")
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYTHONPATH")}
        env["PYSPARK_PYTHON"] = PEERS_PYTHON
        self.log = open(os.path.join(scratch, log), "w")
        self.process = subprocess.Popen([PEERS_PYTHON, os.path.join(REPO, "bench", script)], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)
        started = self("start", **start)
        self.version, self.java = started["spark"], started["java"]

    def __call__(self, op: str, **args) -> dict:
        self.process.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the peers' process ended; its log: {self.log.name}")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=120)


class PeersProcess(SideProcess):
    """Delta Lake and Iceberg (bench/peers_side.py)."""

    def __init__(self, root: str):
        super().__init__(root, "peers_side.py", "peers.log", root=os.path.join(root, "peers"), jars=peers_jars(),
                         config=SPARK)


class Branchspark41Process(SideProcess):
    """branchspark itself on the peers' Spark 4.1 (bench/peers_branchspark.py, `make peers` installs it there):
    the same steps on its own table, so that a gap to a peer splits into our code's and Spark's version's."""

    def __init__(self, root: str):
        if not os.path.exists(os.path.join(os.path.dirname(os.path.dirname(PEERS_PYTHON)), ".branchspark")):
            raise SystemExit("bench/peers.py's Spark 4.1 side needs branchspark in .venv-peers: run `make peers`")
        super().__init__(root, "peers_branchspark.py", "branchspark41.log",
                         root=os.path.join(root, "branchspark41"), config=SPARK)


def dir_bytes(path: str) -> int:
    return peers_side.dir_bytes(path)


def rounds(sides: dict, repeats: int, step, warmup: int = 0) -> dict:
    """step(label, side, round) -> answer; each round takes every side in turn, the order rotating. `warmup`
    rounds first, untimed (printed, not returned): every side's first run of a step loads and compiles its code
    paths, which a long-lived session or engine pays once."""
    answers = {label: [] for label in sides}
    warm = {label: [] for label in sides}
    order = list(sides)
    warmup = warmup if repeats else 0
    for index in range(warmup + repeats):
        shift = index % len(order)
        for label in order[shift:] + order[:shift]:
            (warm if index < warmup else answers)[label].append(step(label, sides[label], index))
    if repeats:  # each round's time: a median hides a round that load slowed
        print("  rounds (s): " + "; ".join(
            f"{label} " + ", ".join([f"({a['seconds']:.2f})" for a in warm[label]] + [f"{a['seconds']:.2f}" for a in runs])
            for label, runs in answers.items() if runs and "seconds" in runs[0]) + "  (in brackets: warm-up)",
            flush=True)
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0: 10M rows, 10k changes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed rounds before the timed ones, of the upsert, changes and scan steps")
    parser.add_argument("--peers", default=",".join(peers_side.KINDS),
                        help="the peers' tables built and upserted, of " + ", ".join(peers_side.KINDS))
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--preview-tables", type=int, default=20,
                        help="the preview step's project: the big table and N-1 tables of 1/1000 its rows")
    parser.add_argument("--steps", default="upsert,changes,scan,preview,dbt",
                        help="comma-separated subset of upsert, changes (needs upsert), scan, preview, dbt")
    parser.add_argument("--on-41", action=argparse.BooleanOptionalAction, default=True,
                        help="also run branchspark on the peers' Spark 4.1, in a process of its own (upsert, "
                             "changes, scan)")
    args = parser.parse_args()
    total, changed = int(10_000_000 * args.scale), max(int(10_000 * args.scale), 10)
    steps = args.steps.split(",")
    unknown = set(args.peers.split(",")) - set(peers_side.KINDS)
    if unknown:
        raise SystemExit(f"bench/peers.py: --peers takes {', '.join(peers_side.KINDS)}, "
                         f"not {', '.join(sorted(unknown))}")
    kinds = tuple(kind for kind in peers_side.KINDS if kind in args.peers.split(","))
    needs = {"changes": {"delta", "iceberg_cow"}, "scan": {"delta", "iceberg_mor"}, "preview": {"delta", "iceberg_mor"}}
    for step, needed in needs.items():
        if step in steps and not needed <= set(kinds):
            raise SystemExit(f"bench/peers.py: the {step} step needs --peers to hold {', '.join(sorted(needed))}")
    root = scratch_dir("peers")
    print(f"bench/peers.py: steps {args.steps}; {total:,} rows, {changed:,} changed rows (the table's steps), "
          f"{args.repeats} rounds after {args.warmup} untimed; scratch {root}; "
          f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
    results: dict[str, dict[str, float]] = {}
    extra: dict[str, dict[str, int]] = {}
    if "dbt" in steps:  # first, before this process's Spark and the peers' process hold their memory
        dbt_rows(root, args.repeats, results)
    if not set(steps) - {"dbt"}:
        finish(root, results, extra, args.keep)
        return
    bs, peers = Branchspark(root), PeersProcess(root)
    on_41 = Branchspark41Process(root) if args.on_41 and set(steps) & {"upsert", "changes", "scan"} else None
    try:
        import pyspark
        java = bs.spark._jvm.java.lang.System.getProperty("java.version")
        print(f"branchspark: pyspark {pyspark.__version__} on Java {java}; peers: Spark {peers.version} on Java "
              f"{peers.java}, "
              f"{', '.join(sorted(os.path.basename(j) for j in peers_jars() if 'delta-spark' in j or 'iceberg' in j))}"
              + (f"; {ON_41} on Java {on_41.java}" if on_41 else ""), flush=True)
        setup = {"branchspark": bs.setup(total)["seconds"],
                 f"peers ({len(kinds)} tables)": peers("setup", total=total, kinds=kinds)["seconds"]}
        if on_41:
            setup[ON_41] = on_41("setup", total=total)["seconds"]
        if "preview" in steps and args.preview_tables > 1:  # the preview's project (its small tables), untimed
            small = project_rows_each(total)
            setup[f"branchspark, {args.preview_tables - 1} small tables"] = bs.setup_project(
                args.preview_tables, small)["seconds"]
            setup[f"peers, {args.preview_tables - 1} small tables x 2"] = peers(
                "setup_project", tables=args.preview_tables, rows_each=small)["seconds"]
        print("setup (untimed for the ratios): " + ", ".join(f"{k} {v:.1f} s" for k, v in setup.items()), flush=True)

        sides = {"branchspark": lambda i: bs.upsert(total, changed, i)}
        for kind in kinds:
            sides[kind] = (lambda k: lambda i: peers("upsert", kind=k, total=total, changed=changed, round_index=i))(kind)
        if on_41:
            sides[ON_41] = lambda i: on_41("upsert", total=total, changed=changed, round_index=i)
        upserts = rounds(sides, args.repeats if "upsert" in steps else 0, lambda label, run, i: run(i), args.warmup)
        if "upsert" in steps:
            results["upsert"] = {label: statistics.median(a["seconds"] for a in runs) for label, runs in upserts.items()}
            report({"upsert": results["upsert"]}, {})
        last = {label: runs[-1] for label, runs in upserts.items() if runs}

        feed = {"branchspark": lambda i: bs.change_feed(last["branchspark"]["before"], last["branchspark"]["after"]),
                "delta": lambda i: peers("change_feed", kind="delta", before=last["delta"]["before"],
                                         after=last["delta"]["after"]),
                "iceberg_cow": lambda i: peers("change_feed", kind="iceberg_cow", before=last["iceberg_cow"]["before"],
                                               after=last["iceberg_cow"]["after"]),
                FEED_FLOOR: lambda i: bs.feed_files_scan(last["branchspark"]["before"], last["branchspark"]["after"]),
                DELTA_CDC_FLOOR: lambda i: peers("cdc_scan", version=last["delta"]["after"])}
        if on_41 and ON_41 in last:
            feed[ON_41] = lambda i: on_41("change_feed", before=last[ON_41]["before"], after=last[ON_41]["after"])
        answers = rounds(feed, args.repeats if "changes" in steps and last else 0, lambda label, run, i: run(i),
                         args.warmup)
        if "changes" in steps and last:
            results["changes"] = {label: statistics.median(a["seconds"] for a in runs) for label, runs in answers.items()}
            report({"changes": results["changes"]}, {})

        if "scan" in steps:
            scan_step(bs, peers, args.repeats, results, args.warmup, on_41)
        if "preview" in steps:
            preview_step(bs, peers, args.repeats, args.preview_tables, total, results, extra)
    finally:
        peers.close()
        if on_41:
            on_41.close()
    finish(root, results, extra, args.keep)


def finish(root: str, results: dict, extra: dict, keep: bool) -> None:
    print("\n######## all steps")
    report(results, extra)
    print(f"\nload average {os.getloadavg()[0]:.1f} at end")
    if not keep:
        shutil.rmtree(root, ignore_errors=True)


def dbt_rows(root: str, repeats: int, results: dict) -> None:
    """`dbt run` from the shell on four setups (bench/peers_dbt.py); one row per branchspark setup."""
    if not os.path.exists(os.path.join(os.path.dirname(PEERS_PYTHON), "dbt")):
        raise SystemExit("bench/peers.py's dbt step needs dbt-spark in the peers' environment: run `make peers`")
    jars = peers_jars()
    print("\n== dbt: `dbt run` of the sample project from the shell, wall time of the process", flush=True)
    times = dbt_step(root, SPARK, jars, repeats, rounds)
    peers_times = {"dbt-spark delta": times["dbt-spark delta"], "dbt-spark iceberg": times["dbt-spark iceberg"]}
    results["dbt run, warm engine (already started)"] = {"branchspark": times["branchspark, warm engine"],
                                                         **peers_times}
    results["dbt run, method: session (cold JVM)"] = {"branchspark": times["branchspark, session"], **peers_times}
    report({k: results[k] for k in list(results)[-2:]}, {})


def scan_step(bs, peers, repeats, results, warmup: int = 0, on_41=None) -> None:
    deletes = {"branchspark": bs.delete_percent()["seconds"]}
    for kind in ("delta", "iceberg_mor"):
        deletes[kind] = peers("delete_percent", kind=kind)["seconds"]
    counts = {"branchspark": bs.count()["count"], **{k: peers("count", kind=k)["count"]
                                                    for k in ("delta", "iceberg_mor")}}
    if on_41:
        deletes[ON_41] = on_41("delete_percent")["seconds"]
        counts[ON_41] = on_41("count")["count"]
    if len(set(counts.values())) != 1:
        raise SystemExit(f"the sides hold different rows after the deletes: {counts}")
    bs.floor_scan()  # its copy written before the rounds
    scan = {"branchspark": lambda i: bs.full_scan(),
            **{k: (lambda kk: lambda i: peers("full_scan", kind=kk))(k) for k in ("delta", "iceberg_mor")},
            FLOOR: lambda i: bs.floor_scan(),
            FLOOR_PEERS: lambda i: peers("parquet_scan", path=bs.floor),
            OUR_FILES: lambda i: bs.files_scan(),
            ICEBERG_FILES: lambda i: peers("files_scan", kind="iceberg_mor")}
    if on_41:
        scan[ON_41] = lambda i: on_41("full_scan")
    answers = rounds(scan, repeats, lambda label, run, i: run(i), warmup)
    results["scan"] = {label: statistics.median(a["seconds"] for a in runs) for label, runs in answers.items()}
    layouts = (OUR_FILES, ICEBERG_FILES)  # every row the files hold: not the live rows' sum
    sums = {label: tuple(runs[-1]["sum"]) for label, runs in answers.items() if label not in layouts}
    if len(set(sums.values())) != 1:
        raise SystemExit(f"the sides read different rows after the deletes (hash sums): {sums}")
    results["delete 1% (one run)"] = deletes
    report({"scan": results["scan"], "delete 1% (one run)": deletes}, {})
    print(f"rows after the deletes, every side: {counts['branchspark']:,}")
    held = {label: (answers[label][-1]["sum"][0], answers[label][-1]["files"]) for label in layouts}
    medians = results["scan"]
    print("the layouts read plain: " + "; ".join(f"{label} {rows:,} rows in {files} files" for label, (rows, files)
                                                in held.items())
          + f"; branchspark / {OUR_FILES} {medians['branchspark'] / medians[OUR_FILES]:.3f}x, iceberg_mor / "
          f"{ICEBERG_FILES} {medians['iceberg_mor'] / medians[ICEBERG_FILES]:.3f}x (each scan over the files it "
          f"reads); {OUR_FILES} / {FLOOR} {medians[OUR_FILES] / medians[FLOOR]:.3f}x (the layout over the live "
          f"rows' floor)", flush=True)


def project_rows_each(total: int) -> int:
    """Rows of each small table of the preview's project: 1/1000 of the big table's (10k at scale 1)."""
    return max(total // 1000, 10)


def preview_step(bs, peers, repeats, tables, total, results, extra) -> None:
    """The whole project's preview per side, timed as one (a CI job waits for all of it); its table count in
    the step's name, and checked on every side: a preview that left a table out would look cheap."""
    rows = total + (tables - 1) * project_rows_each(total)
    print(f"\npreview: a project of {tables} tables, {rows:,} rows in all", flush=True)
    preview = {"branchspark": lambda i: bs.preview(f"preview{i}"),
               **{k: (lambda kk: lambda i: peers("preview", kind=kk, name=f"preview{i}"))(k)
                  for k in ("delta_clone", "delta_rebuild", "iceberg_mor")}}
    answers = rounds(preview, repeats, lambda label, run, i: run(i))
    made = {label: {a["tables"] for a in runs} for label, runs in answers.items() if label != "branchspark"}
    made["branchspark"] = {len(bs.lh.snapshot(f"preview{i}").tables("bench")) for i in range(repeats)}
    if any(counts != {tables} for counts in made.values()):
        raise SystemExit(f"a preview did not cover the project's {tables} tables: {made}")
    step = f"preview ({tables} tables)"
    results[step] = {label: statistics.median(a["seconds"] for a in runs) for label, runs in answers.items()}
    extra["preview bytes"] = {label: int(statistics.median(a["bytes"] for a in runs))
                              for label, runs in answers.items()}
    extra["preview bytes"]["branchspark catalog (SQLite pages)"] = int(statistics.median(
        a["catalog bytes"] for a in answers["branchspark"]))
    report({step: results[step]}, extra)
    print("peers' seconds per table (medians over the rounds): " + "; ".join(
        f"{label} the big table {statistics.median(a['each'][0] for a in runs):.3f}, a small one "
        f"{statistics.median(t for a in runs for t in a['each'][1:]) if tables > 1 else 0:.3f}"
        for label, runs in answers.items() if label != "branchspark"), flush=True)


def report(results: dict, extra: dict) -> None:
    print(f"\n== branchspark / peers (median seconds; ratio = branchspark / peer; load average "
          f"{os.getloadavg()[0]:.1f})", flush=True)
    for step, times in results.items():
        ours = times["branchspark"]
        print(f"{step}: branchspark {ours:.3f} s")
        for label, seconds in times.items():
            if label == "branchspark":
                continue
            ratio = ours / seconds if seconds else float("inf")
            target = (FLOOR_TARGET if label == FLOOR else None if label in NO_TARGET
                      else TARGETS.get(step.split(" (")[0]))
            verdict = "" if target is None else f"  (target <= {target}x: {'ok' if ratio <= target else 'OVER'})"
            print(f"  vs {label:<17} {seconds:9.3f} s   ratio {ratio:8.3f}x{verdict}")
        if ON_41 in times:  # the same Spark as the peers: what of a ratio above is Spark's version
            on_41 = times[ON_41]
            print(f"  on Spark 4.1, as the peers: branchspark {on_41:.3f} s; " + ", ".join(
                f"/ {label} {on_41 / seconds:.3f}x" for label, seconds in times.items()
                if label in peers_side.KINDS + (FLOOR_PEERS,) and seconds))
    for step, sizes in extra.items():
        print(f"{step}: " + ", ".join(f"{label} {size:,} B" for label, size in sizes.items()))


if __name__ == "__main__":
    main()
