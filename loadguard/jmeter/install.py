"""Provisioning a real, runnable Apache JMeter (``loadguard jmeter install``).

Two sources:

* ``maven`` (the default): a generated pom lists the JMeter artifacts and the
  jmeter-plugins we need; ``mvn dependency:copy-dependencies`` resolves them with their
  transitive dependencies into a staging folder in repository layout, and we lay the jars
  out the way the official distribution does:

  - ``org.apache.jmeter:ApacheJMeter`` (the launcher, ``NewDriver``) goes in ``bin/``;
  - ``org.apache.jmeter:ApacheJMeter_*`` (core, http, components, functions) and the
    ``kg.apc`` plugins go in ``lib/ext/`` (JMeter scans it for test elements);
  - everything else, ``jorphan`` included, goes in ``lib/``;
  - ``ApacheJMeter_config`` is not a classpath jar: it carries ``bin/*.properties``,
    ``log4j2.xml`` and templates, so it is unpacked into the home and then dropped.

  It ships no shell scripts, so we write small ``bin/jmeter`` and ``bin/jmeter-server``
  wrappers around ``java -jar bin/ApacheJMeter-<v>.jar``.

  The jmeter-plugins poms depend on ``jmeter-plugins-cmn-jmeter``, which drags in old
  ``org.apache.jmeter:*`` 2.13/5.2.1 artifacts; every plugin dependency excludes the
  ``org.apache.jmeter`` group, exactly as jmeter-maven-plugin's ConfigureJMeterMojo does
  for plugin artifacts.

* ``apache``: the official binary zip, verified against its published SHA-512 before it
  is unpacked. The plugins are then added through Maven as above.

The home is built in a temporary folder beside its final place and renamed into place
only when complete, so an interrupted install never leaves a half-built home that a later
run would trust. A marker file records what was installed; a second ``install`` finds it
and returns at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from loadguard.errors import ProvisioningError

JMETER_VERSION = "5.6.3"

#: org.apache.jmeter artifacts that make a runnable non-GUI JMeter with HTTP.
CORE_ARTIFACTS: tuple[str, ...] = (
    "ApacheJMeter",
    "ApacheJMeter_core",
    "ApacheJMeter_http",
    "ApacheJMeter_components",
    "ApacheJMeter_functions",
    "ApacheJMeter_config",
    "jorphan",
)


@dataclass(frozen=True)
class Plugin:
    group: str
    artifact: str
    version: str
    carries: str

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


#: jmeter-plugins used as the paper's baselines. ``jmeter-plugins-autostop`` is not
#: published to the central repository (only to jmeter-plugins.org's own), so it is
#: not installed; see docs/jmeter-integration.md.
PLUGINS: tuple[Plugin, ...] = (
    Plugin(
        "kg.apc",
        "jmeter-plugins-casutg",
        "2.10",
        "Concurrency, Arrivals and Free-Form Arrivals thread groups",
    ),
    Plugin("kg.apc", "jmeter-plugins-tst", "2.5", "Throughput Shaping Timer, __tstFeedback"),
)

MARKER = ".loadguard-install.json"

APACHE_ZIP_URL = "https://archive.apache.org/dist/jmeter/binaries/apache-jmeter-{v}.zip"

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def loadguard_home() -> Path:
    """The cache root: ``$LOADGUARD_HOME``, else ``~/.cache/loadguard``."""
    env = os.environ.get("LOADGUARD_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "loadguard"


def cached_jmeter_home(version: str = JMETER_VERSION) -> Path:
    return loadguard_home() / "jmeter" / f"apache-jmeter-{version}"


def launcher_jar(home: Path, version: str = JMETER_VERSION) -> Path:
    return home / "bin" / f"ApacheJMeter-{version}.jar"


def read_marker(home: Path) -> dict[str, object] | None:
    try:
        data = json.loads((home / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_complete(home: Path, version: str = JMETER_VERSION) -> bool:
    return read_marker(home) is not None and launcher_jar(home, version).is_file()


@dataclass(frozen=True)
class InstallResult:
    home: Path
    source: str
    reused: bool
    seconds: float
    plugins: tuple[str, ...]


# --------------------------------------------------------------------------- pure parts


def render_pom(
    version: str = JMETER_VERSION,
    plugins: Iterable[Plugin] = PLUGINS,
    core: Iterable[str] = CORE_ARTIFACTS,
) -> str:
    """The pom whose dependencies are the distribution (pure; golden-tested)."""
    deps: list[str] = []
    for artifact in core:
        deps.append(
            "    <dependency><groupId>org.apache.jmeter</groupId>"
            f"<artifactId>{artifact}</artifactId><version>{version}</version></dependency>"
        )
    for p in plugins:
        deps.append(
            f"    <dependency><groupId>{p.group}</groupId><artifactId>{p.artifact}</artifactId>"
            f"<version>{p.version}</version>\n"
            "      <exclusions><exclusion><groupId>org.apache.jmeter</groupId>"
            "<artifactId>*</artifactId></exclusion></exclusions>\n    </dependency>"
        )
    body = "\n".join(deps)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by loadguard jmeter install: the dependencies are the JMeter distribution. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>loadguard.provisioning</groupId>
  <artifactId>jmeter-distribution</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{body}
  </dependencies>
</project>
"""


