"""The package's imports, read from its source (issue 25): two layers, no circles. No Spark needed.

core/ is plain PySpark: it imports nothing above it, neither the dbt surface (adapter/), the command line
(cli/), the Iceberg server (iceberg/), the local engine (engine/), nor dbt itself. Every other part imports
only the parts it stands on (LAYERS). No import circle, counting imports inside functions and under
TYPE_CHECKING; no import inside a function in the core, and elsewhere only the ones listed with their reason.
"""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

PACKAGE = "dbt.adapters.branchspark"
PACKAGE_DIR = Path(__file__).resolve().parents[2] / "dbt" / "adapters" / "branchspark"

# The parts (sub-packages; `top` is the package's own modules) and what each may import.
LAYERS = {
    "core": {"core"},
    "engine": {"engine", "core"},
    "iceberg": {"iceberg", "core"},
    "adapter": {"adapter", "engine", "core"},
    "ui": {"ui", "iceberg", "core"},  # the web view (issue 54), on the Iceberg server's app
    "cli": {"cli", "engine", "iceberg", "ui", "core"},
    "top": {"top", "adapter", "core"},  # the plugin hook and the public paths README documents
}
# Imports inside a function, and why each cannot stand at the top of its module. None in the core dodges a
# circle: the core's only ones keep a library that few invocations need out of every invocation's start.
FUNCTION_IMPORTS = {
    (PACKAGE, f"{PACKAGE}.adapter.plugin"):
        "dbt reads Plugin from the package, which must import without dbt so that the core does",
    (f"{PACKAGE}.adapter.impl", f"{PACKAGE}.adapter.branch_changes"):
        "the changes and diff cores cost every dbt invocation about 0.15 s of imports; only branch_changes, "
        "branch_diff and restore use them",
    (f"{PACKAGE}.adapter.impl", f"{PACKAGE}.adapter.diff_operations"): "the same",
    (f"{PACKAGE}.cli.sql_cmd", "readline"): "importing readline may write to the terminal; only the interactive "
                                            "`branchspark sql` shell wants its line editing and history",
}
CORE_FUNCTION_IMPORTS = {
    (f"{PACKAGE}.core.catalog.store", "alembic"): "only creating or upgrading a catalog migrates its schema; "
                                                  "importing alembic costs every dbt invocation about 0.1 s",
    (f"{PACKAGE}.core.catalog.store", "alembic.config"): "the same",
    (f"{PACKAGE}.core.connect", "pyspark.sql.connect.dataframe"):
        "only a Spark Connect session reaches it, and pyspark's Connect client needs grpc and pandas, which a "
        "classic session's pyspark (no `connect` extra) lacks",
    (f"{PACKAGE}.core.connect", "pyspark.sql.connect.plan"): "the same",
    (f"{PACKAGE}.core.imports.iceberg_table", "pyiceberg.table"):
        "only an import of an Iceberg table reads Iceberg metadata; importing pyiceberg costs every invocation "
        "about 0.9 s",
    (f"{PACKAGE}.core.imports.iceberg_table", "pyiceberg.io.pyarrow"): "the same",
    (f"{PACKAGE}.core.imports.iceberg_table", "pyiceberg.manifest"): "the same",
}
DBT = ("dbt", "dbt_common", "agate")  # dbt-core, dbt-spark, dbt-adapters and what they bring


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


MODULES = _modules()


