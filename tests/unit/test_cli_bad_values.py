"""Every CLI option given a bad value: one line ``error: ...`` naming the culprit, exit 2.

Each row is a command line whose other options are valid, so the only fault is the bad
value; the message must name the option (or its key) so the user knows which one. The
commands run in-process; none gets far enough to start JMeter, a server or a simulation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from loadguard.cli import cli

REPO = Path(__file__).resolve().parents[2]
PLAN = str(REPO / "jmx_templates" / "elastic_plan.jmx")
ATTACH = ["attach", "--jtl", "r.jtl", "--dry-run", "--p95", "500ms"]
# A home that passes the lookup (bin/ApacheJMeter.jar exists) but cannot run: every
# value must be refused before LoadGuard would try to start it.
RUN = ["run", PLAN, "--p95", "500ms", "--out", "{tmp}/out", "--jmeter-home", "{tmp}/fake-jmeter"]
SIM = ["simulate", "--p95", "500ms", "--duration", "10s"]
TARGET = ["target"]

# (case id, argv, text the error line must contain)
SIDECAR_COMMON: list[tuple[str, list[str], str]] = [
    ("slo-file", ["--slo-file", "{tmp}/missing.toml"], "missing.toml"),
    ("p50", ["--p50", "fast"], "p50"),
    ("p90", ["--p90", "-3ms"], "p90"),
    ("p95", ["--p95", "500"], "p95"),
    ("p99", ["--p99", "1 parsec"], "p99"),
    ("mean", ["--mean", "nan ms"], "mean"),
    ("error-rate", ["--error-rate", "150%"], "error_rate"),
    ("window", ["--window", "soon"], "window"),
    ("min-rate", ["--min-rate", "-1"], "--min-rate"),
    ("max-rate", ["--max-rate", "lots"], "--max-rate"),
    ("policy", ["--policy", "yolo"], "--policy"),
    ("param", ["--param", "noequals"], "noequals"),
    ("param-unknown", ["--param", "warp=9"], "warp"),
    ("param lag_ms", ["--param", "lag_ms=500"], "--actuation-lag"),
    ("actuation-lag", ["--actuation-lag", "1"], "--actuation-lag"),
    ("tick", ["--tick", "5ms"], "--tick"),
    ("tick bare", ["--tick", "2"], "missing unit"),
    ("initial-rate", ["--initial-rate", "zero"], "--initial-rate"),
    ("decisions", ["--decisions", "{file}/d.csv"], "not a directory"),
    ("summary", ["--summary", "{file}/s.json"], "not a directory"),
    ("junit", ["--junit", "{file}/j.xml"], "not a directory"),
    ("duration", ["--duration", "forever"], "--duration"),
    ("idle-exit", ["--idle-exit", "-5s"], "--idle-exit"),
    ("min-capacity", ["--min-capacity", "many"], "--min-capacity"),
    ("auto-stop", ["--auto-stop", "0"], "--auto-stop"),
    ("auto-stop-type", ["--auto-stop", "two"], "--auto-stop"),
    ("jtl-columns", ["--jtl-columns", "foo,bar"], "timeStamp"),
    ("jmeter-properties", ["--jmeter-properties", "{tmp}/missing.properties"], "missing"),
    ("labels", ["--labels", "(unclosed"], "--labels"),
    ("exclude-labels", ["--exclude-labels", "[z-a]"], "--exclude-labels"),
]

CASES: list[tuple[str, list[str], str]] = [
    *[(f"attach {i}", [*ATTACH, *a], m) for i, a, m in SIDECAR_COMMON],
    *[(f"run {i}", [*RUN, *a], m) for i, a, m in SIDECAR_COMMON],
    ("attach engine", [*ATTACH[:3], "--p95", "1s", "--engine", "host-without-port"], "engine"),
    ("attach engine port", [*ATTACH[:3], "--p95", "1s", "--engine", "h:99999"], "port"),
    ("attach engine-max-rate", [*ATTACH, "--engine-max-rate", "fast"], "engine-max-rate"),
    ("attach remote", [*ATTACH, "--remote", "::::"], "remote"),
    ("attach out", ["attach", "--out", "{file}", "--dry-run", "--p95", "1s"], "{file}"),
    ("run plan", ["run", "{tmp}/missing.jmx", "--p95", "1s"], "missing.jmx"),
    ("run -J", [*RUN, "-J", "novalue"], "novalue"),
    ("run jmeter-home", ["run", PLAN, "--p95", "1s", "--jmeter-home", "{file}"], "jmeter-home"),
    ("run sample-sender", [*RUN, "--sample-sender", "pigeon"], "--sample-sender"),
    ("simulate policy", [*SIM, "--policy", "yolo"], "--policy"),
    ("simulate param", [*SIM, "--param", "x"], "x"),
    ("simulate workers", [*SIM, "--workers", "0"], "workers"),
    ("simulate workers type", [*SIM, "--workers", "two"], "--workers"),
    ("simulate service", [*SIM, "--service", "quick"], "service"),
    ("simulate service-dist", [*SIM, "--service-dist", "zipf"], "--service-dist"),
    ("simulate queue", [*SIM, "--queue", "-4"], "queue"),
    ("simulate p95", ["simulate", "--p95", "1x"], "p95"),
    ("simulate initial-rate", [*SIM, "--initial-rate", "-2"], "--initial-rate"),
    ("simulate duration", ["simulate", "--p95", "1s", "--duration", "ages"], "duration"),
    ("simulate capacity-change", [*SIM, "--capacity-change", "soon"], "capacity"),
    ("simulate actuation-lag", [*SIM, "--actuation-lag", "-1s"], "lag"),
    ("simulate jtl-flush", [*SIM, "--jtl-flush", "x"], "flush"),
    ("simulate arrivals", [*SIM, "--arrivals", "bursty"], "--arrivals"),
    ("simulate tick", [*SIM, "--tick", "0s"], "tick"),
    ("simulate seed", [*SIM, "--seed", "abc"], "--seed"),
    ("simulate param lag_ms", [*SIM, "--param", "lag_ms=1"], "--actuation-lag"),
    ("simulate window", [*SIM, "--window", "10"], "missing unit"),
    ("simulate slo-file", [*SIM, "--slo-file", "{tmp}/none.toml"], "none.toml"),
    ("target port", [*TARGET, "--port", "70000"], "port"),
    ("target model", [*TARGET, "--model", "quantum"], "--model"),
    ("target workers", [*TARGET, "--workers", "0"], "workers"),
    ("target queue", [*TARGET, "--queue", "-1"], "queue"),
    ("target service", [*TARGET, "--service", "slowish"], "service"),
    ("target endpoint-service", [*TARGET, "--endpoint-service", "cart"], "endpoint"),
    ("target capacity-change", [*TARGET, "--capacity-change", "later:0.5"], "capacity"),
    ("target capacity factor", [*TARGET, "--capacity-change", "10s:-2"], "factor"),
    (
        "target two capacity changes",
        [*TARGET, "--capacity-change", "10s:0.5", "--capacity-change", "20s:2"],
        "once",
    ),
    ("target p95", [*TARGET, "--p95", "9"], "p95"),
    ("target seed", [*TARGET, "--seed", "x"], "--seed"),
    ("metrics jtl", ["metrics", "{tmp}/none.jtl"], "none.jtl"),
    ("metrics window", ["metrics", "{file}", "--window", "long"], "window"),
    ("metrics step", ["metrics", "{file}", "--step", "-1s"], "step"),
    ("metrics jtl-columns", ["metrics", "{file}", "--jtl-columns", "a,b"], "timeStamp"),
    ("metrics -J", ["metrics", "{file}", "-J", "novalue"], "novalue"),
    ("metrics labels", ["metrics", "{file}", "--labels", "("], "--labels"),
    ("metrics reorder-slack", ["metrics", "{file}", "--reorder-slack", "x"], "slack"),
    ("inject plan", ["inject", "{file}", "{tmp}/o.jmx"], "not well-formed"),
    ("inject initial-rate", ["inject", PLAN, "{tmp}/o.jmx", "--initial-rate", "x"], "rate"),
    ("inject max-rate", ["inject", PLAN, "{tmp}/o.jmx", "--max-rate", "-5"], "rate"),
    ("inject p95", ["inject", PLAN, "{tmp}/o.jmx", "--p95", "1"], "p95"),
    (
        "inject thread-group",
        ["inject", PLAN, "{tmp}/o.jmx", "--thread-group", "nope"],
        "nope",
    ),
    ("push engine", ["push", "-e", "nohost", "-r", "5"], "nohost"),
    ("push rate", ["push", "-e", "127.0.0.1:9", "-r", "fast"], "fast"),
    ("push timeout", ["push", "-e", "127.0.0.1:9", "-r", "5", "--timeout", "x"], "--timeout"),
    ("push timeout bare", ["push", "-e", "127.0.0.1:9", "-r", "5", "--timeout", "5"], "unit"),
    ("stop engine", ["stop", "-e", "nohost"], "nohost"),
    ("stop udp-port", ["stop", "--udp-port", "x"], "--udp-port"),
    ("stop wait", ["stop", "-e", "127.0.0.1:9", "--wait", "x"], "--wait"),
    ("stop wait bare", ["stop", "-e", "127.0.0.1:9", "--wait", "30"], "unit"),
    ("stop two engines", ["stop", "-e", "127.0.0.1:9", "-e", "127.0.0.1:8"], "one --engine"),
    ("engines e", ["engines", "-e", "nohost"], "nohost"),
    ("engines timeout", ["engines", "-e", "127.0.0.1:9", "--timeout", "x"], "--timeout"),
    ("engines timeout bare", ["engines", "-e", "127.0.0.1:9", "--timeout", "3"], "unit"),
    ("report run_dir", ["report", "{tmp}/no-run"], "no-run"),
    ("compare runs", ["compare", "{tmp}/no-run-a", "{tmp}/no-run-b"], "no-run"),
    ("demo duration", ["demo", "--duration", "never"], "duration"),
    ("demo policy", ["demo", "--policy", "yolo"], "--policy"),
    ("demo p95", ["demo", "--duration", "5s", "--p95", "1"], "p95"),
    ("demo error-rate", ["demo", "--duration", "5s", "--error-rate", "2"], "error"),
    ("evaluate repetitions", ["evaluate", "--repetitions", "x"], "--repetitions"),
    ("evaluate seeds", ["evaluate", "--suite", "--seeds", "1,two"], "--seeds"),
    ("evaluate seeds empty", ["evaluate", "--suite", "--seeds", ","], "--seeds"),
    (
        "evaluate seeds and repetitions",
        ["evaluate", "--suite", "--seeds", "1", "--repetitions", "2"],
        "--seeds",
    ),
    ("evaluate seeds without suite", ["evaluate", "--seeds", "1"], "--seeds"),
    ("evaluate budget", ["evaluate", "--suite", "--violation-budget", "0%"], "violation_budget"),
    (
        "evaluate budget unit",
        ["evaluate", "--suite", "--violation-budget", "5"],
        "violation_budget",
    ),
    (
        "evaluate budget real",
        ["evaluate", "--suite", "--real", "--violation-budget", "5%"],
        "--violation-budget",
    ),
    ("evaluate sweep-duration", ["evaluate", "--sweep-duration", "30"], "--sweep-duration"),
    ("teastore start-timeout", ["teastore", "--start-timeout", "10"], "--start-timeout"),
    ("jmeter install from", ["jmeter", "install", "--from", "ftp"], "--from"),
    ("jmeter path home", ["jmeter", "path", "--jmeter-home", "{file}"], "jmeter-home"),
]


@pytest.mark.parametrize(("argv", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_value_is_one_line_and_exit_2(
    argv: list[str], needle: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Relative outputs (attach's default decisions.csv) land in tmp_path, not the checkout.
    monkeypatch.chdir(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("timeStamp,elapsed\n")
    (tmp_path / "fake-jmeter" / "bin").mkdir(parents=True)
    (tmp_path / "fake-jmeter" / "bin" / "ApacheJMeter.jar").write_bytes(b"")
    subs = {"{tmp}": str(tmp_path), "{file}": str(a_file)}

    def fill(text: str) -> str:
        for k, v in subs.items():
            text = text.replace(k, v)
        return text

    result = CliRunner().invoke(cli, [fill(a) for a in argv], catch_exceptions=False)
    err = result.stderr
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error: ")]
    assert result.exit_code == 2, (result.exit_code, err[-800:], result.stdout[-300:])
    assert len(errors) == 1 and "Traceback" not in err, err[-800:]
    assert fill(needle).lower() in errors[0].lower(), errors[0]
    # a renamed option must not pass here as "no such option"
    assert "no such option" not in errors[0].lower(), errors[0]
