"""The layers of docs/design.md, read from the code: imports point down only, and a command loads only what
it uses.

Layers, top to bottom (a module may import its own layer and the ones below it, never one above):

    cli -> report -> bench -> monitor -> checks -> plan -> ledger -> readers -> probe -> inputs -> model -> facts
    -> leaves

``rigcheck.__main__`` belongs to cli. ledger/ is the SQLite file of past runs (file I/O, so not in checks/).
readers/ reads saved outputs, probe/ the live machine, both through the
input primitives of inputs.py. The leaves import nothing of rigcheck and anything may import them: ``errors.py``
(the exception tree), ``cpulist.py`` (CPU-list text), ``units.py`` (numbers with their units) and the package
itself (``rigcheck.__version__``).

Inside the layers: no module imports another module's private (underscore) name, and the imports make no
circle.

Every import counts, wherever it is written: at the top, inside a function (a lazy import is still a
dependency, only a later one), and under ``if TYPE_CHECKING:`` (it costs nothing at run time, but a lower
layer naming a higher layer's types is the dependency the order forbids). What a command actually loads is
checked separately, at the end, by running it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent.parent / "src"
PACKAGE = SRC / "rigcheck"
SNAPSHOT = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots" / "healthy-8x-h100.json"

LAYERS = (
    "cli",
    "report",
    "bench",
    "monitor",
    "checks",
    "plan",
    "ledger",
    "readers",
    "probe",
    "inputs",
    "model",
    "facts",
)
LEAVES = ("rigcheck", "rigcheck.errors", "rigcheck.cpulist", "rigcheck.units")


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    imported: str  # dotted module name (for `from x import y`: x.y when x.y is a module, else x)
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _absolute(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(name: str) -> list[Import]:
    """Every import in the module: top level, in functions, under TYPE_CHECKING."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(name, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(name, path.name == "__init__.py", node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append(Import(name, sub if sub in MODULES else base, node.lineno))
    return found


ALL_IMPORTS = [imp for name in MODULES for imp in imports_of(name)]
OURS = [imp for imp in ALL_IMPORTS if imp.imported == "rigcheck" or imp.imported.startswith("rigcheck.")]


def layer_of(module: str) -> int:
    """0 for the leaves, then 1 (facts) up to len(LAYERS) (cli)."""
    if module in LEAVES:
        return 0
    if module == "rigcheck.__main__":
        return len(LAYERS)
    top = module.split(".")[1]
    assert top in LAYERS, f"{module} is in no layer: add it to LAYERS or LEAVES in {__file__}"
    return len(LAYERS) - LAYERS.index(top)


def where(imp: Import) -> str:
    return f"{MODULES[imp.importer].relative_to(SRC.parent)}:{imp.line} imports {imp.imported}"


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# --- the reader itself -----------------------------------------------------------------------------------


def test_the_reader_sees_every_kind_of_import() -> None:
    """Guards the reader: a lazy import, a TYPE_CHECKING import and a relative import are all found."""
    assert "rigcheck.cli.app" in MODULES
    assert "rigcheck.probe.nvml" in MODULES  # a package's __init__
    common = {imp.imported for imp in imports_of("rigcheck.cli.common")}
    assert "rigcheck.readers.from_file" in common  # imported inside load_snapshot()
    assert "rigcheck.model.document" in common  # imported under TYPE_CHECKING
    found = {imp.imported for imp in OURS}
    assert "rigcheck.probe.nvml.calls" in found  # `from rigcheck.probe.nvml.calls import ...` resolves to the module
    assert all(layer_of(m) >= 0 for m in MODULES)  # every module has a layer


# --- the order -------------------------------------------------------------------------------------------


def test_imports_point_down_only() -> None:
    upward = [where(imp) for imp in OURS if layer_of(imp.imported) > layer_of(imp.importer)]
    assert upward == []


def test_leaves_import_nothing_of_rigcheck() -> None:
    assert [where(imp) for imp in OURS if imp.importer in LEAVES] == []


# --- no private names across modules, no circles ------------------------------------------------------------


def _private(name: str) -> bool:
    """An underscore name that is not a dunder (``__version__``, ``__all__`` are public)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(name: str) -> list[str]:
    """Where the module imports another module's private name, or a private module, with the line."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(name, path.name == "__init__.py", node)
            what = [base] if _private_module(base) else []
            what += [f"{base}.{alias.name}" for alias in node.names if _private(alias.name)]
        elif isinstance(node, ast.Import):
            what = [alias.name for alias in node.names if _private_module(alias.name)]
        else:
            continue
        found += [f"{path.relative_to(SRC.parent)}:{node.lineno} imports {w}" for w in what]
    return found


def _private_module(module: str) -> bool:
    return any(_private(part) for part in module.split("."))


