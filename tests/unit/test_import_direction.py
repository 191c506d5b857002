"""Imports point down: the lower layers never import a layer above them.

Layers, bottom up (a module may import its own package, the standard library,
third-party packages, and anything in a layer below it):

0. leaves, shared by everyone: ``loadguard`` (the package: ``__version__``), ``errors``,
   ``durations``, ``clock``, ``rate``, ``stats``, ``observation``, ``slo``, ``window``,
   ``stop_reason``, ``histogram``, ``decision_columns``, ``human`` and ``headline``
   (figures and the headline sentence for people), ``jtl.sample`` (the
   ``SampleBatch`` and ``SampleSource`` types), and the counting core: ``exceedance``,
   ``ledger``, ``evidence``, ``capacity``, and ``resources`` (the package data),
   ``atomic_file`` and ``signals``, and ``violations`` (the violation share).
   A leaf imports only other leaves.
1. ``jtl``: reading JTL files.
2. ``actuator`` (pushing rates to JMeter; may read ``jtl``), ``policies`` (deciding
   rates), ``report`` (rendering a finished run; may read ``jtl``).
3. everything else composes those and is above all of them: ``loop``, ``decisions``,
   ``summary``, ``sidecar``, ``distributed``, ``cli``, ``jmeter``, ``jmx``, ``console``,
   ``junit``...
4. the lab, ``loadguard.lab`` (the simulator, the plant suite and the evaluation harness,
   the demo target, TeaStore, the demo and their commands): it may import any of the
   product above; no module outside ``loadguard/lab/`` imports it, not even inside a
   function (the CLI finds the lab's commands through the ``loadguard.commands`` entry
   points, docs/architecture.md).

So the protocols a lower layer needs (``SampleSource``, ``Actuator``) live in it or in a
leaf, and the upper layer imports them, never the other way round.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "loadguard"
LAB = ROOT / "lab"
#: What moved into the lab; none of it may reappear in the product.
LAB_PARTS = ("simulate", "evaluate", "target", "teastore", "demo.py", "child.py")

LEAVES = frozenset(
    {
        "loadguard",
        "loadguard.errors",
        "loadguard.durations",
        "loadguard.clock",
        "loadguard.rate",
        "loadguard.stats",
        "loadguard.observation",
        "loadguard.slo",
        "loadguard.window",
        "loadguard.stop_reason",
        "loadguard.histogram",
        "loadguard.decision_columns",
        "loadguard.jtl.sample",
        "loadguard.exceedance",
        "loadguard.ledger",
        "loadguard.evidence",
        "loadguard.capacity",
        "loadguard.human",
        "loadguard.headline",
        "loadguard.resources",
        "loadguard.atomic_file",
        "loadguard.signals",
        "loadguard.violations",
    }
)

#: Each checked package and the packages (below it) it may import besides itself.
BELOW = {
    "jtl": frozenset(),
    "actuator": frozenset({"jtl"}),
    "policies": frozenset(),
    "report": frozenset({"jtl"}),
}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, root: Path = ROOT, names: bool = False) -> list[tuple[int, str]]:
    """``(line, module)`` for every loadguard module ``path`` imports, anywhere in it;
    with ``names``, ``from a import b`` gives ``a.b`` too (``b`` may be a module)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            out.append((node.lineno, base))
            if names:
                out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return [(line, m) for line, m in out if m == "loadguard" or m.startswith("loadguard.")]


def allowed(target: str, package: str) -> bool:
    if target in LEAVES:
        return True
    top = target.split(".")[1] if "." in target else ""
    return top == package or top in BELOW[package]


def violations(package: str) -> list[str]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, target in imported(path):
            if not allowed(target, package):
                found.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    return found


def is_lab(target: str) -> bool:
    return target == "loadguard.lab" or target.startswith("loadguard.lab.")


