"""The code's layout: a room imports only rooms on its own floor or below (docs/layout.md,
"How the code is laid out"), and no module imports itself round a circle, read from every import statement
of every module, including ones inside functions and type-checking blocks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: floor of each room, bottom (0) to top; a module may import its own floor or lower ones.
FLOORS: dict[str, int] = {
    "dp_arena": 0, "dp_arena.errors": 0, "dp_arena.params": 0,
    "dp_arena.data": 1, "dp_arena.privacy": 1,
    "dp_arena.mechanisms": 2, "dp_arena.metrics": 2,
    "dp_arena.report": 3,
    "dp_arena.run": 4,
    "dp_arena.audit": 5, "dp_arena.sweep": 5,
    "dp_arena.api": 6,
    "dp_arena.cli": 7,
}
PACKAGES = ("dp_arena",)
MAX_LINES = 700


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    """The longest prefix of ``module`` that names a room."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in FLOORS:
            return ".".join(parts[:n])
    raise KeyError(module)


def imports(path: Path) -> set[str]:
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join(base + ([node.module] if node.module else [])))
            else:
                found.add(node.module or "")
    return {m for m in found if m.split(".")[0] in PACKAGES}


def product_modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_rooms_never_import_a_higher_floor():
    violations = []
    for path in product_modules():
        own = FLOORS[room(module_name(path))]
        for target in imports(path):
            if FLOORS[room(target)] > own:
                violations.append(f"{module_name(path)} imports {target}")
    assert not violations, "\n".join(violations)


def probe_tree(root: Path, modules: dict[str, str]) -> list[Path]:
    """Modules (dotted name -> source) written as files under ``root``, never the product."""
    paths = []
    for name, source in modules.items():
        path = root.joinpath(*name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        paths.append(path)
    return paths


def test_the_check_sees_a_violation(tmp_path, monkeypatch):
    """The rule can fail: a data module importing the runner is caught."""
    fake = probe_tree(tmp_path, {"dp_arena.data._layout_probe":
                                 "from dp_arena.run.runner import run_one\n"})
    monkeypatch.setattr("tests.test_layout.ROOT", tmp_path)
    monkeypatch.setattr("tests.test_layout.product_modules", lambda: fake)
    with pytest.raises(AssertionError, match="dp_arena.data._layout_probe imports"):
        test_rooms_never_import_a_higher_floor()


def module_graph(paths: list[Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``paths`` it imports (``from pkg import mod`` is ``pkg.mod``)."""
    names = {module_name(p): p for p in paths}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in names else base
                             for a in node.names)
        graph[name] = {m for m in (known_prefix(t, names) for t in found)
                       if m and m != name}
    return graph


def known_prefix(target: str, names: dict[str, Path]) -> str | None:
    parts = target.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1)
                 if ".".join(parts[:n]) in names), None)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of modules that import each other round a circle (Tarjan's strongly
    connected components with more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_itself_round_a_circle():
    """A lazy import inside a function hides a circle from Python, not from this check."""
    found = circles(module_graph(product_modules()))
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_check_sees_a_circle_inside_a_room(tmp_path, monkeypatch):
    fake = probe_tree(tmp_path, {
        "dp_arena.run._probe_a": "def f():\n    from dp_arena.run._probe_b import g\n",
        "dp_arena.run._probe_b": "from dp_arena.run import _probe_a\n"})
    monkeypatch.setattr("tests.test_layout.ROOT", tmp_path)
    monkeypatch.setattr("tests.test_layout.product_modules", lambda: fake)
    with pytest.raises(AssertionError, match="dp_arena.run._probe_a <-> dp_arena.run._probe_b"):
        test_no_module_imports_itself_round_a_circle()


def test_every_package_says_what_lives_there():
    for init in sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc, f"{init.relative_to(ROOT)} has no docstring"


def test_no_product_module_holds_more_than_one_screenful_of_concepts():
    """One concept per module: none over MAX_LINES lines."""
    long = [f"{p.relative_to(ROOT)}: {n}" for p in product_modules()
            if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, long


# ----- tests: filed by concern, builders shared through tests/support or conftest -----------
def suite_modules(root: Path) -> list[Path]:
    """Every module of the test suite under ``root``: test modules, conftest, support."""
    return sorted((root / "tests").rglob("*.py"))


def imported_test_modules(path: Path) -> set[str]:
    """The ``tests.test_*`` modules ``path`` imports (absolute or relative, anywhere in it)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "tests" + f".{node.module}" * bool(node.module) if node.level \
                else node.module or ""
            found.add(base)
            if base == "tests":  # from tests import test_x
                found.update(f"tests.{a.name}" for a in node.names)
    return {m for m in found
            if m.startswith("tests.") and m.split(".")[1].startswith("test_")}


def test_no_test_module_imports_another():
    """What two test modules share lives in tests/support/ or tests/conftest.py: importing a
    test module runs its module-level code and collects its tests twice."""
    offenders = [f"{p.relative_to(ROOT)} imports {', '.join(sorted(found))}"
                 for p in suite_modules(ROOT)
                 if (found := imported_test_modules(p) - {f"tests.{p.stem}"})]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("source", [
    "from tests.test_leaderboard import run\n",
    "import tests.test_leaderboard\n",
    "def f():\n    from tests import test_leaderboard\n",
    "from .test_leaderboard import run\n",
])
def test_the_test_import_check_sees_an_import(tmp_path, monkeypatch, source):
    probe_tree(tmp_path, {"tests.test_probe": source, "tests.support.fine":
                          "from tests.support.board import run\nfrom tests import conftest\n"})
    monkeypatch.setattr("tests.test_layout.ROOT", tmp_path)
    with pytest.raises(AssertionError, match=r"tests/test_probe.py imports tests.test_leaderboard"):
        test_no_test_module_imports_another()
