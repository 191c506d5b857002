"""Finding a JMeter home and building the command line that starts it.

Search order (every command that starts JMeter uses it):

1. ``--jmeter-home`` given on the command line;
2. ``$JMETER_HOME``;
3. the LoadGuard cache (``loadguard jmeter install``);
4. ``jmeter`` on ``PATH`` (its real path's parent folder).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loadguard.errors import JMeterNotFoundError
from loadguard.jmeter.install import JMETER_VERSION, cached_jmeter_home

_LAUNCHER = re.compile(r"^ApacheJMeter(?:-(\d[\w.]*))?\.jar$")

#: JVM options for non-GUI runs; JMeter's own script uses a 1 GiB heap and G1.
DEFAULT_JVM_ARGS: tuple[str, ...] = (
    "-Xms256m",
    "-Xmx1g",
    "-XX:MaxMetaspaceSize=256m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=100",
    "-Djava.awt.headless=true",
)


@dataclass(frozen=True)
class JMeterHome:
    path: Path
    launcher: Path
    found_by: str

    @property
    def version(self) -> str | None:
        m = _LAUNCHER.match(self.launcher.name)
        return m.group(1) if m and m.group(1) else None

    @property
    def bin(self) -> Path:
        return self.path / "bin"


def _launcher_in(home: Path) -> Path | None:
    bin_dir = home / "bin"
    if not bin_dir.is_dir():
        return None
    candidates = sorted(p for p in bin_dir.iterdir() if _LAUNCHER.match(p.name))
    return candidates[-1] if candidates else None


def _check(home: Path, found_by: str) -> JMeterHome:
    # Absolute from here on: a relative --jmeter-home or JMETER_HOME means relative to
    # the directory the command was typed in, whatever directory JMeter later runs in.
    home = home.resolve()
    launcher = _launcher_in(home)
    if launcher is None:
        raise JMeterNotFoundError(
            f"{home} (from {found_by}) is not a JMeter home: no bin/ApacheJMeter*.jar"
        )
    return JMeterHome(path=home, launcher=launcher, found_by=found_by)


def find_jmeter_home(explicit: str | os.PathLike[str] | None = None) -> JMeterHome:
    """Locate JMeter, or raise a one-line error that says how to install it."""
    if explicit:
        return _check(Path(explicit).expanduser(), "--jmeter-home")
    env = os.environ.get("JMETER_HOME")
    if env:
        return _check(Path(env).expanduser(), "JMETER_HOME")
    cached = cached_jmeter_home(JMETER_VERSION)
    if _launcher_in(cached) is not None:
        return _check(cached, "the LoadGuard cache")
    on_path = shutil.which("jmeter")
    if on_path:
        home = Path(on_path).resolve().parent.parent
        if _launcher_in(home) is not None:
            return _check(home, "PATH")
    raise JMeterNotFoundError(
        "no JMeter found (JMETER_HOME, cache, PATH): "
        "run `loadguard jmeter install` to provision JMeter 5.6.3",
        setting="jmeter_home",
    )


def jmeter_command(
    home: JMeterHome,
    args: Sequence[str],
    jvm_args: Sequence[str] = DEFAULT_JVM_ARGS,
    java: str | None = None,
) -> list[str]:
    """``java <jvm args> -jar bin/ApacheJMeter-<v>.jar <args>``: no shell in between,
    so the process we start is the JVM itself and signals reach it directly."""
    java_exe = java or (
        str(Path(os.environ["JAVA_HOME"]).expanduser().absolute() / "bin" / "java")
        if os.environ.get("JAVA_HOME")
        else (shutil.which("java") or "java")
    )
    return [java_exe, *jvm_args, "-jar", str(home.launcher), *args]
