"""The streaming JTL digest: exact per-label figures whatever the chunk size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from loadguard.errors import ReportError
from loadguard.report.jtl_digest import digest_jtl
from tests.unit.test_report_render import JTL_HEADER, write_jtl

T0 = 1_796_000_000_000


@pytest.fixture(scope="module")
def jtl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(11)
    n = 5000
    rows = [
        (
            T0 + int(rng.integers(0, 60_000)),
            int(rng.lognormal(4, 1)) if i % 500 else 70_123,  # a few beyond 65.5 s
            ("/home", "/cart", "/x,y")[i % 3],
            bool(rng.random() > 0.05),
        )
        for i in range(n)
    ]
    return write_jtl(tmp_path_factory.mktemp("jtl") / "r.jtl", rows)


@pytest.mark.parametrize("chunk_rows", [7, 1000, 1_000_000])
def test_per_label_percentiles_equal_numpy_over_all_rows(jtl: Path, chunk_rows: int) -> None:
    df = pd.read_csv(jtl)
    digest = digest_jtl(jtl, chunk_rows=chunk_rows)
    assert digest.rows == len(df) and digest.malformed_rows == 0
    for label, group in df.groupby("label"):
        d = digest.labels[str(label)]
        assert d.count == len(group)
        assert d.errors == int((~group["success"]).sum())
        for q in (0.95, 0.99):
            assert d.hist.quantile(q) == pytest.approx(float(np.quantile(group["elapsed"], q)))
        assert d.max_ms == group["elapsed"].max()
    assert digest.overall.hist.quantile(0.99) == pytest.approx(np.quantile(df["elapsed"], 0.99))


def test_per_second_counts_completions(jtl: Path) -> None:
    df = pd.read_csv(jtl)
    digest = digest_jtl(jtl, chunk_rows=333)
    sec = (df["timeStamp"] + df["elapsed"]) // 1000
    expected = sec.value_counts().sort_index()
    assert digest.per_second["count"].to_dict() == expected.to_dict()
    ok = df[df["success"]].groupby(sec[df["success"]]).size()
    assert digest.per_second["ok"][ok.index].tolist() == ok.tolist()
    assert digest.first_start_ms == df["timeStamp"].min()
    assert digest.last_end_ms == sec.max() * 0 + (df["timeStamp"] + df["elapsed"]).max()


def test_malformed_rows_are_counted_and_left_out(tmp_path: Path) -> None:
    path = tmp_path / "m.jtl"
    path.write_text(
        JTL_HEADER
        + f"{T0},10,/a,200,OK,t,text,true,,1,1,1,1,u,1,0,0\n"
        + "garbage,10,/a,200,OK,t,text,true,,1,1,1,1,u,1,0,0\n"
        + f"{T0},n/a,/a,200,OK,t,text,true,,1,1,1,1,u,1,0,0\n"
        + f'{T0},30,/a,500,"line\nbreak",t,text,false,,1,1,1,1,u,1,0,0\n'
        + f"{T0},10,/a,200,O,K,t,text,true,,1,1,1,1,u,1,0,0\n"
        + f"{T0},10,/a,200,OK,t,te\n"
        + f"{T0},40,/a,200,OK,t,text,TRUE,,1,1,1,1,u,1,0,0\n"
    )
    digest = digest_jtl(path)
    assert (digest.rows, digest.malformed_rows, digest.overall.count) == (7, 4, 3)
    assert (digest.labels["/a"].count, digest.labels["/a"].errors) == (3, 1)


def test_labels_past_the_cap_are_folded_into_one_exact_group(tmp_path: Path) -> None:
    rows = [(T0 + i, 10 * (i + 1), f"/item/{i}", True) for i in range(6)]
    digest = digest_jtl(write_jtl(tmp_path / "many.jtl", rows), chunk_rows=2, max_labels=3)
    assert sorted(digest.labels) == ["(other labels)", "/item/0", "/item/1", "/item/2"]
    other = digest.labels["(other labels)"]
    assert other.count == 3 and other.hist.quantile(0.5) == 50.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1796000000000,10,/a,200,OK,t,text,true\n", "not a CSV JTL with a header"),
        ("timeStamp,elapsed,label\n1,2,a\n", "lacks success"),
        (JTL_HEADER, "no usable sample"),
        ("", "not a CSV JTL"),
    ],
)
def test_unusable_jtl_is_a_report_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.jtl"
    path.write_text(text)
    with pytest.raises(ReportError, match=message):
        digest_jtl(path)
