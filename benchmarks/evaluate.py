"""The evaluation harness: ``loadguard evaluate`` as a script.

    .venv/bin/python benchmarks/evaluate.py --quick
    .venv/bin/python benchmarks/evaluate.py --repetitions 5 --duration 180s --doc docs/evaluation.md

See docs/evaluation.md for what it runs and how every figure is defined.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadguard.cli import cli

if __name__ == "__main__":
    cli(["evaluate", *sys.argv[1:]], prog_name="benchmarks/evaluate.py")
