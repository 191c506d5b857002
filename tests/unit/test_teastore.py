"""loadguard teastore: the pure parts (status page, Tomcat configuration, layouts, source
hash, cache reuse), the CLI's bad values, and stopping a Tomcat's process group."""

from __future__ import annotations

import json
import signal
import sys
import tarfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from lxml import etree

from loadguard.cli import cli
from loadguard.errors import ProvisioningError, UsageError
from loadguard.lab.teastore import build as tbuild
from loadguard.lab.teastore.conf import render_context_xml, render_server_xml
from loadguard.lab.teastore.layout import REGISTRY, SERVICES, WEBUI, TomcatSpec, plan
from loadguard.lab.teastore.runner import free_port, pick_ports
from loadguard.lab.teastore.source import (
    RELEASE_URL,
    SOURCE_ENV,
    Source,
    resolve_source,
    source_hash,
)
from loadguard.lab.teastore.status import parse_status
from loadguard.lab.teastore.tomcat import Tomcat, stop_all


def _row(name: str, state: str, cls: str = "success") -> str:
    return (
        f"<tr>\n<td>{name}</td>\n<td>1</td>\n<td>127.0.0.1:8080<br/></td>\n"
        f'<td class="{cls}">{state}</td>\n</tr>'
    )


READY_ROWS = {
    "WebUI": "OK",
    "Auth": "OK",
    "Persistence": "OK and populated",
    "Recommender": "OK and trained",
    "Image": "OK and populated",
}


def _page(rows: dict[str, str], extra: str = "") -> str:
    body = "".join(_row(k, v) for k, v in rows.items())
    return f"<html><body>{extra}<table class='table'>{body}</table></body></html>"


def test_status_page_with_every_service_in_its_final_state_is_ready() -> None:
    status = parse_status(_page(READY_ROWS))
    assert status.ready, status.summary()


def test_status_page_still_generating_images_is_not_ready() -> None:
    rows = dict(READY_ROWS)
    rows["Image"] = 'Generating images <span class="statusloader"></span>'
    status = parse_status(_page(rows))
    assert not status.ready
    assert "Image: Generating images" in status.summary()


def test_status_page_without_registry_is_not_ready() -> None:
    extra = "<h2>Load Balancer does not work. Is Registry offline?</h2>"
    assert not parse_status(_page(READY_ROWS, extra)).ready


def test_status_page_missing_a_row_is_not_ready() -> None:
    rows = {k: v for k, v in READY_ROWS.items() if k != "Recommender"}
    status = parse_status(_page(rows))
    assert not status.ready and "Recommender: missing" in status.summary()


def test_server_xml_listens_on_loopback_with_max_threads_and_no_shutdown_port() -> None:
    root = etree.fromstring(render_server_xml("all", 18080, 37, access_log=False).encode())
    assert root.get("port") == "-1"
    connectors = root.findall(".//Connector")
    assert len(connectors) == 1
    c = connectors[0]
    assert (c.get("address"), c.get("port"), c.get("maxThreads")) == ("127.0.0.1", "18080", "37")
    assert root.find(".//Valve") is None


def test_server_xml_binds_the_port_only_once_every_war_is_deployed() -> None:
    # bound at init, the port accepts the services' registry calls during deployment and
    # leaves them unanswered until their 5 s read timeouts (twice per call: ~10 s a WAR);
    # unbound, they are refused at once and the load balancer updater retries later
    root = etree.fromstring(render_server_xml("all", 1, 200, access_log=False).encode())
    (connector,) = root.findall(".//Connector")
    assert connector.get("bindOnInit") == "false"


def test_server_xml_with_access_log_writes_it_into_logs() -> None:
    root = etree.fromstring(render_server_xml("auth", 1, 200, access_log=True).encode())
    valve = root.find(".//Host/Valve")
    assert valve is not None
    assert valve.get("directory") == "logs" and valve.get("prefix") == "auth_access"


def test_per_service_layout_gives_each_service_its_port_and_one_registry() -> None:
    ports = {s: 9000 + i for i, s in enumerate(SERVICES)}
    specs = plan("per-service", ports)
    assert [s.services for s in specs] == [(s,) for s in SERVICES]
    for spec in specs:
        env = dict(spec.env)
        assert env["servicePort"][0] == str(spec.port)
        assert env["registryURL"][0] == (
            f"http://127.0.0.1:{ports[REGISTRY]}/tools.descartes.teastore.registry/rest/services/"
        )
        assert env["hostName"][0] == "127.0.0.1" and env["inMemoryDB"][0] == "true"


def test_single_layout_is_one_tomcat_with_all_six_wars() -> None:
    specs = plan("single", dict.fromkeys(SERVICES, 8080))
    assert len(specs) == 1 and specs[0].services == SERVICES and specs[0].port == 8080


