"""What ``loadguard run`` sets up before JMeter starts: paths JMeter is handed, the plan it
runs, the run folder, and the loopback-only BeanShell console (fails closed)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadguard.errors import EngineError, UsageError
from loadguard.jmeter.bsh_loopback import (
    LOOPBACK_SERVER_SCRIPT,
    confirm_loopback_console,
    write_loopback_server_file,
)
from loadguard.jmeter.home import find_jmeter_home, jmeter_command
from loadguard.jmeter.launch import LaunchSpec, build_args, free_tcp_pair
from loadguard.jmeter.remote import ControllerSpec, RemoteEngine, controller_args
from loadguard.sidecar import Paths, RunPlan, SidecarConfig, claim_run_folder, staged_plan
from loadguard.slo import SloSpec

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "tests" / "plans" / "newcomer" / "shop.jmx"
ELASTIC = REPO / "jmx_templates" / "elastic_plan.jmx"


def _cfg(out: Path) -> SidecarConfig:
    return SidecarConfig(paths=Paths.in_dir(out), spec=SloSpec.from_options(p95="300ms"))


def _run(plan: Path, out: Path, force: bool = False) -> RunPlan:
    return RunPlan(plan=plan, jmeter=None, out_dir=out, force=force)  # type: ignore[arg-type]


@pytest.fixture()
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def test_jmeter_is_handed_absolute_paths_for_relative_inputs(in_tmp: Path) -> None:
    spec = LaunchSpec(
        plan=Path("plans/p.jmx"),
        jtl=Path("results/r/results.jtl"),
        log=Path("results/r/jmeter.log"),
        stdout=Path("results/r/jmeter.out"),
        bsh_port=9000,
        udp_port=4445,
        properties={},
        bsh_server_file=Path("results/r/x.bsh"),
    )
    args = build_args(spec)
    for flag, rel in (("-t", "plans/p.jmx"), ("-l", "results/r/results.jtl")):
        assert args[args.index(flag) + 1] == str(in_tmp / rel)
    assert args[args.index("-j") + 1] == str(in_tmp / "results/r/jmeter.log")
    assert f"-Jbeanshell.server.file={in_tmp / 'results/r/x.bsh'}" in args


def test_the_distributed_controller_is_handed_absolute_paths(in_tmp: Path) -> None:
    spec = ControllerSpec(
        plan=Path("p.jmx"),
        jtl=Path("out/r.jtl"),
        log=Path("out/j.log"),
        stdout=Path("out/j.out"),
        udp_port=4445,
        remotes=(RemoteEngine(host="h1", port=1099, spec="h1:1099"),),
    )
    args = controller_args(spec)
    assert args[args.index("-t") + 1] == str(in_tmp / "p.jmx")
    assert args[args.index("-l") + 1] == str(in_tmp / "out/r.jtl")


def test_a_relative_jmeter_home_is_resolved_where_the_command_was_typed(
    in_tmp: Path,
) -> None:
    (in_tmp / "jm" / "bin").mkdir(parents=True)
    (in_tmp / "jm" / "bin" / "ApacheJMeter-5.6.3.jar").write_bytes(b"")
    home = find_jmeter_home("jm")
    assert home.path == in_tmp / "jm" and home.launcher.is_absolute()


def test_a_relative_java_home_is_resolved_where_the_command_was_typed(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (in_tmp / "jm" / "bin").mkdir(parents=True)
    (in_tmp / "jm" / "bin" / "ApacheJMeter-5.6.3.jar").write_bytes(b"")
    monkeypatch.setenv("JAVA_HOME", "jdk")
    cmd = jmeter_command(find_jmeter_home("jm"), ["-n"])
    assert cmd[0] == str(in_tmp / "jdk" / "bin" / "java")


def test_a_folder_holding_a_run_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run1"
    out.mkdir()
    (out / "results.jtl").write_text("timeStamp,elapsed\n1,2\n")
    with pytest.raises(UsageError, match=r"already holds a run: results.jtl"):
        claim_run_folder(_run(SHOP, out), Paths.in_dir(out))
    assert (out / "results.jtl").exists()


def test_force_removes_the_earlier_run_and_keeps_other_files(tmp_path: Path) -> None:
    out = tmp_path / "run1"
    out.mkdir()
    for name in ("results.jtl", "decisions.csv", "summary.json", "jmeter.log", "notes.txt"):
        (out / name).write_text("old\n")
    claim_run_folder(_run(SHOP, out, force=True), Paths.in_dir(out))
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_an_empty_or_new_folder_is_claimed_without_force(tmp_path: Path) -> None:
    claim_run_folder(_run(SHOP, tmp_path / "new"), Paths.in_dir(tmp_path / "new"))
    (tmp_path / "empty").mkdir()
    claim_run_folder(_run(SHOP, tmp_path / "empty"), Paths.in_dir(tmp_path / "empty"))


def test_an_injected_plan_runs_from_beside_the_users_plan(tmp_path: Path) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    plan = plans / "shop.jmx"
    plan.write_bytes(SHOP.read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    with staged_plan(_run(plan, out), _cfg(out)) as running:
        assert running.parent == plans and running.name.startswith(".shop.loadguard-")
        assert b"LoadGuard Elastic Timer" in running.read_bytes()
        assert running.read_bytes() == (out / "shop.loadguard.jmx").read_bytes()
    assert sorted(p.name for p in plans.iterdir()) == ["shop.jmx"]  # nothing left behind


def test_a_killed_runs_hidden_copy_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    plan = plans / "shop.jmx"
    plan.write_bytes(SHOP.read_bytes())
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid no process has now (reused only after the pid space wraps)
    orphan = plans / f".shop.loadguard-{dead.pid}.jmx"
    live = plans / f".shop.loadguard-{os.getppid()}.jmx"  # pytest's parent is alive
    other = plans / f".other.loadguard-{dead.pid}.jmx"  # another plan's: not ours to judge
    for p in (orphan, live, other):
        p.write_bytes(b"<jmeterTestPlan/>")
    out = tmp_path / "out"
    out.mkdir()
    with staged_plan(_run(plan, out), _cfg(out)):
        pass
    assert sorted(p.name for p in plans.iterdir()) == sorted(["shop.jmx", live.name, other.name])


def test_a_plan_with_the_timer_runs_as_it_is(tmp_path: Path) -> None:
    with staged_plan(_run(ELASTIC, tmp_path), _cfg(tmp_path)) as running:
        assert running == ELASTIC
    assert (tmp_path / "elastic_plan.loadguard.jmx").read_bytes() == ELASTIC.read_bytes()


def test_an_unwritable_plan_folder_runs_the_copy_from_the_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    original = Path.write_bytes

    def refuse_beside(self: Path, data: bytes) -> int:
        if self.name.startswith("."):
            raise PermissionError(13, "Permission denied")
        return original(self, data)

    monkeypatch.setattr(Path, "write_bytes", refuse_beside)
    with staged_plan(_run(SHOP, tmp_path), _cfg(tmp_path)) as running:
        assert running == (tmp_path / "shop.loadguard.jmx").absolute()
    assert "relative to its own folder" in caplog.text


@pytest.mark.parametrize(
    ("props", "extra"),
    [
        ({"beanshell.server.file": ""}, ()),
        ({}, ("-Jbeanshell.server.port=9000",)),
        ({}, ("--jmeterproperty=beanshell.server.file=x.bsh",)),
    ],
)
def test_run_refuses_a_user_beanshell_setting(
    tmp_path: Path, props: dict[str, str], extra: tuple[str, ...]
) -> None:
    from loadguard.sidecar import run_plan

    run = RunPlan(
        plan=SHOP,
        jmeter=None,  # type: ignore[arg-type]
        out_dir=tmp_path / "o",
        properties=props,
        extra_args=extra,
    )
    with pytest.raises(UsageError, match=r"beanshell\.server"):
        run_plan(run, _cfg(tmp_path / "o"))
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_the_console_file_is_read_back_as_written(tmp_path: Path) -> None:
    path = write_loopback_server_file(tmp_path)
    assert path.is_absolute() and path.read_text() == LOOPBACK_SERVER_SCRIPT


def test_a_console_file_that_cannot_be_written_stops_the_run(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    with pytest.raises(EngineError, match="no load started"):
        write_loopback_server_file(tmp_path / "afile")


_LISTEN = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen()
print("up", flush=True); time.sleep(30)
"""


