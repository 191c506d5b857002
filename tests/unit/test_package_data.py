"""The package reads its plans and templates as package data, never by a path outside it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from loadguard import resources
from loadguard.errors import UsageError
from loadguard.jmx import render_templates
from loadguard.lab.evaluate.schemes import SCHEMES

PACKAGE = Path(resources.__file__).resolve().parent
REPO = PACKAGE.parent


def test_every_plan_the_commands_read_is_package_data() -> None:
    plans = [resources.elastic_plan(), resources.teastore_browse_plan()]
    plans += [s.plan_path for s in SCHEMES if s.plan is not None]
    for plan in plans:
        assert plan.is_file(), plan
        assert plan.resolve().is_relative_to(PACKAGE / "data"), plan


def test_a_missing_data_file_is_a_usage_error_naming_it() -> None:
    with pytest.raises(UsageError, match=r"loadguard/data/plans/nope\.jmx"):
        resources.data_file("plans", "nope.jmx")


@pytest.mark.parametrize(
    ("link", "target"),
    [
        ("jmx_templates", "loadguard/data/jmx_templates"),
        ("benchmarks/plans", "loadguard/data/plans"),
        ("examples/teastore/teastore-browse.jmx", "loadguard/data/teastore/teastore-browse.jmx"),
    ],
)
def test_the_documented_folders_are_links_to_the_one_copy(link: str, target: str) -> None:
    path = REPO / link
    assert path.is_symlink()
    assert path.resolve() == (REPO / target).resolve()


def test_the_shipped_templates_are_the_generated_ones() -> None:
    for name, text in render_templates().items():
        assert resources.data_file("jmx_templates", name).read_text(encoding="utf-8") == text


def _reads_outside(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Name) and node.id == "__file__":
            found.append(f"{path.relative_to(REPO)}:{node.lineno}: __file__")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for bad in ("../shared", "share/loadguard"):
                if bad in node.value:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {bad}")
    return found


def test_no_module_finds_a_file_by_its_own_location() -> None:
    """``__file__`` (and so ``parents[...]``) would point outside the package in a checkout
    and nowhere in a wheel; package data goes through importlib.resources."""
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _reads_outside(path)]
    assert found == []