def product_imports_of_the_lab(root: Path = ROOT) -> list[str]:
    """Every import of ``loadguard.lab`` by a module outside ``<root>/lab/``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(root / "lab"):
            continue
        lines = {}
        for line, target in imported(path, root, names=True):
            if is_lab(target):
                lines.setdefault(line, target)
        found += [f"{path.relative_to(root.parent)}:{n} imports {m}" for n, m in lines.items()]
    return found


def test_the_product_imports_nothing_from_the_lab() -> None:
    assert product_imports_of_the_lab() == []


def test_the_check_sees_a_product_module_importing_the_lab(tmp_path: Path) -> None:
    # Every spelling: absolute, relative, the package itself, inside a function.
    root = tmp_path / "loadguard"
    (root / "cli").mkdir(parents=True)
    (root / "lab").mkdir()
    (root / "lab" / "simulate.py").write_text("from loadguard.loop import run\n")
    (root / "cli" / "a.py").write_text("from ..lab import simulate\n")
    (root / "cli" / "b.py").write_text("def f():\n    import loadguard.lab.simulate\n")
    (root / "c.py").write_text("from loadguard import lab\nfrom loadguard.lab.x import y\n")
    assert product_imports_of_the_lab(root) == [
        "loadguard/c.py:1 imports loadguard.lab",
        "loadguard/c.py:2 imports loadguard.lab.x",
        "loadguard/cli/a.py:1 imports loadguard.lab",
        "loadguard/cli/b.py:2 imports loadguard.lab.simulate",
    ]


def test_the_lab_parts_live_only_under_loadguard_lab() -> None:
    assert [p for p in LAB_PARTS if (ROOT / p).exists()] == []
    assert [p for p in LAB_PARTS if not (LAB / p).exists()] == []


@pytest.mark.parametrize("package", sorted(BELOW))
def test_a_lower_layer_imports_nothing_above_it(package: str) -> None:
    assert violations(package) == []


def test_the_leaves_import_only_leaves() -> None:
    found = []
    for leaf in sorted(LEAVES - {"loadguard"}):
        path = ROOT.parent / (leaf.replace(".", "/") + ".py")
        found += [f"{leaf}:{line} imports {t}" for line, t in imported(path) if t not in LEAVES]
    assert found == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    # The checker itself: an actuator module that imports the loop is caught.
    assert not allowed("loadguard.loop", "actuator")
    assert not allowed("loadguard.decisions", "report")
    assert not allowed("loadguard.jmeter.remote", "actuator")
    assert allowed("loadguard.jtl.sample", "policies")
    assert allowed("loadguard.actuator.engines", "actuator")


def click_imports(root: Path = ROOT) -> list[str]:
    """Every import of click outside the CLI adapters (``loadguard.cli`` and the lab's
    ``loadguard.lab.cli``), anywhere in a module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] == "cli" or parts[:2] == ("lab", "cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [
                f"{path.relative_to(root.parent)}:{node.lineno} imports {n}"
                for n in names
                if n == "click" or n.startswith("click.")
            ]
    return found


def test_only_the_cli_imports_click() -> None:
    # The library raises domain errors and names no flag; click is the CLI adapter's.
    assert click_imports() == []


def test_the_click_check_sees_a_library_import_and_spares_the_cli(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sidecar").mkdir(parents=True)
    (tmp_path / "pkg" / "cli").mkdir()
    (tmp_path / "pkg" / "sidecar" / "config.py").write_text("def f():\n    import click\n")
    (tmp_path / "pkg" / "cli" / "options.py").write_text("import click\n")
    (tmp_path / "pkg" / "lab" / "cli").mkdir(parents=True)
    (tmp_path / "pkg" / "lab" / "cli" / "demo_cmd.py").write_text("import click\n")
    (tmp_path / "pkg" / "lab" / "sim.py").write_text("import click\n")
    (tmp_path / "pkg" / "errors.py").write_text("from click.exceptions import UsageError\n")
    assert click_imports(tmp_path / "pkg") == [
        "pkg/errors.py:1 imports click.exceptions",
        "pkg/lab/sim.py:1 imports click",
        "pkg/sidecar/config.py:2 imports click",
    ]
