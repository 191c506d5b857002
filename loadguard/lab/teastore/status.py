"""Reading TeaStore's status page (``/tools.descartes.teastore.webui/status``) (pure).

The page has one table row per service, whose last cell is its state. TeaStore is ready
for load when every row shows its final state:

======================  ====================
row                     ready state
======================  ====================
WebUI, Auth             ``OK``
Persistence             ``OK and populated``
Recommender             ``OK and trained``
Image                   ``OK and populated``
======================  ====================

and the page does not say the registry is unreachable ("Load Balancer does not work").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

READY_STATES: dict[str, str] = {
    "WebUI": "OK",
    "Auth": "OK",
    "Persistence": "OK and populated",
    "Recommender": "OK and trained",
    "Image": "OK and populated",
}
_TAG = re.compile(r"<[^>]+>")
_CELL = re.compile(r"<td[^>]*>(.*?)</td>", re.DOTALL)
NO_REGISTRY = "Load Balancer does not work"


@dataclass(frozen=True)
class Status:
    states: dict[str, str]  # row -> its state text ("" when the row is missing)
    registry_reachable: bool

    @property
    def ready(self) -> bool:
        return self.registry_reachable and all(
            self.states.get(k) == v for k, v in READY_STATES.items()
        )

    def summary(self) -> str:
        parts = [f"{k}: {self.states.get(k) or 'missing'}" for k in READY_STATES]
        if not self.registry_reachable:
            parts.insert(0, "registry unreachable")
        return ", ".join(parts)


def _text(cell: str) -> str:
    return " ".join(_TAG.sub(" ", cell).split())


def parse_status(html: str) -> Status:
    states: dict[str, str] = {}
    for name in READY_STATES:
        row = re.search(rf"<td>\s*{name}\s*</td>(.*?)</tr>", html, re.DOTALL)
        cells = _CELL.findall(row.group(1)) if row else []
        states[name] = _text(cells[-1]) if cells else ""
    return Status(states, NO_REGISTRY not in html)