def placement(repo_relative: str) -> str | None:
    """Where a jar resolved in repository layout goes in the JMeter home.

    ``repo_relative`` is the path below the staging folder, e.g.
    ``org/apache/jmeter/ApacheJMeter_core/5.6.3/ApacheJMeter_core-5.6.3.jar``.
    Returns ``"bin"``, ``"lib"``, ``"lib/ext"``, ``"config"`` (unpack) or None (skip).
    """
    parts = repo_relative.replace("\\", "/").split("/")
    if len(parts) < 4 or not parts[-1].endswith(".jar"):
        return None
    artifact = parts[-3]
    group = ".".join(parts[:-3])
    if group == "org.apache.jmeter":
        if artifact == "ApacheJMeter":
            return "bin"
        if artifact == "ApacheJMeter_config":
            return "config"
        if artifact.startswith("ApacheJMeter_"):
            return "lib/ext"
        return "lib"
    if group == "kg.apc" and artifact != "jmeter-plugins-cmn-jmeter":
        return "lib/ext"
    return "lib"


def parse_sha512_file(text: str) -> str:
    """The hex digest from a ``.sha512`` file (``HEX``, ``HEX *name`` or ``HEX  name``)."""
    match = re.search(r"\b([0-9a-fA-F]{128})\b", text)
    if not match:
        raise ProvisioningError("checksum file holds no SHA-512 digest")
    return match.group(1).lower()


def sha512_of(path: Path) -> str:
    digest = hashlib.sha512()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha512(path: Path, expected_hex: str) -> None:
    actual = sha512_of(path)
    if actual != expected_hex.lower():
        raise ProvisioningError(
            f"SHA-512 mismatch for {path.name}: expected {expected_hex[:16]}…, got {actual[:16]}…"
        )


WRAPPER = """#!/bin/sh
# Written by loadguard jmeter install: ApacheJMeter_config ships no launcher scripts.
# HEAP and JVM_ARGS work as in JMeter's own bin/jmeter.
BIN_DIR=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
: "${{HEAP:=-Xms256m -Xmx1g -XX:MaxMetaspaceSize=256m}}"
exec "${{JAVA_HOME:+$JAVA_HOME/bin/}}java" $HEAP -XX:+UseG1GC -XX:MaxGCPauseMillis=100 \\
  $JVM_ARGS -jar "$BIN_DIR/ApacheJMeter-{version}.jar" {extra}"$@"
"""


# --------------------------------------------------------------------------- adapters


def require_tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if not path:
        raise ProvisioningError(f"`{name}` not found on PATH: install {package} and try again")
    return path


def _write_wrappers(home: Path, version: str) -> None:
    for name, extra in (
        ("jmeter", ""),
        ("jmeter-server", '-s -Dserver_port="${SERVER_PORT:-1099}" -j jmeter-server.log '),
    ):
        script = home / "bin" / name
        script.write_text(WRAPPER.format(version=version, extra=extra))
        script.chmod(0o755)


def _mvn_resolve(pom_text: str, staging: Path, log: Log) -> None:
    mvn = require_tool("mvn", "Maven (apt-get install maven)")
    require_tool("java", "a JDK 17 (apt-get install openjdk-17-jdk-headless)")
    work = staging.parent / "pom"
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(pom_text)
    cmd = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(work / "pom.xml"),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-Dmdep.useRepositoryLayout=true",
        "-Dmdep.includeScope=runtime",
    ]
    log("resolving JMeter and plugin artifacts with Maven (cached in ~/.m2 after the first run)")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln]
        first = lines[0] if lines else f"mvn exited with {proc.returncode}"
        raise ProvisioningError(f"Maven could not resolve the distribution: {first[:300]}")


