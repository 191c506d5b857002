"""The streaming JTL digest: exact per-label figures whatever the chunk size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from loadguard.errors import ReportError
from loadguard.jtl.columns import JtlFormat
from loadguard.report.jtl_digest import JtlDigest, digest_jtl
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


def _same_figures(a: JtlDigest, b: JtlDigest) -> None:
    assert a.overall.count == b.overall.count and a.overall.errors == b.overall.errors
    assert sorted(a.labels) == sorted(b.labels)
    for label, d in a.labels.items():
        e = b.labels[label]
        assert (d.count, d.errors, d.max_ms) == (e.count, e.errors, e.max_ms)
        for q in (0.5, 0.95, 0.99):
            assert d.hist.quantile(q) == e.hist.quantile(q)
    assert a.per_second.to_dict() == b.per_second.to_dict()
    assert (a.first_start_ms, a.last_end_ms) == (b.first_start_ms, b.last_end_ms)


def _xml(jtl: Path, out: Path) -> Path:
    df = pd.read_csv(jtl)
    with out.open("w") as fh:
        fh.write('<?xml version="1.0" encoding="UTF-8"?>\n<testResults version="1.2">\n')
        for r in df.itertuples():
            lb = str(r.label).replace("&", "&amp;").replace('"', "&quot;")
            s = str(r.success).lower()
            fh.write(
                f'<httpSample t="{r.elapsed}" it="0" lt="1" ct="0" ts="{r.timeStamp}" s="{s}" '
                f'lb="{lb}" rc="200" rm="OK" tn="TG 1-{r.Index}" dt="text" by="1" sby="1" '
                'ng="1" na="1"/>\n'
            )
        fh.write("</testResults>\n")
    return out


def test_xml_jtl_gives_the_same_figures_as_its_csv(jtl: Path, tmp_path: Path) -> None:
    digest = digest_jtl(_xml(jtl, tmp_path / "r.xml"))
    assert digest.source == "xml" and digest.rows == 5000 and digest.malformed_rows == 0
    _same_figures(digest, digest_jtl(jtl))


def test_headerless_csv_with_default_columns_needs_no_format(jtl: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare.jtl"
    bare.write_text(jtl.read_text().split("\n", 1)[1])
    digest = digest_jtl(bare)
    assert digest.source == "csv" and digest.rows == 5000
    _same_figures(digest, digest_jtl(jtl))


def test_headerless_csv_with_other_columns_is_read_with_its_format(tmp_path: Path) -> None:
    rows = "".join(f"{T0 + i};{10 + i};/a;{'true' if i % 4 else 'false'}\n" for i in range(8))
    path = tmp_path / "semi.jtl"
    path.write_text(rows)
    with pytest.raises(ReportError, match="8 malformed rows; give the JTL's format"):
        digest_jtl(path)
    fmt = JtlFormat(
        columns=("timeStamp", "elapsed", "label", "success"), delimiter=";", columns_given=True
    )
    digest = digest_jtl(path, fmt=fmt)
    assert (digest.overall.count, digest.overall.errors, digest.overall.max_ms) == (8, 2, 17)


def test_follower_path_counts_each_request_once(tmp_path: Path) -> None:
    """Sub-results (``<parent>-<n>`` nested in XML) are left out, as the sidecar did."""
    path = tmp_path / "nested.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<testResults version="1.2">\n'
        f'<httpSample t="30" ts="{T0}" s="true" lb="/a" rm="OK" tn="T 1-1" na="1">\n'
        f'  <httpSample t="10" ts="{T0}" s="true" lb="/a-0" rm="OK" tn="T 1-1" na="1"/>\n'
        f'  <httpSample t="20" ts="{T0 + 10}" s="true" lb="/a-1" rm="OK" tn="T 1-1" na="1"/>\n'
        "</httpSample>\n</testResults>\n"
    )
    digest = digest_jtl(path)
    assert sorted(digest.labels) == ["/a"] and digest.overall.count == 1
    assert digest.skipped_rows == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1796000000000,10,/a,200,OK,t,text,true\n", "1 malformed rows; give the JTL's format"),
        ("timeStamp,elapsed,label\n1,2,a\n", "lacks success"),
        (JTL_HEADER, "no usable sample"),
        ("", "no usable sample"),
        ('<testResults>\n<httpSample t="x"/>\n', "no usable sample"),
    ],
)
def test_unusable_jtl_is_a_report_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.jtl"
    path.write_text(text)
    with pytest.raises(ReportError, match=message):
        digest_jtl(path)
