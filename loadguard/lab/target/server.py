"""The demo target's HTTP server (aiohttp): TeaStore's web-UI paths behind a capacity gate.

Routes (``BASE`` = ``/tools.descartes.teastore.webui``):

=========================  ===================================================
``GET  BASE/`` (and ``/``)  home
``GET  BASE/login``         login form
``POST BASE/loginAction``   ``username``+``password``: sign in, 302 to home;
                            ``logout``: sign out, 302 to home
``GET  BASE/category``      ``?category=N&page=P``
``GET  BASE/product``       ``?id=N``
``GET  BASE/cart``          the cart
``POST BASE/cartAction``    ``addToCart`` + ``productid``: 302 to the cart
``GET  /_loadguard/model``  ``?p95=300ms``: model parameters and λ* (JSON)
``GET  /_loadguard/stats``  served/rejected counters and workers now (JSON)
=========================  ===================================================

Every shop request passes the ``CapacityGate``: it is given its worker's end time and
the handler sleeps until then, or -- queue full -- gets 503 at once. Bad parameters get
400 at once, without using a worker. The ``/_loadguard`` routes bypass the gate.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
from aiohttp import web

from loadguard.durations import parse_duration_s
from loadguard.errors import UsageError
from loadguard.lab.target import pages
from loadguard.lab.target.capacity import CapacityEstimate, estimate_lambda_star
from loadguard.lab.target.gate import CapacityGate
from loadguard.lab.target.model import TargetModel
from loadguard.lab.target.session import COOKIE, Session, valid_login

BASE = pages.BASE
HTML = "text/html"
_QUANTILE_KEY = re.compile(r"^p([0-9]{1,2}(?:\.[0-9]+)?)$")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class EstimateCache:
    """λ* per (SLO, quantile, workers), computed once (the shop's is a simulation)."""

    def __init__(self, model: TargetModel) -> None:
        self._model = model
        self._cache: dict[tuple[float, float, int], CapacityEstimate] = {}

    def get(self, slo_s: float, quantile: float, workers: int) -> CapacityEstimate:
        key = (slo_s, quantile, workers)
        if key not in self._cache:
            self._cache[key] = estimate_lambda_star(
                self._model, slo_s, quantile=quantile, workers=workers
            )
        return self._cache[key]

    def warm(self, slo_s: float, quantile: float = 0.95) -> None:
        """Compute λ* before serving, for the normal and the degraded capacity."""
        for workers in {self._model.workers, self._model.degraded_workers}:
            self.get(slo_s, quantile, workers)


GATE = web.AppKey("gate", CapacityGate)
MODEL = web.AppKey("model", TargetModel)
ESTIMATES = web.AppKey("estimates", EstimateCache)
DEFAULT_SLO_S = web.AppKey("default_slo_s", float)


def build_app(
    model: TargetModel,
    *,
    seed: int | None = None,
    estimates: EstimateCache | None = None,
    default_slo_s: float = 0.3,
) -> web.Application:
    """The aiohttp application; its capacity clock starts when the app starts.

    ``default_slo_s`` is the p95 SLO ``/_loadguard/model`` uses when the query names none.
    """
    app = web.Application()
    app[MODEL] = model
    app[DEFAULT_SLO_S] = default_slo_s
    app[ESTIMATES] = EstimateCache(model) if estimates is None else estimates

    async def start_gate(app: web.Application) -> None:
        loop = asyncio.get_running_loop()
        app[GATE] = CapacityGate(model, loop.time(), np.random.default_rng(seed))

    app.on_startup.append(start_gate)
    shop = _shop_routes()
    app.add_routes(
        [
            web.get("/", shop["home"]),
            web.get(BASE, shop["home"]),
            web.get(BASE + "/", shop["home"]),
            web.get(BASE + "/login", shop["login"]),
            web.post(BASE + "/loginAction", shop["loginAction"]),
            web.get(BASE + "/loginAction", shop["loginAction"]),
            web.get(BASE + "/category", shop["category"]),
            web.get(BASE + "/product", shop["product"]),
            web.get(BASE + "/cart", shop["cart"]),
            web.post(BASE + "/cartAction", shop["cartAction"]),
            web.get(BASE + "/cartAction", shop["cartAction"]),
            web.get("/_loadguard/model", _model_handler),
            web.get("/_loadguard/stats", _stats_handler),
        ]
    )
    return app


async def _serve(request: web.Request, endpoint: str) -> web.Response | None:
    """Wait for a worker and serve; None when served, a 503 response when rejected."""
    loop = asyncio.get_running_loop()
    admission = request.app[GATE].admit(endpoint, loop.time())
    if admission.rejected:
        body = "503 Service Unavailable: wait queue full\n"
        return web.Response(status=503, text=body, headers={"Retry-After": "1"})
    delay = admission.end_s - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)
    return None


async def _gated(
    request: web.Request, endpoint: str, render: Callable[[], web.Response]
) -> web.Response:
    """Serve ``endpoint`` through the gate, then ``render`` (503 instead when rejected).

    (A ``web.Response`` is an empty mapping, hence falsy: never ``a or b`` on responses.)
    """
    rejected = await _serve(request, endpoint)
    return rejected if rejected is not None else render()


def _int_param(params: Any, name: str) -> int | None:
    value = params.get(name)
    if value is None or not re.fullmatch(r"[0-9]{1,9}", str(value)):
        return None
    return int(value)


def _page(text: str) -> web.Response:
    return web.Response(text=text, content_type=HTML)