def _lay_out(staging: Path, home: Path) -> list[str]:
    """Place every staged jar; returns the plugin jar names installed in lib/ext."""
    for sub in ("bin", "lib", "lib/ext"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    plugins: list[str] = []
    config_jars: list[Path] = []
    for jar in sorted(staging.rglob("*.jar")):
        where = placement(jar.relative_to(staging).as_posix())
        if where is None:
            continue
        if where == "config":
            config_jars.append(jar)
            continue
        shutil.copy2(jar, home / where / jar.name)
        if where == "lib/ext" and "jmeter-plugins" in jar.name:
            plugins.append(jar.name)
    for jar in config_jars:
        with zipfile.ZipFile(jar) as zf:
            for info in zf.infolist():
                if info.filename.startswith("META-INF/") or info.is_dir():
                    continue
                target = (home / info.filename).resolve()
                if home.resolve() not in target.parents:
                    raise ProvisioningError(f"refusing to unpack {info.filename} outside the home")
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
    return plugins


def _finish(tmp_home: Path, home: Path, source: str, version: str, plugins: list[str]) -> None:
    _write_wrappers(tmp_home, version)
    (tmp_home / MARKER).write_text(
        json.dumps(
            {"version": version, "source": source, "plugins": plugins, "installed_at": time.time()},
            indent=2,
        )
    )
    if home.exists():
        shutil.rmtree(home)
    tmp_home.rename(home)


def _download(url: str, dest: Path, log: Log) -> None:
    import requests

    log(f"downloading {url}")
    try:
        with requests.get(url, stream=True, timeout=60) as resp:
            resp.raise_for_status()
            with dest.open("wb") as fh:
                for chunk in resp.iter_content(1 << 20):
                    fh.write(chunk)
    except requests.RequestException as exc:
        raise ProvisioningError(f"download failed: {url}: {exc}") from exc


def _from_apache(version: str, tmp_home: Path, work: Path, log: Log) -> None:
    import requests

    url = APACHE_ZIP_URL.format(v=version)
    zip_path = work / f"apache-jmeter-{version}.zip"
    _download(url, zip_path, log)
    try:
        sha_text = requests.get(url + ".sha512", timeout=30).text
    except requests.RequestException as exc:
        raise ProvisioningError(f"could not fetch the checksum: {exc}") from exc
    verify_sha512(zip_path, parse_sha512_file(sha_text))
    log("SHA-512 verified")
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(work / "unzipped")
    shutil.move(str(work / "unzipped" / f"apache-jmeter-{version}"), str(tmp_home))


def install(
    source: str = "maven",
    version: str = JMETER_VERSION,
    force: bool = False,
    with_plugins: bool = True,
    log: Log = _quiet,
) -> InstallResult:
    """Provision JMeter into the cache; idempotent and fast when already there."""
    started = time.monotonic()
    home = cached_jmeter_home(version)
    if not force and is_complete(home, version):
        marker = read_marker(home) or {}
        listed = marker.get("plugins", [])
        return InstallResult(
            home=home,
            source=str(marker.get("source", source)),
            reused=True,
            seconds=time.monotonic() - started,
            plugins=tuple(str(p) for p in listed) if isinstance(listed, list) else (),
        )
    if source not in ("maven", "apache"):
        raise ProvisioningError(f"unknown source {source!r}: use maven or apache")
    require_tool("java", "a JDK 17 (apt-get install openjdk-17-jdk-headless)")
    if source == "maven" or with_plugins:
        require_tool("mvn", "Maven (apt-get install maven)")
    home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".install-", dir=home.parent) as tmp:
        work = Path(tmp)
        tmp_home = work / home.name
        plugins: list[str] = []
        if source == "maven":
            staging = work / "staging"
            _mvn_resolve(render_pom(version, PLUGINS if with_plugins else ()), staging, log)
            plugins = _lay_out(staging, tmp_home)
        else:
            _from_apache(version, tmp_home, work, log)
            if with_plugins:
                staging = work / "staging"
                _mvn_resolve(render_pom(version, PLUGINS, core=()), staging, log)
                for jar in sorted(staging.rglob("*.jar")):
                    where = placement(jar.relative_to(staging).as_posix())
                    name = jar.name
                    if where == "lib/ext" or not (tmp_home / "lib" / name).exists():
                        dest = tmp_home / (where if where in ("lib", "lib/ext") else "lib")
                        shutil.copy2(jar, dest / name)
                        if where == "lib/ext":
                            plugins.append(name)
        if not launcher_jar(tmp_home, version).is_file():
            raise ProvisioningError(f"assembly produced no bin/ApacheJMeter-{version}.jar")
        _finish(tmp_home, home, source, version, plugins)
    return InstallResult(
        home=home,
        source=source,
        reused=False,
        seconds=time.monotonic() - started,
        plugins=tuple(plugins),
    )
