"""loadguard evaluate --target teastore: the baselines' browse plans and the config."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from lxml import etree

from loadguard.cli import cli
from loadguard.errors import EngineError
from loadguard.lab.evaluate import targets as targets_mod
from loadguard.lab.evaluate.config import EvalConfig, teastore_overrides
from loadguard.lab.evaluate.runner import baseline_props
from loadguard.lab.evaluate.schemes import BY_NAME
from loadguard.lab.evaluate.targets import (
    OpenTarget,
    Targets,
    baseline_plan_for,
    elastic_plan_for,
    elastic_props,
    target_props,
)
from loadguard.lab.evaluate.teastore_plans import browse_baseline
from loadguard.lab.teastore.reset import reset_url
from loadguard.resources import teastore_browse_plan

BROWSE_PLAN = teastore_browse_plan()

SAMPLERS = 8


def _labels(doc: etree._ElementTree) -> list[str]:
    return [str(el.get("testname")) for el in doc.iter("HTTPSamplerProxy")]


def _schedule(el: etree._Element) -> list[str]:
    return [str(p.text) for p in el.findall("./collectionProp/collectionProp/stringProp")]


def test_ffa_browse_plan_offers_the_stress_rate_in_samples(tmp_path: Path) -> None:
    plan = browse_baseline(BROWSE_PLAN, BY_NAME["ffa"].plan_path, 800, tmp_path / "ffa.jmx")
    doc = etree.parse(str(plan))
    (ffa,) = doc.iter("com.blazemeter.jmeter.threads.arrivals.FreeFormArrivalsThreadGroup")
    assert _schedule(ffa)[:2] == [f"{800 / SAMPLERS:g}"] * 2
    assert not list(doc.iter("ThreadGroup"))
    assert _labels(doc) == _labels(etree.parse(str(BROWSE_PLAN)))
    assert not [t for t in doc.iter("JSR223Timer") if "Elastic" in str(t.get("testname"))]


def test_tstctg_browse_plan_shapes_samples_with_the_real_timer(tmp_path: Path) -> None:
    plan = browse_baseline(BROWSE_PLAN, BY_NAME["tstctg"].plan_path, 800, tmp_path / "t.jmx")
    doc = etree.parse(str(plan))
    (ctg,) = doc.iter("com.blazemeter.jmeter.threads.concurrency.ConcurrencyThreadGroup")
    (tst,) = doc.iter("kg.apc.jmeter.timers.VariableThroughputTimer")
    assert tst.getparent() is ctg.getnext()  # beside the browse samplers
    assert _schedule(tst)[:2] == ["800", "800"]
    assert len(_labels(doc)) == SAMPLERS


def test_teastore_target_uses_the_browse_plan_and_its_properties(tmp_path: Path) -> None:
    cfg = EvalConfig.quick_config(tmp_path, **teastore_overrides("per-service", True, {}))
    assert cfg.target_kind == "teastore" and cfg.teastore_layout == "per-service"
    assert cfg.target.p95_ms == 500.0 and cfg.sweep_rates == (40.0,)
    assert elastic_plan_for(cfg) == BROWSE_PLAN
    assert target_props(cfg, 1234) == {"hostname": "127.0.0.1", "port": "1234"}
    assert elastic_props(cfg, 70.5) == {"numUser": "100", "rampUp": "1", "duration": "70"}
    plan = baseline_plan_for(cfg, BY_NAME["ffa"], tmp_path)
    assert plan == tmp_path / "plan.jmx" and plan.is_file()


def test_given_sweep_rates_are_kept_for_teastore() -> None:
    assert "sweep_rates" not in teastore_overrides("single", False, {"sweep_rates": (10.0,)})


def test_full_teastore_sweep_points_leave_the_jit_warm_up_out(tmp_path: Path) -> None:
    cfg = EvalConfig(out_dir=tmp_path, **teastore_overrides("single", False, {}))  # type: ignore[arg-type]
    assert (cfg.sweep_seconds, cfg.sweep_warmup_s) == (90.0, 60.0)


def test_suite_with_a_teastore_target_is_refused_in_one_line() -> None:
    result = CliRunner().invoke(cli, ["evaluate", "--suite", "--target", "teastore"])
    assert result.exit_code == 2 and "--suite" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_quick_teastore_shares_one_instance_and_a_full_run_does_not(tmp_path: Path) -> None:
    quick = EvalConfig.quick_config(tmp_path, **teastore_overrides("single", True, {}))
    full = EvalConfig(out_dir=tmp_path, **teastore_overrides("single", False, {}))  # type: ignore[arg-type]
    assert quick.share_target and not full.share_target


def test_quick_teastore_floods_get_the_elastic_plans_threads_so_they_drain_fast(
    tmp_path: Path,
) -> None:
    quick = EvalConfig.quick_config(tmp_path, **teastore_overrides("single", True, {}))
    full = EvalConfig(out_dir=tmp_path, **teastore_overrides("single", False, {}))  # type: ignore[arg-type]
    props = baseline_props(quick, 8080)
    assert props["ffa.limit"] == props["tst.max"] == str(quick.elastic_threads) == "100"
    assert "ffa.limit" not in baseline_props(full, 8080)  # a full run keeps the plans' 1000
    assert "ffa.limit" not in baseline_props(EvalConfig.quick_config(tmp_path), 8080)


def _counting_open(opened: list[int]) -> Callable[[EvalConfig, int], Iterator[OpenTarget]]:
    @contextmanager
    def fake(cfg: EvalConfig, seed: int) -> Iterator[OpenTarget]:
        opened.append(seed)
        yield OpenTarget(1000 + len(opened), None)
        opened.append(-seed)  # closed

    return fake


def test_shared_target_opens_once_and_closes_with_the_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[int] = []
    monkeypatch.setattr(targets_mod, "open_target", _counting_open(opened))
    cfg = EvalConfig(out_dir=tmp_path, share_target=True)
    with Targets(cfg) as pool:
        ports = []
        for seed in (1, 2, 3):
            with pool.open(seed) as t:
                ports.append(t.port)
        assert opened == [1]
    assert ports == [1001] * 3 and opened == [1, -1]


def test_unshared_targets_are_fresh_per_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[int] = []
    monkeypatch.setattr(targets_mod, "open_target", _counting_open(opened))
    with Targets(EvalConfig(out_dir=tmp_path)) as pool:
        for seed in (1, 2):
            with pool.open(seed):
                pass
    assert opened == [1, -1, 2, -2]


def test_teastore_reset_shares_one_instance_in_a_full_run(tmp_path: Path) -> None:
    over = teastore_overrides("single", False, {}, reset=True)
    cfg = EvalConfig(out_dir=tmp_path, **over)  # type: ignore[arg-type]
    assert cfg.share_target
    assert (cfg.sweep_seconds, cfg.sweep_warmup_s) == (90.0, 60.0)  # the first point is cold


def test_teastore_reset_without_the_teastore_target_is_refused_in_one_line() -> None:
    result = CliRunner().invoke(cli, ["evaluate", "--teastore-reset", "--quick"])
    assert result.exit_code == 2 and "--teastore-reset" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_reset_asks_teastores_own_database_page_for_the_start_counts() -> None:
    url = reset_url(8080)
    assert url.startswith("http://127.0.0.1:8080/tools.descartes.teastore.webui/dataBaseAction?")
    assert "categories=5&products=100&users=100&orders=5&confirm=" in url


def _teastore_that_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hangs: int
) -> tuple[EvalConfig, list[str]]:
    """A TeaStore config whose first ``hangs`` starts never become ready, and the log of
    its starts and stops."""
    starts: list[str] = []

    @contextmanager
    def fake(args: list[str]) -> Iterator[SimpleNamespace]:
        starts.append("start")
        if len(starts) <= hangs:
            raise EngineError("loadguard teastore exited before it was ready: not ready")
        yield SimpleNamespace(port=4242)
        starts.append("stop")

    monkeypatch.setattr(targets_mod, "spawn_teastore", fake)
    monkeypatch.setattr(targets_mod, "resolve_source", lambda _s: SimpleNamespace(path=tmp_path))
    monkeypatch.setattr(targets_mod, "source_from_env", lambda: None)
    return EvalConfig(out_dir=tmp_path, target_kind="teastore"), starts


def test_a_teastore_that_never_became_ready_is_started_once_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, starts = _teastore_that_hangs(tmp_path, monkeypatch, hangs=1)
    with targets_mod.open_target(cfg, 1) as target:
        assert target.port == 4242
    assert starts == ["start", "start", "stop"]


def test_a_teastore_that_hangs_at_every_start_fails_the_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, starts = _teastore_that_hangs(tmp_path, monkeypatch, hangs=99)
    with pytest.raises(EngineError, match="not ready"), targets_mod.open_target(cfg, 1):
        pass
    assert starts == ["start"] * targets_mod.TEASTORE_STARTS