def test_the_private_import_reader_finds_each_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the rule's reader on a module written for it: each form of a private import is found, nothing else."""
    module = tmp_path / "probe_me.py"
    module.write_text(
        "from rigcheck.model.snapshot import Missing, _x\n"
        "from rigcheck import __version__\n"
        "def f():\n    from ._y import z\n    import rigcheck._w\n",
        encoding="utf-8",
    )
    monkeypatch.setitem(MODULES, "rigcheck.inputs.probe_me", module)
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path.parent)
    found = [line.split(" imports ")[1] for line in private_imports("rigcheck.inputs.probe_me")]
    assert found == ["rigcheck.model.snapshot._x", "rigcheck.inputs._y", "rigcheck._w"]


def test_no_private_name_is_imported_across_modules() -> None:
    """A name with a leading underscore is its module's own: another module that needs it gets a public name
    (the split that needed it named its interface), or the code moves to where it is used."""
    bad = [line for name in MODULES for line in private_imports(name)]
    assert bad == []


def import_graph() -> dict[str, set[str]]:
    """Module -> the rigcheck modules it imports, every import counted (top level, lazy, TYPE_CHECKING)."""
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for imp in OURS:
        if imp.imported in MODULES and imp.imported != imp.importer:
            graph[imp.importer].add(imp.imported)
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion),
    each as one circle through all of its modules' edges found by a walk: [a, b, ..., a]."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return [_circle(graph, set(c)) for c in components]


def _circle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """The shortest circle inside a strongly connected component, from its first module back to it."""
    start = min(component)
    came_from: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:  # breadth first: the shortest way back
        node = queue.pop(0)
        for child in sorted(graph[node] & component):
            if child == start:
                chain = [node]
                while (before := came_from[chain[-1]]) is not None:
                    chain.append(before)
                return [*reversed(chain), start]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    raise AssertionError(f"not strongly connected: {sorted(component)}")


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}, "f": {"g"}, "g": {"f"}}
    assert import_circles(graph) == [["a", "b", "c", "a"], ["f", "g", "f"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles() -> None:
    """No two modules import each other, however far round and however lazily: a circle hides the layer inside
    a package (which of the two is below?) and only works while one side imports late enough."""
    circles = [" -> ".join(circle) for circle in import_circles(import_graph())]
    assert circles == []


# --- the rules beside the order --------------------------------------------------------------------------


def _third_party(top: str) -> list[Import]:
    return [imp for imp in ALL_IMPORTS if imp.imported == top or imp.imported.startswith(top + ".")]


def test_pynvml_only_in_the_nvml_door() -> None:
    """One module talks to NVML (the rest of probe/nvml/ goes through it)."""
    users = {imp.importer for imp in _third_party("pynvml")}
    assert users == {"rigcheck.probe.nvml.calls"}


def test_torch_only_in_bench() -> None:
    assert [where(imp) for imp in _third_party("torch") if not in_package(imp.importer, "rigcheck.bench")] == []


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("rigcheck.monitor", "rigcheck.probe"),  # the sampler is handed a poller; it never builds one
        ("rigcheck.bench", "rigcheck.probe"),  # a benchmark is given the snapshot it needs
        ("rigcheck.checks", "rigcheck.probe"),  # checks are pure: Snapshot in, findings out
        ("rigcheck.checks", "rigcheck.monitor"),
        ("rigcheck.checks", "rigcheck.bench"),
        ("rigcheck.checks", "rigcheck.ledger"),  # the ledger reads the database; checks/history judges its rows
        ("rigcheck.plan", "rigcheck.ledger"),
        ("rigcheck.plan", "rigcheck.probe"),  # plan is pure: the CLI reads its files and the host, plan gets data
        ("rigcheck.plan", "rigcheck.readers"),
        ("rigcheck.plan", "rigcheck.inputs"),
    ],
)
def test_package_does_not_import(package: str, forbidden: str) -> None:
    bad = [where(imp) for imp in OURS if in_package(imp.importer, package) and in_package(imp.imported, forbidden)]
    assert bad == []


def test_checks_do_no_io() -> None:
    """Pure functions: no files, processes, sockets or clocks in checks/."""
    io_modules = ("os", "subprocess", "socket", "time", "shutil", "pathlib", "http", "urllib", "threading")
    bad = [
        where(imp)
        for imp in ALL_IMPORTS
        if in_package(imp.importer, "rigcheck.checks") and imp.imported.split(".")[0] in io_modules
    ]
    assert bad == []


def test_plan_does_no_io() -> None:
    """plan/ is given what the CLI read (--from files, this machine's RAM and free space): no I/O module, no open()."""
    io_modules = ("os", "subprocess", "socket", "time", "shutil", "pathlib", "http", "urllib", "threading", "io")
    bad = [
        where(imp)
        for imp in ALL_IMPORTS
        if in_package(imp.importer, "rigcheck.plan") and imp.imported.split(".")[0] in io_modules
    ]
    for name, path in MODULES.items():
        if in_package(name, "rigcheck.plan"):
            calls = ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            bad += [f"{name}:{c.lineno}: open()" for c in calls if isinstance(c, ast.Name) and c.id == "open"]
    assert bad == []


def test_the_version_is_not_read_from_package_metadata() -> None:
    """importlib.metadata costs ~40 ms at every start; the version is a literal (kept equal to pyproject by
    tests/contracts/test_cli_lazy.py)."""
    assert [where(imp) for imp in imports_of("rigcheck") if imp.imported.startswith("importlib")] == []


