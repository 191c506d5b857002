"""TeaStore's own reset: its database, images and recommender regenerated in place.

TeaStore's web UI has a page for this (``/database``, the form that GETs
``dataBaseAction?categories=..&products=..&users=..&orders=..&confirm=``): the persistence
service drops and refills its tables (maintenance mode meanwhile), the image providers
regenerate their images and every recommender retrains (read in TeaStore 1.4.2's
``DataBaseActionServlet`` and ``DatabaseGenerationEndpoint``). ``reset_teastore`` asks
for it with the counts TeaStore generates at start (its ``SMALL_DB_*`` defaults: 5
categories, 100 products per category, 100 users, at most 5 orders each) and waits
until the store is ready again exactly as a start is judged: the status page all
green, a login, the home, category and product pages served. The JVMs, and so their
JIT-compiled code, stay: a reset store is a warm one with fresh data.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from loadguard.errors import EngineError
from loadguard.lab.teastore.layout import HOST, WEBUI
from loadguard.lab.teastore.runner import fetch_status, login_works, pages_work

#: TeaStore's DataGenerator.SMALL_DB_* (what a start generates).
DB_SIZE: dict[str, int] = {"categories": 5, "products": 100, "users": 100, "orders": 5}


def reset_url(port: int) -> str:
    query = urllib.parse.urlencode({**DB_SIZE, "confirm": "Start"})
    return f"http://{HOST}:{port}/{WEBUI}/dataBaseAction?{query}"


def reset_teastore(
    port: int,
    *,
    deadline_s: float = 300.0,
    poll_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Regenerate the store on ``port`` and wait until it is ready again; the seconds it
    took. Raises ``EngineError`` when the reset is refused or the store is not ready
    within ``deadline_s``."""
    t0 = clock()
    try:
        # The servlet answers with a redirect to the status page once it has asked
        # every service; urllib follows it.
        with urllib.request.urlopen(reset_url(port), timeout=deadline_s) as resp:
            resp.read()
    except (urllib.error.URLError, OSError) as exc:
        raise EngineError(f"TeaStore on port {port} refused the reset: {exc}") from exc
    base = f"http://{HOST}:{port}/{WEBUI}/"
    ready_polls = 0
    while True:
        status = fetch_status(base)
        ready = (
            status is not None
            and status.ready
            and login_works(port, timeout_s=10.0)
            and pages_work(port, timeout_s=10.0)
        )
        # Twice in a row: the recommenders retrain asynchronously and may not have begun
        # (still "trained") when the database is already back.
        ready_polls = ready_polls + 1 if ready else 0
        if ready_polls >= 2:
            return clock() - t0
        if clock() - t0 > deadline_s:
            state = status.summary() if status else "the status page does not answer"
            raise EngineError(
                f"TeaStore on port {port} was not ready {deadline_s:g}s after a reset ({state})"
            )
        sleep(poll_s)