def _redirect(path: str, session: Session | None) -> web.Response:
    response = web.Response(status=302, headers={"Location": BASE + path})
    if session is not None:
        if session.user is None and not session.cart:
            response.del_cookie(COOKIE, path="/")
        else:
            response.set_cookie(COOKIE, session.encode(), path="/", httponly=True)
    return response


def _bad(message: str) -> web.Response:
    return web.Response(status=400, text=f"400 Bad Request: {message}\n")


def _session(request: web.Request) -> Session:
    return Session.decode(request.cookies.get(COOKIE))


async def _params(request: web.Request) -> dict[str, str]:
    """Query and form parameters merged, like a servlet's ``getParameter``."""
    merged = {k: v for k, v in request.query.items()}
    if request.method == "POST" and request.can_read_body:
        form = await request.post()
        merged.update({k: v for k, v in form.items() if isinstance(v, str)})
    return merged


def _shop_routes() -> dict[str, Handler]:
    async def home(request: web.Request) -> web.Response:
        return await _gated(request, "home", lambda: _page(pages.home_page(_session(request).user)))

    async def login(request: web.Request) -> web.Response:
        user = _session(request).user
        return await _gated(request, "login", lambda: _page(pages.login_page(user)))

    async def login_action(request: web.Request) -> web.Response:
        params = await _params(request)
        rejected = await _serve(request, "loginAction")
        if rejected is not None:
            return rejected
        session = _session(request)
        if "username" in params and "password" in params:
            if valid_login(params["username"], params["password"]):
                return _redirect("/", Session(params["username"], session.cart))
            return _redirect("/login", None)
        if "logout" in params:
            return _redirect("/", Session())
        return _redirect("/", None)

    async def category(request: web.Request) -> web.Response:
        cat = _int_param(request.query, "category")
        page = _int_param(request.query, "page") if "page" in request.query else 1
        if cat is None or not pages.valid_category(cat):
            return _bad("category must be one of the shop's category ids")
        if page is None or not pages.valid_page(page):
            return _bad(f"page must be 1..{pages.PAGES_PER_CATEGORY}")
        user = _session(request).user
        return await _gated(
            request, "category", lambda: _page(pages.category_page(cat, page, user))
        )

    async def product(request: web.Request) -> web.Response:
        pid = _int_param(request.query, "id")
        item = pages.product(pid) if pid is not None else None
        if item is None:
            return _bad("id must be a product id")
        user = _session(request).user
        return await _gated(request, "product", lambda: _page(pages.product_page(item, user)))

    async def cart(request: web.Request) -> web.Response:
        session = _session(request)
        return await _gated(
            request, "cart", lambda: _page(pages.cart_page(session.cart, session.user))
        )

    async def cart_action(request: web.Request) -> web.Response:
        params = await _params(request)
        if "addToCart" not in params:
            return _bad("cartAction needs addToCart")
        pid = _int_param(params, "productid")
        if pid is None or pages.product(pid) is None:
            return _bad("productid must be a product id")
        session = _session(request).with_product(pid)
        return await _gated(request, "cartAction", lambda: _redirect("/cart", session))

    return {
        "home": home,
        "login": login,
        "loginAction": login_action,
        "category": category,
        "product": product,
        "cart": cart,
        "cartAction": cart_action,
    }


def parse_slo_query(query: Any, default_slo_s: float = 0.3) -> tuple[float, float]:
    """``?p95=300ms`` (or ``p99=...``, ``p50=...``) -> (slo seconds, quantile)."""
    for key, value in query.items():
        match = _QUANTILE_KEY.match(key)
        if match:
            quantile = float(match.group(1)) / 100.0
            if not 0.0 < quantile < 1.0:
                raise UsageError(f"bad quantile {key!r}")
            slo_s = parse_duration_s(value, what=key)
            if slo_s <= 0:
                raise UsageError(f"{key} must be > 0")
            return slo_s, quantile
    return default_slo_s, 0.95


async def _model_handler(request: web.Request) -> web.Response:
    model = request.app[MODEL]
    gate = request.app[GATE]
    estimates = request.app[ESTIMATES]
    try:
        slo_s, quantile = parse_slo_query(request.query, request.app[DEFAULT_SLO_S])
    except UsageError as exc:
        return web.json_response({"error": exc.message}, status=400)
    loop = asyncio.get_running_loop()
    now = await loop.run_in_executor(None, estimates.get, slo_s, quantile, model.workers)
    degraded = await loop.run_in_executor(
        None, estimates.get, slo_s, quantile, model.degraded_workers
    )
    current = degraded if gate.workers == model.degraded_workers else now

    def finite(x: float) -> float | None:
        return x if math.isfinite(x) else None

    body = {
        **model.to_json(),
        "workers_now": gate.workers,
        "uptime_s": gate.elapsed_s(loop.time()),
        "slo": {"quantile": quantile, "ms": slo_s * 1000.0},
        "lambda_star": finite(now.lambda_star_rps),
        "lambda_star_now": finite(current.lambda_star_rps),
        "lambda_star_degraded": finite(degraded.lambda_star_rps),
        "lambda_star_method": now.method,
        "saturation_rps": finite(now.saturation_rps),
    }
    return web.json_response(body)


async def _stats_handler(request: web.Request) -> web.Response:
    gate = request.app[GATE]
    counters = gate.counters()
    return web.json_response(
        {
            "served": counters.served,
            "rejected": counters.rejected,
            "workers_now": counters.workers,
            "uptime_s": gate.elapsed_s(asyncio.get_running_loop().time()),
        }
    )