# --- what a command loads ------------------------------------------------------------------------------

# The modules of cli/ every command shares.
_CLI_CORE = ("app", "common", "streams", "lazy", "group_help", "exits", "terminal_safe")

# Modules a command must not load unless it needs them.
HEAVY = (
    "pynvml",
    "torch",
    "http.server",
    "prometheus_client",
    "rigcheck.report.html",
    "rigcheck.report.svg",
    "rigcheck.readers.nccl_log",
    "rigcheck.probe.nvml",
    "rigcheck.monitor",
    "rigcheck.bench",
    "rigcheck.cli.bench",
    "rigcheck.cli.bench_collectives",
    "rigcheck.cli.bench_device",
    "rigcheck.cli.bench_train",
    "rigcheck.cli.bench_common",
    "rigcheck.cli.bench_nccl_tests",
    "rigcheck.cli.bench_reference",
    "rigcheck.cli.bench_mamf",
    "rigcheck.cli.monitor",
    "rigcheck.cli.burn",
    "rigcheck.cli.burn_analyze",
    "rigcheck.cli.plan",
    "rigcheck.cli.nccl_log",
)

_RUN = """
import json, sys
from rigcheck.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.__stderr__.write("\\n" + json.dumps(sorted(sys.modules)) + "\\n")
"""


def loaded_by(argv: list[str]) -> set[str]:
    """The modules loaded by the time ``rigcheck ARGV`` has finished, run in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, timeout=120, check=False)
    modules: list[str] = json.loads(proc.stderr.strip().splitlines()[-1])
    return set(modules)


def _heavy(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_help_loads_no_command_module() -> None:
    loaded = loaded_by(["--help"])
    assert "typer" in loaded  # the probe works
    commands = sorted(m for m in loaded if m.startswith("rigcheck.cli.") and m.split(".")[2] not in _CLI_CORE)
    assert commands == []
    assert _heavy(loaded) == []
    assert "importlib.metadata" not in loaded
    assert "pydantic" not in loaded  # no model, no typer value coercion: --help needs neither
    assert "typer.rich_utils" not in loaded  # drawn by cli/group_help.py (rich.markdown, rich.traceback: ~55 ms)


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["terminal", "json"])
def test_doctor_from_a_snapshot_loads_only_what_it_uses(extra: list[str]) -> None:
    loaded = loaded_by(["doctor", "--from", str(SNAPSHOT), *extra])
    assert "rigcheck.cli.doctor" in loaded  # the probe works
    assert _heavy(loaded) == []
    assert not any(m.startswith("rigcheck.readers.smi.") and m != "rigcheck.readers.smi.ansi" for m in loaded), (
        "a snapshot JSON needs none of the nvidia-smi text parsers"
    )
    other_commands = sorted(
        m for m in loaded if m.startswith("rigcheck.cli.") and m.split(".")[2] not in (*_CLI_CORE, "doctor")
    )
    assert other_commands == []
    # The exit code asks checks/verdicts.py, which needs the verdict words only (model/verdict.py), not the verify
    # document's models and the bench, burn and monitor models behind them.
    assert "rigcheck.checks.verdicts" in loaded
    assert sorted(m for m in loaded if m in _OTHER_DOCUMENTS) == []
    # A saved snapshot needs no live probe: the default --since ('boot') is not parsed by probe/kernel_log.py.
    assert sorted(m for m in loaded if in_package(m, "rigcheck.probe")) == []
    assert "rigcheck.report.html" not in loaded  # no --html asked
    assert "rigcheck.model.site_config" not in loaded  # no --config given
    assert "logging" not in loaded  # inputs.py logs only a live read's I/O error (1 ms of the start otherwise)


# Models of other commands' documents: doctor builds none of them.
_OTHER_DOCUMENTS = (
    "rigcheck.model.verify",
    "rigcheck.model.bench",
    "rigcheck.model.burn",
    "rigcheck.model.monitor",
    "rigcheck.model.dcgm",
    "rigcheck.model.fleet",
    "rigcheck.model.trace",
)


def test_importlib_metadata_comes_only_from_pydantic() -> None:
    """doctor builds pydantic models, and pydantic's plugin loader imports importlib.metadata for itself
    (pydantic/plugin/_loader.py); no rigcheck module may be the one that imports it."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "rigcheck", "doctor", "--from", str(SNAPSHOT), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    importers = _direct_importers(proc.stderr, "importlib.metadata")
    assert importers, "importtime output not understood"
    assert [m for m in importers if m.startswith("rigcheck")] == []


def _direct_importers(importtime: str, target: str) -> list[str]:
    """From ``-X importtime`` output (children are listed before their parent, indented deeper), the modules
    that imported ``target`` directly."""
    rows = []
    for line in importtime.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        name = line.split("|")[2]
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2  # one space, then two per level
        rows.append((depth, name.strip()))
    importers = []
    for i, (depth, name) in enumerate(rows):
        if name == target:
            parent = next((n for d, n in rows[i + 1 :] if d < depth), "<top>")
            importers.append(parent)
    return importers
