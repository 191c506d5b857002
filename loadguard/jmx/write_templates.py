"""Write ``jmx_templates/*.jmx`` from ``loadguard.jmx.elastic_xml``.

.venv/bin/python -m loadguard.jmx.write_templates [DIR]   (default: jmx_templates)
"""

from __future__ import annotations

import sys
from pathlib import Path

from loadguard.jmx.elastic_xml import render_templates


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path("jmx_templates")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in render_templates().items():
        (out / name).write_text(text, encoding="utf-8")
        print(out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
