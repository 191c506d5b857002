"""Provisioning: the pure parts (pom, placement, checksums) and home discovery."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from lxml import etree

from loadguard.cli import cli
from loadguard.errors import JMeterNotFoundError, ProvisioningError
from loadguard.jmeter import install as inst
from loadguard.jmeter.home import find_jmeter_home, jmeter_command


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("org/apache/jmeter/ApacheJMeter/5.6.3/ApacheJMeter-5.6.3.jar", "bin"),
        ("org/apache/jmeter/ApacheJMeter_core/5.6.3/ApacheJMeter_core-5.6.3.jar", "lib/ext"),
        ("org/apache/jmeter/ApacheJMeter_http/5.6.3/ApacheJMeter_http-5.6.3.jar", "lib/ext"),
        ("org/apache/jmeter/ApacheJMeter_config/5.6.3/ApacheJMeter_config-5.6.3.jar", "config"),
        ("org/apache/jmeter/jorphan/5.6.3/jorphan-5.6.3.jar", "lib"),
        ("kg/apc/jmeter-plugins-casutg/2.10/jmeter-plugins-casutg-2.10.jar", "lib/ext"),
        ("kg/apc/jmeter-plugins-cmn-jmeter/0.6/jmeter-plugins-cmn-jmeter-0.6.jar", "lib"),
        ("org/apache/groovy/groovy/3.0.20/groovy-3.0.20.jar", "lib"),
        ("org/apache/jmeter/ApacheJMeter/5.6.3/ApacheJMeter-5.6.3.pom", None),
        ("short.jar", None),
    ],
)
def test_placement_follows_the_distribution_layout(path: str, expected: str | None) -> None:
    assert inst.placement(path) == expected


def test_pom_lists_core_artifacts_and_excludes_old_jmeter_from_plugins() -> None:
    root = etree.fromstring(inst.render_pom().encode())
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    deps = root.findall(".//m:dependency", ns)
    coords = {
        (d.findtext("m:groupId", namespaces=ns), d.findtext("m:artifactId", namespaces=ns))
        for d in deps
    }
    for artifact in inst.CORE_ARTIFACTS:
        assert ("org.apache.jmeter", artifact) in coords
    for dep in deps:
        if dep.findtext("m:groupId", namespaces=ns) == "kg.apc":
            excl = dep.find("m:exclusions/m:exclusion", ns)
            assert excl is not None
            assert excl.findtext("m:groupId", namespaces=ns) == "org.apache.jmeter"
            assert excl.findtext("m:artifactId", namespaces=ns) == "*"
    versions = {
        d.findtext("m:version", namespaces=ns)
        for d in deps
        if d.findtext("m:groupId", namespaces=ns) == "org.apache.jmeter"
    }
    assert versions == {"5.6.3"}


@pytest.mark.parametrize(
    "template",
    ["{h}", "{h} *apache-jmeter-5.6.3.zip", "{h}  apache-jmeter-5.6.3.zip\n", "{H}\n"],
)
def test_sha512_file_forms_are_parsed(template: str) -> None:
    digest = hashlib.sha512(b"x").hexdigest()
    text = template.format(h=digest, H=digest.upper())
    assert inst.parse_sha512_file(text) == digest


def test_sha512_file_without_digest_is_an_error() -> None:
    with pytest.raises(ProvisioningError, match="no SHA-512"):
        inst.parse_sha512_file("<html>not found</html>")


def test_verify_sha512_accepts_match_and_rejects_mismatch(tmp_path: Path) -> None:
    f = tmp_path / "a.zip"
    f.write_bytes(b"jmeter")
    inst.verify_sha512(f, hashlib.sha512(b"jmeter").hexdigest())
    with pytest.raises(ProvisioningError, match="mismatch"):
        inst.verify_sha512(f, hashlib.sha512(b"tampered").hexdigest())


def _fake_home(root: Path, version: str = "5.6.3") -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / f"ApacheJMeter-{version}.jar").write_bytes(b"")
    return root


@pytest.fixture()
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOADGUARD_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("JMETER_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "emptybin"))
    return tmp_path


def test_explicit_home_wins_over_env_and_cache(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = _fake_home(isolated_env / "explicit")
    monkeypatch.setenv("JMETER_HOME", str(_fake_home(isolated_env / "env")))
    _fake_home(inst.cached_jmeter_home())
    home = find_jmeter_home(explicit)
    assert home.path == explicit.resolve()
    assert home.found_by == "--jmeter-home"
    assert home.version == "5.6.3"


def test_env_then_cache_then_path(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_home = _fake_home(isolated_env / "env")
    monkeypatch.setenv("JMETER_HOME", str(env_home))
    assert find_jmeter_home().found_by == "JMETER_HOME"
    monkeypatch.delenv("JMETER_HOME")
    path_home = _fake_home(isolated_env / "onpath")
    binary = path_home / "bin" / "jmeter"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("PATH", str(path_home / "bin"))
    assert find_jmeter_home().found_by == "PATH"
    _fake_home(inst.cached_jmeter_home())
    assert find_jmeter_home().found_by == "the LoadGuard cache"


def test_no_home_anywhere_says_how_to_install(isolated_env: Path) -> None:
    with pytest.raises(JMeterNotFoundError, match="loadguard jmeter install"):
        find_jmeter_home()


def test_not_a_home_is_a_one_line_error(isolated_env: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["jmeter", "path", "--jmeter-home", str(isolated_env)])
    assert result.exit_code == 2
    assert result.output.strip().startswith("error:")
    assert "not a JMeter home" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("missing", ["mvn", "java"])
def test_missing_tool_names_what_to_install(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    bindir = isolated_env / "tools"
    bindir.mkdir()
    for tool in {"mvn", "java"} - {missing}:
        exe = bindir / tool
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    result = CliRunner().invoke(cli, ["jmeter", "install"])
    assert result.exit_code == 3
    out = result.output.strip()
    assert out.startswith(f"error: `{missing}` not found on PATH: install")
    assert "Traceback" not in out


def test_install_reuses_a_complete_home_without_running_maven(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _fake_home(inst.cached_jmeter_home())
    (home / inst.MARKER).write_text('{"source": "maven", "plugins": ["p.jar"]}')

    def boom(*_: object, **__: object) -> None:
        raise AssertionError("maven must not run for a complete home")

    monkeypatch.setattr(inst, "_mvn_resolve", boom)
    result = inst.install()
    assert result.reused
    assert result.plugins == ("p.jar",)


def test_jmeter_command_runs_the_launcher_jar_directly(isolated_env: Path) -> None:
    home = find_jmeter_home(_fake_home(isolated_env / "h"))
    cmd = jmeter_command(home, ["-n", "-t", "p.jmx"], java="/usr/bin/java")
    assert cmd[0] == "/usr/bin/java"
    assert cmd[-5:] == ["-jar", str(home.launcher), "-n", "-t", "p.jmx"]
    assert os.path.basename(cmd[-4]).startswith("ApacheJMeter-")