def _listener(host: str, port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _LISTEN, host, str(port)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    return proc


def _confirm(proc: subprocess.Popen[str], port: int, timeout_s: float = 5.0) -> bool:
    return confirm_loopback_console(
        proc.pid, port, alive=lambda: proc.poll() is None, stop=threading.Event(),
        timeout_s=timeout_s,
    )  # fmt: skip


def test_a_session_console_on_loopback_is_confirmed() -> None:
    port = free_tcp_pair()
    proc = _listener("127.0.0.1", port + 1)
    try:
        assert _confirm(proc, port) is True
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(
    ("host", "offset"),
    [("0.0.0.0", 1), ("127.0.0.1", 0)],
    ids=["session-console-on-every-interface", "http-console-beside-the-session-console"],
)
def test_a_console_that_is_not_the_loopback_one_is_refused(host: str, offset: int) -> None:
    port = free_tcp_pair()
    proc = _listener(host, port + offset)
    try:
        with pytest.raises(EngineError, match="not LoadGuard's loopback-only one"):
            _confirm(proc, port)
    finally:
        proc.kill()
        proc.wait()


def test_no_console_within_the_deadline_stops_the_run() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(EngineError, match="no BeanShell console"):
            _confirm(proc, free_tcp_pair(), timeout_s=0.3)
    finally:
        proc.kill()
        proc.wait()


def test_a_jmeter_that_ended_is_left_to_the_probe() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert _confirm(proc, free_tcp_pair()) is False


def test_local_and_distributed_runs_share_the_controlled_run_arguments() -> None:
    paths = {"plan": Path("/p.jmx"), "jtl": Path("/r.jtl"), "log": Path("/j.log")}
    local = build_args(
        LaunchSpec(**paths, stdout=Path("/o"), bsh_port=9000, udp_port=4445, properties={})
    )
    remote = controller_args(
        ControllerSpec(
            **paths, stdout=Path("/o"), udp_port=4445, remotes=(RemoteEngine("h1", 1099, "h1"),)
        )
    )
    common = [a for a in local if a in remote]
    assert common[:7] == ["-n", "-t", "/p.jmx", "-l", "/r.jtl", "-j", "/j.log"]
    for arg in (
        "-Jjmeterengine.force.system.exit=true",
        "-Jjmeterengine.nongui.port=4445",
        "-Jjmeter.save.saveservice.output_format=csv",
        "-Jjmeter.save.saveservice.autoflush=true",
    ):
        assert arg in common
