"""One Tomcat JVM on a fresh CATALINA_BASE, in its own process group.

``prepare`` writes the instance folder (conf/ from the cached home plus our server.xml
and context.xml, the service WARs copied into webapps/, logs/, temp/, work/); the cached
build is never written to. ``start`` runs ``java ... org.apache.catalina.startup.Bootstrap
start`` directly (no shell script in between), with stdout and stderr in
``logs/catalina.out``, in a new session so a terminal's Ctrl-C reaches only LoadGuard,
which then stops it: SIGTERM to the group (Tomcat's shutdown hook undeploys the
services), SIGKILL after a grace period. On Linux the JVM also gets SIGKILL if the
process that started it dies (``PR_SET_PDEATHSIG``), so no Tomcat outlives a killed
LoadGuard.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from loadguard.lab.child import die_with_parent
from loadguard.lab.teastore.build import Build
from loadguard.lab.teastore.conf import render_context_xml, render_server_xml
from loadguard.lab.teastore.layout import TomcatSpec, war_name

#: JDK 9+ module openings Tomcat's catalina.sh passes (for its leak-prevention code).
ADD_OPENS: tuple[str, ...] = (
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.rmi/sun.rmi.transport=ALL-UNNAMED",
)


def java_command(java: str, home: Path, base: Path, heap: str) -> list[str]:
    """The JVM command line of one Tomcat (pure)."""
    return [
        java,
        f"-Xmx{heap}",
        "-Djava.security.egd=file:/dev/./urandom",
        "-Djava.awt.headless=true",
        f"-Djava.util.logging.config.file={base / 'conf' / 'logging.properties'}",
        "-Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager",
        *ADD_OPENS,
        "-classpath",
        f"{home / 'bin' / 'bootstrap.jar'}{os.pathsep}{home / 'bin' / 'tomcat-juli.jar'}",
        f"-Dcatalina.home={home}",
        f"-Dcatalina.base={base}",
        f"-Djava.io.tmpdir={base / 'temp'}",
        "org.apache.catalina.startup.Bootstrap",
        "start",
    ]


def prepare(
    base: Path, spec: TomcatSpec, build: Build, max_threads: int, logs: Path | None
) -> None:
    """Write a CATALINA_BASE for ``spec``; ``logs``: where its logs go (else base/logs)."""
    shutil.copytree(build.tomcat_home / "conf", base / "conf")
    (base / "conf" / "server.xml").write_text(
        render_server_xml(spec.name, spec.port, max_threads, access_log=logs is not None)
    )
    (base / "conf" / "context.xml").write_text(render_context_xml(spec.env))
    for sub in ("webapps", "temp", "work"):
        (base / sub).mkdir(parents=True)
    for service in spec.services:
        shutil.copy2(build.war(service), base / "webapps" / war_name(service))
    if logs is None:
        (base / "logs").mkdir()
    else:
        logs.mkdir(parents=True, exist_ok=True)
        (base / "logs").symlink_to(logs.resolve(), target_is_directory=True)


class Tomcat:
    """A started Tomcat JVM (the leader of its own process group)."""

    def __init__(self, spec: TomcatSpec, base: Path, command: list[str]) -> None:
        self.spec = spec
        self.base = base
        self.out_path = base / "logs" / "catalina.out"
        with self.out_path.open("ab") as out:
            self.proc = subprocess.Popen(
                command,
                cwd=base,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGKILL),
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def wait(self, deadline: float) -> bool:
        """Wait for exit until the monotonic ``deadline``; True once it has exited."""
        while self.proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(min(left, 0.2))
        return True


def stop_all(tomcats: list[Tomcat], grace_s: float) -> None:
    """SIGTERM every Tomcat's group at once; SIGKILL what is left after ``grace_s``."""
    for t in tomcats:
        if t.alive():
            t.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for t in tomcats:
        t.wait(deadline)
    for t in tomcats:
        # Only while the leader is unreaped is the group id surely still ours.
        if t.alive():
            t.signal_group(signal.SIGKILL)
            t.wait(time.monotonic() + 10.0)
