"""The code's layout: a room imports only rooms on its own floor or below (README, "How the code
is laid out"), read from every import statement of every module, including ones inside
functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: floor of each room, bottom (0) to top; a module may import its own floor or lower ones.
FLOORS: dict[str, int] = {
    "harness": 0, "harness.errors": 0, "harness.params": 0,
    "harness.data": 1, "harness.privacy": 1,
    "mechanisms": 2, "metrics": 2,
    "harness.report": 3,
    "harness.run": 4,
    "harness.audit": 5,
    "harness.cli": 6,
}
PACKAGES = ("harness", "mechanisms", "metrics")
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


def test_the_check_sees_a_violation(tmp_path, monkeypatch):
    """The rule can fail: a data module importing the runner is caught."""
    fake = ROOT / "harness" / "data" / "_layout_probe.py"
    monkeypatch.setattr("tests.test_layout.product_modules", lambda: [fake])
    fake.write_text("from harness.run.runner import run_one\n")
    try:
        with pytest.raises(AssertionError, match="harness.data._layout_probe imports"):
            test_rooms_never_import_a_higher_floor()
    finally:
        fake.unlink()


def test_every_package_says_what_lives_there():
    for init in sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc, f"{init.relative_to(ROOT)} has no docstring"


def test_no_product_module_holds_more_than_one_screenful_of_concepts():
    """One concept per module: none over MAX_LINES lines."""
    long = [f"{p.relative_to(ROOT)}: {n}" for p in product_modules()
            if (n := len(p.read_text().splitlines())) > MAX_LINES]
    assert not long, long