def test_context_xml_carries_every_entry_with_its_type() -> None:
    spec = plan("single", dict.fromkeys(SERVICES, 8080))[0]
    root = etree.fromstring(render_context_xml(spec.env).encode())
    env = {e.get("name"): (e.get("value"), e.get("type")) for e in root.findall("Environment")}
    assert env == dict(spec.env)
    assert env["recommenderLoopTime"] == ("0", "java.lang.Long")


def test_per_service_ports_are_distinct_and_the_webui_gets_the_given_one() -> None:
    given = free_port()
    ports = pick_ports("per-service", given)
    assert len(set(ports.values())) == len(SERVICES) and ports[WEBUI] == given
    single = pick_ports("single", 0)
    assert set(single.values()) == {single[WEBUI]}


def _tree(root: Path) -> Path:
    (root / "services" / "x").mkdir(parents=True)
    (root / "pom.xml").write_text("<project/>")
    (root / "services" / "x" / "A.java").write_text("class A {}")
    return root


def test_tree_hash_changes_with_content_but_not_with_target_output(tmp_path: Path) -> None:
    src = Source(_tree(tmp_path / "ts"), False)
    before = source_hash(src, "r")
    (tmp_path / "ts" / "services" / "x" / "target").mkdir()
    (tmp_path / "ts" / "services" / "x" / "target" / "x.war").write_text("built")
    assert source_hash(src, "r") == before
    (tmp_path / "ts" / "services" / "x" / "A.java").write_text("class A { int b; }")
    assert source_hash(src, "r") != before
    assert source_hash(src, "other recipe") != source_hash(src, "r")


def test_source_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        resolve_source(tmp_path / "nope.tar.gz")


def test_folder_that_is_not_teastore_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a TeaStore tree"):
        resolve_source(tmp_path)


def _complete_cache(root: Path) -> None:
    (root / "tomcat" / "bin").mkdir(parents=True)
    (root / "tomcat" / "lib").mkdir()
    (root / "tomcat" / "bin" / "bootstrap.jar").write_bytes(b"")
    (root / "tomcat" / "lib" / f"hsqldb-{tbuild.HSQLDB_VERSION}.jar").write_bytes(b"")
    (root / "webapps").mkdir()
    for s in SERVICES:
        (root / "webapps" / f"{s}.war").write_bytes(b"")
    (root / tbuild.MARKER).write_text(json.dumps({"key": "k"}))


def test_a_complete_cached_build_is_reused_without_maven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOADGUARD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no mvn, no java: must not matter
    archive = tmp_path / "ts.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(_tree(tmp_path / "teastore"), arcname="teastore")
    src = Source(archive, True)
    _complete_cache(tbuild.cache_dir(source_hash(src, tbuild.RECIPE)))
    result = tbuild.ensure_build(src)
    assert result.reused and result.build.root.parent == tmp_path / "home" / "teastore"


def test_a_build_without_maven_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOADGUARD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ProvisioningError, match="`mvn` not found"):
        tbuild.ensure_build(Source(_tree(tmp_path / "ts"), False))


def test_a_half_built_cache_without_its_marker_is_not_trusted(tmp_path: Path) -> None:
    root = tmp_path / "b"
    _complete_cache(root)
    (root / tbuild.MARKER).unlink()
    assert not tbuild.is_complete(tbuild.Build(root))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--heap", "lots"], "--heap"),
        (["--max-threads", "0"], "--max-threads"),
        (["--port", "70000"], "--port"),
        (["--source", "does-not-exist.tar.gz"], "no such file"),
    ],
)
def test_bad_teastore_options_fail_in_one_line_with_exit_2(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["teastore", *args])
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_teastore_without_a_source_says_in_one_line_where_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(SOURCE_ENV, raising=False)
    result = CliRunner().invoke(cli, ["teastore"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert RELEASE_URL in lines[0] and "--source" in lines[0] and SOURCE_ENV in lines[0]
    assert "shared" not in lines[0]


def test_teastore_reads_its_source_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SOURCE_ENV, str(tmp_path / "from-env.tar.gz"))
    result = CliRunner().invoke(cli, ["teastore"])
    assert result.exit_code == 2
    assert "from-env.tar.gz" in result.output and "no such file" in result.output


def test_stop_kills_a_tomcat_that_ignores_sigterm_after_the_grace(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    script = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)"
    spec = TomcatSpec("x", 1, (), {})
    stubborn = Tomcat(spec, tmp_path, [sys.executable, "-c", script])
    polite = Tomcat(spec, tmp_path, [sys.executable, "-c", "import time; time.sleep(60)"])
    time.sleep(0.5)  # let the first one install its handler
    started = time.monotonic()
    stop_all([stubborn, polite], grace_s=1.0)
    assert not stubborn.alive() and not polite.alive()
    assert stubborn.proc.returncode == -signal.SIGKILL
    assert polite.proc.returncode == -signal.SIGTERM
    assert time.monotonic() - started < 10