def _imports(module: str, path: Path):
    """(imported module, line, inside a function) for every import of `module`, wherever it stands."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - child.level + 1])
                    base = f"{base}.{child.module}" if child.module else base
                else:
                    base = child.module
                for alias in child.names:
                    candidate = f"{base}.{alias.name}"
                    found.append((candidate if candidate in MODULES else base, child.lineno, in_function))
            visit(child, inside)

    visit(tree, False)
    return found


IMPORTS = {module: _imports(module, path) for module, path in MODULES.items()}


VERSION = f"{PACKAGE}.__version__"  # a leaf every part may read


def _part(module: str) -> str:
    rest = module[len(PACKAGE) + 1:].split(".")[0] if module != PACKAGE else ""
    return rest if rest in LAYERS and rest != "top" else "top"


def _ours(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in found if t in MODULES and t != m} for m, found in IMPORTS.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_the_checks_see_the_package():
    assert f"{PACKAGE}.core.lakehouse" in MODULES and f"{PACKAGE}.adapter.impl" in MODULES
    assert any(t == f"{PACKAGE}.core.storage.reader" for t, _, _ in IMPORTS[f"{PACKAGE}.core.transaction"])
    # the circle finder finds a circle where there is one
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle():
    assert _circles(_graph()) == []


def test_each_part_imports_only_the_parts_it_stands_on():
    wrong = [f"{m}:{line} imports {t}" for m, found in IMPORTS.items() for t, line, _ in found
             if _ours(t) and t in MODULES and t != VERSION and _part(t) not in LAYERS[_part(m)]]
    assert wrong == []


def test_the_core_imports_nothing_of_dbt():
    wrong = [f"{m}:{line} imports {t}" for m, found in IMPORTS.items() if _part(m) == "core"
             for t, line, _ in found if t.split(".")[0] in DBT and not _ours(t)]
    assert wrong == []


def test_no_import_inside_a_function_but_the_listed_ones():
    found = {(m, t): f"{m}:{line} imports {t}" for m, imports in IMPORTS.items() for t, line, inside in imports
             if inside}
    in_core = {key: where for key, where in found.items() if _part(key[0]) == "core"}
    assert sorted(in_core.keys() - CORE_FUNCTION_IMPORTS.keys()) == []
    assert all(not target.startswith(PACKAGE) for _, target in in_core)  # never one of the package's own
    assert sorted(found.keys() - in_core.keys() - FUNCTION_IMPORTS.keys()) == []


def test_the_core_loads_with_dbt_and_the_parts_above_it_refused():
    """Every core module imports in a fresh interpreter in which dbt, agate and the parts above the core
    cannot be imported at all."""
    core_modules = sorted(m for m in MODULES if _part(m) == "core" and ".migrations" not in m)
    script = textwrap.dedent(f"""
        import importlib, importlib.abc, sys
        PACKAGE = {PACKAGE!r}
        ALLOWED = ("dbt", "dbt.adapters", PACKAGE, {VERSION!r})
        class Refuse(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                ours_core = name == PACKAGE + ".core" or name.startswith(PACKAGE + ".core.")
                top = name.split(".")[0]
                if top in ("dbt_common", "agate") or (top == "dbt" and name not in ALLOWED and not ours_core):
                    raise ImportError("refused by the layer test: " + name)
                return None
        sys.meta_path.insert(0, Refuse())
        for module in {core_modules!r}:
            importlib.import_module(module)
        print(len({core_modules!r}), "core modules imported")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"{len(core_modules)} core modules imported" in run.stdout


def test_the_public_paths_readme_documents_still_import():
    core_lakehouse = importlib.import_module(f"{PACKAGE}.core.lakehouse")
    assert importlib.import_module(f"{PACKAGE}.lakehouse").Lakehouse is core_lakehouse.Lakehouse
    changes = importlib.import_module(f"{PACKAGE}.changes")
    assert changes.table_changes is importlib.import_module(f"{PACKAGE}.core.changes").table_changes
    assert changes.open_changes is importlib.import_module(f"{PACKAGE}.core.changes").open_changes
    errors = importlib.import_module(f"{PACKAGE}.errors")
    assert errors.MergeConflict is importlib.import_module(f"{PACKAGE}.core.errors").MergeConflict
    assert callable(importlib.import_module(f"{PACKAGE}.cli.main").cli)  # setup.py's `branchspark` entry point
