"""Which Tomcat serves which TeaStore service, on which port (pure).

* ``single``: one Tomcat holds all six WARs (TeaStore's "all" image does the same). Every
  service registers as ``127.0.0.1:PORT`` and calls the others through the same
  connector, so the web UI's calls share one thread pool with the requests it serves.
* ``per-service``: one Tomcat per service on its own port, as TeaStore's docker-compose
  runs one container per service. Each registers its own port with the registry (the
  JNDI entries ``servicePort``, ``hostName`` and ``registryURL``, read by TeaStore's
  RegistryClient); the services find each other through the registry.

Every service is reached as ``127.0.0.1`` (``hostName``), the address the connectors
listen on; ``localhost`` could resolve to ``::1`` where nothing listens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PREFIX = "tools.descartes.teastore."
#: Start order of the per-service layout: the registry first, the web UI last.
SERVICES: tuple[str, ...] = tuple(
    PREFIX + s for s in ("registry", "persistence", "auth", "image", "recommender", "webui")
)
WEBUI = PREFIX + "webui"
REGISTRY = PREFIX + "registry"
LAYOUTS = ("single", "per-service")
HOST = "127.0.0.1"


def war_name(service: str) -> str:
    return f"{service}.war"


def short(service: str) -> str:
    return service.removeprefix(PREFIX)


def webui_url(port: int) -> str:
    return f"http://{HOST}:{port}/{WEBUI}/"


def registry_url(port: int) -> str:
    return f"http://{HOST}:{port}/{REGISTRY}/rest/services/"


@dataclass(frozen=True)
class TomcatSpec:
    """One Tomcat: its name (folder and log names), port, WARs and JNDI entries."""

    name: str
    port: int
    services: tuple[str, ...]
    env: Mapping[str, tuple[str, str]]  # name -> (value, java type)


def context_entries(service_port: int, registry_port: int) -> dict[str, tuple[str, str]]:
    """The ``<Environment>`` entries TeaStore's services read from ``java:comp/env``."""
    s = "java.lang.String"
    return {
        "servicePort": (str(service_port), s),
        "hostName": (HOST, s),
        "registryURL": (registry_url(registry_port), s),
        "useHostIP": ("false", s),
        "databaseHost": ("localhost", s),  # unused: the database is in memory
        "databasePort": ("3306", s),
        "inMemoryDB": ("true", s),
        "recommenderLoopTime": ("0", "java.lang.Long"),
        "recommenderAlgorithm": ("SlopeOne", s),
    }


def plan(layout: str, ports: Mapping[str, int]) -> list[TomcatSpec]:
    """The Tomcats of ``layout``; ``ports`` maps each service to its port (single: all
    the same port)."""
    if layout == "single":
        port = ports[WEBUI]
        return [TomcatSpec("all", port, SERVICES, context_entries(port, port))]
    if layout == "per-service":
        registry = ports[REGISTRY]
        return [
            TomcatSpec(short(s), ports[s], (s,), context_entries(ports[s], registry))
            for s in SERVICES
        ]
    raise ValueError(f"unknown layout {layout!r}")
