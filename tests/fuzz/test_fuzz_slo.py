"""Fuzz the SLO spec: the ``[slo]`` mapping and the TOML file it comes from.

Whatever the values -- wrong types, NaN, negative, huge, bad units, broken regexes,
nested tables -- ``SloSpec.from_mapping`` and ``SloSpec.load`` build a spec or raise
``SloSpecError``; a spec they build is usable (``evaluate`` on an empty window works).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadguard.jtl.sample import SampleBatch
from loadguard.observation import Zone
from loadguard.slo import SloSpec
from loadguard.window import Window
from tests.fuzz.harness import budget, mutated, ours_or_ok, seed_ids, seeds

KEYS = [
    "p50", "p90", "p95", "p99", "mean", "max", "error_rate", "warn_margin", "min_samples",
    "window", "min_rate", "max_rate", "label", "pattern", "p96", "",
]  # fmt: skip
TEXT = st.sampled_from(
    [
        "500ms",
        "1s",
        "0ms",
        "-1ms",
        "1%",
        "100%",
        "101%",
        "0%",
        "-5%",
        "5/s",
        "300/min",
        "0/s",
        "nan",
        "inf",
        "1e309ms",
        "10",
        "ms",
        "",
        " ",
        "1 h",
        "2m",
        "80%",
        "1.5s",
        "(",
        "[a-",
        "*",
        "(?P<x>",
        "^/api",
        ".*",
        "\x00",
        "10µs",
        "١٠ms",
    ]
) | st.text(max_size=12)
SCALAR = (
    TEXT
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.none()
)
VALUE: st.SearchStrategy[Any] = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)
MAPPING = st.dictionaries(st.sampled_from(KEYS), VALUE, max_size=6)
RULE = st.dictionaries(st.sampled_from(KEYS), SCALAR, max_size=4)

TOML_TOKENS = [
    b"[slo]", b"[[slo.label]]", b'pattern = "', b'p95 = "', b'"', b"'", b"=", b"\n",
    b"[", b"]", b"{", b"}", b"ms", b"%", b"/s", b"nan", b"inf", b"-", b"\x00", b"\xff",
    b'"""', b"#", b"1979-05-27T07:32:00Z", b"[slo.label]",
]  # fmt: skip


_N = 40
_BATCH = SampleBatch.of(
    np.arange(_N, dtype=np.int64) * 10,
    np.arange(_N, dtype=np.int64) * 7 % 900,
    np.arange(_N) % 9 != 0,
    np.array(["/api/cart", "checkout", "/home", "x"] * (_N // 4)),
)


def _usable(spec: SloSpec) -> None:
    """A spec that was built judges a window as it says: NO_DATA below its minimum count;
    else exactly the overall thresholds the window's values exceed are breaches, the zone
    follows from the breaches and near misses, and the pressure is a number >= 0."""
    now = _N * 10 + 1000
    window = Window(spec.window_ms)
    window.add(_BATCH)
    stats = window.stats(now)
    obs = spec.evaluate(stats, now, 1.0)
    if stats.overall.count < spec.min_samples:
        assert obs.zone is Zone.NO_DATA and obs.breaches == () and obs.pressure is None
        return
    exceeded = set()
    for t in spec.limits:
        value = stats.overall.metric(t.metric)
        if value is not None and value > t.limit:
            exceeded.add(t.metric)
    assert {b for b in obs.breaches if not b.startswith("label=")} == exceeded
    zone = Zone.BREACH if obs.breaches else Zone.NEAR if obs.near else Zone.SAFE
    assert obs.zone is zone
    assert obs.pressure is not None and obs.pressure >= 0.0  # NaN fails this too


def _build(mapping: dict[str, Any]) -> None:
    _usable(SloSpec.from_mapping(mapping))


@budget
@given(MAPPING, st.lists(RULE, max_size=3) | VALUE)
def test_from_mapping_builds_or_raises_slo_error(mapping: dict[str, Any], rules: Any) -> None:
    if "label" in mapping or rules:
        mapping = {**mapping, "label": rules}
    ours_or_ok(lambda: _build(mapping))


@pytest.mark.parametrize("seed", seeds("slo_toml"), ids=seed_ids("slo_toml"))
def test_toml_corpus_loads(seed: bytes, tmp_path: Path) -> None:
    path = tmp_path / "slo.toml"
    path.write_bytes(seed)
    ours_or_ok(lambda: _usable(SloSpec.load(path)))


@budget
@given(st.data())
def test_load_toml_builds_or_raises_ours(data: st.DataObject) -> None:
    raw = data.draw(mutated(seeds("slo_toml"), TOML_TOKENS))
    options = data.draw(st.dictionaries(st.sampled_from(KEYS[:12]), TEXT, max_size=2))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "slo.toml"
        path.write_bytes(raw)
        ours_or_ok(lambda: _usable(SloSpec.load(path, **options)))
