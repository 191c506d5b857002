"""The streaming JTL digest: exact per-label figures whatever the chunk size."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from loadguard.cli import cli
from loadguard.errors import ReportError
from loadguard.jtl.columns import DEFAULT_COLUMNS, JtlFormat
from loadguard.jtl.follow import JtlFollower
from loadguard.jtl.selection import RowSelector
from loadguard.report.jtl_digest import JtlDigest, LabelDigest, digest_jtl
from tests.unit.test_report_render import JTL_HEADER, make_run, write_jtl

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


@pytest.mark.parametrize("chunk_bytes", [700, 100_000, 8 << 20])
def test_per_label_percentiles_equal_numpy_over_all_rows(jtl: Path, chunk_bytes: int) -> None:
    df = pd.read_csv(jtl)
    digest = digest_jtl(jtl, chunk_bytes=chunk_bytes)
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
    digest = digest_jtl(jtl, chunk_bytes=33_300)
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
    digest = digest_jtl(write_jtl(tmp_path / "many.jtl", rows), chunk_bytes=200, max_labels=3)
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
    with pytest.raises(ReportError, match=r"\(8 malformed rows\)") as unusable:
        digest_jtl(path)
    assert unusable.value.setting == "jtl_format"  # the CLI adds: give the JTL's format
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
        ("1796000000000,10,/a,200,OK,t,text,true\n", r"\(1 malformed rows\)"),
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


# -- each request once: Transaction Controllers and sub-results ---------------------------

TX_MESSAGE = "Number of samples in transaction : {n}, number of failing samples : {f}"


def _row(ts: int, elapsed: int, label: str, thread: str, ok: bool = True, **kw: str) -> list[str]:
    """One record of JMeter 5.6.3's default 17 CSV columns (``DEFAULT_COLUMNS``)."""
    code, msg = ("200", "OK") if ok else ("500", "Internal Server Error")
    url = kw.get("url", "http://127.0.0.1:18777/ok")
    return [
        str(ts), str(elapsed), label, kw.get("code", code), kw.get("msg", msg), thread,
        kw.get("dt", "text"), "true" if ok else "false", "", "140", "115", "3", "3", url,
        str(elapsed), "0", "1",
    ]  # fmt: skip


def _iteration(rng: np.random.Generator, ts: int, thread: str) -> tuple[list[list[str]], int]:
    """One iteration of a plan as JMeter 5.6.3 writes it: a "generate parent sample"
    Transaction Controller (its row first) holding another one, a redirect whose two
    sub-results follow it, then a plain Transaction Controller whose row follows its
    children. Returns the rows and the next start time."""
    e = [int(v) for v in rng.lognormal(3.5, 0.7, 6)]
    a_ok, pay_ok = bool(rng.random() > 0.15), bool(rng.random() > 0.1)
    r0, r1 = max(e[1] // 3, 1), max(e[1] - e[1] // 3 - 1, 1)
    inner = e[0] + e[1]
    outer = inner + e[2]
    fails = 0 if a_ok else 1
    tx_msg = TX_MESSAGE.format(n=2, f=fails)
    tx = {"dt": "", "url": "null"}
    rows = [
        _row(ts, outer, "outer", thread, a_ok, msg=tx_msg, **tx),
        _row(ts, inner, "inner", thread, a_ok, msg=tx_msg, **tx),
        _row(ts, e[0], "leaf a", thread, a_ok),
        _row(ts + e[0], e[1], "leaf redirect", thread),
        _row(ts + e[0], r0, "leaf redirect-0", thread, code="302", msg="Found", dt=""),
        _row(ts + e[0] + r0 + 1, r1, "leaf redirect-1", thread),
        _row(ts + inner, e[2], 'leaf "bin", b', thread),
        _row(ts + outer, e[3], "pay", thread, pay_ok),
        _row(ts + outer + e[3], e[4], "confirm", thread),
    ]
    plain_tx = TX_MESSAGE.format(n=2, f=0 if pay_ok else 1)
    rows.append(_row(ts + outer, e[3] + e[4], "checkout", thread, pay_ok, msg=plain_tx, **tx))
    return rows, ts + outer + e[3] + e[4] + e[5]


def _nested_jtl(path: Path, delimiter: str = ",", iterations: int = 150, threads: int = 3) -> Path:
    """A JTL of ``threads`` threads whose rows interleave (each thread's own order kept);
    at the end, the test stops mid-iteration: a cut-short "generate parent sample" row
    with an empty message, then its first sampler."""
    rng = np.random.default_rng(17)
    queues: list[list[list[str]]] = []
    for t in range(threads):
        thread, ts, rows = f"TG 1-{t + 1}", T0 + 13 * t, []
        for _ in range(iterations):
            block, ts = _iteration(rng, ts, thread)
            rows += block
        queues.append(rows)
    out: list[list[str]] = []
    while any(queues):
        q = queues[int(rng.integers(0, len(queues)))]
        take = int(rng.integers(1, 4))
        out += q[:take]
        del q[:take]
    last = T0 + 10_000_000
    out.append(_row(last, 20, "outer", "TG 1-1", msg="", dt="", url="null"))
    out.append(_row(last, 20, "leaf a", "TG 1-1"))
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        writer.writerow(DEFAULT_COLUMNS)
        writer.writerows(out)
    return path


def _reference(path: Path, transactions: bool) -> tuple[pd.DataFrame, set[str], int]:
    """What ``loadguard metrics`` reads from ``path``: its rows, transaction labels and
    the number of rows its selection left out."""
    with JtlFollower(path, transactions=transactions) as follower:
        parts = [
            pd.DataFrame(
                {"start": b.start_ms, "elapsed": b.elapsed_ms, "ok": b.success, "label": b.label}
            )
            for b in follower.batches()
        ]
        status = follower.status()
    skipped = status.skipped_transactions + status.skipped_subresults
    return pd.concat(parts, ignore_index=True), set(status.transaction_labels), skipped


def _assert_figures(d: LabelDigest, group: pd.DataFrame, what: str) -> None:
    assert (d.count, d.errors) == (len(group), int((~group["ok"]).sum())), what
    assert d.max_ms == group["elapsed"].max(), what
    for q in (0.5, 0.95, 0.99):
        assert d.hist.quantile(q) == pytest.approx(np.quantile(group["elapsed"], q)), what


@pytest.mark.parametrize("transactions", [False, True])
@pytest.mark.parametrize(("delimiter", "chunk_bytes"), [(",", 700), (",", 8 << 20), ("\t", 0)])
def test_csv_counts_each_request_once_as_the_metrics_reader_does(
    tmp_path: Path, transactions: bool, delimiter: str, chunk_bytes: int
) -> None:
    path = _nested_jtl(tmp_path / "nested.jtl", delimiter, iterations=60)
    digest = digest_jtl(path, chunk_bytes or 8 << 20, transactions=transactions)
    ref, tx_labels, skipped = _reference(path, transactions)
    assert tx_labels == {"outer", "inner", "checkout"}
    assert digest.malformed_rows == 0
    assert digest.skipped_rows == skipped == 3 * 60 * 10 + 2 - len(ref)
    leaves = {"leaf a", "leaf redirect", 'leaf "bin", b', "pay", "confirm"}
    assert set(digest.labels) == (leaves | tx_labels if transactions else leaves)
    for label, group in ref.groupby("label"):
        _assert_figures(digest.labels[str(label)], group, str(label))
    overall = ref[~ref["label"].isin(tx_labels)]  # transactions: out of the overall figures
    _assert_figures(digest.overall, overall, "overall")
    sec = (overall["start"] + overall["elapsed"]) // 1000
    assert digest.per_second["count"].to_dict() == sec.value_counts().sort_index().to_dict()


@pytest.mark.parametrize("transactions", [False, True])
def test_report_figures_equal_loadguard_metrics_over_the_whole_run(
    tmp_path: Path, transactions: bool
) -> None:
    path = _nested_jtl(tmp_path / "nested.jtl", iterations=40)
    flag = ["--transactions"] if transactions else []
    res = CliRunner().invoke(
        cli, ["metrics", str(path), "--json", "--window", "24h", "--step", "24h", *flag]
    )
    assert res.exit_code == 0, res.output
    whole = json.loads(res.stdout.splitlines()[-1])
    digest = digest_jtl(path, transactions=transactions)
    pairs = [(whole["overall"], digest.overall)]
    assert set(whole["labels"]) == set(digest.labels)
    pairs += [(stats, digest.labels[label]) for label, stats in whole["labels"].items()]
    for stats, d in pairs:
        assert stats["count"] == d.count
        assert stats["error_rate"] == pytest.approx(d.error_rate)
        assert stats["max_ms"] == d.max_ms
        for q in (50, 95, 99):
            assert stats[f"p{q}_ms"] == pytest.approx(d.hist.quantile(q / 100))


def test_plain_csv_never_goes_through_the_row_selection(
    jtl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: RowSelector, rows: object) -> None:
        raise AssertionError("a plain JTL went through RowSelector.select")

    monkeypatch.setattr(RowSelector, "select", refuse)
    digest = digest_jtl(jtl, chunk_bytes=100_000)
    assert digest.overall.count == 5000 and digest.skipped_rows == 0


def test_a_label_ending_in_a_number_is_a_request_unless_it_follows_its_parent(
    tmp_path: Path,
) -> None:
    rows = [
        _row(T0, 10, "/item", "TG 1-1"),
        _row(T0 + 1, 11, "/item-1", "TG 1-2"),  # another thread's row: a request
        _row(T0 + 2, 12, "/page", "TG 1-1"),
        _row(T0 + 3, 13, "/page-0", "TG 1-1"),  # right after /page on its thread
    ]
    path = tmp_path / "r.jtl"
    with path.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([DEFAULT_COLUMNS, *rows])
    data = path.read_bytes()
    chunk = data.rindex(b"\n", 0, data.index(b"/page-0")) + 1
    digest = digest_jtl(path, chunk_bytes=chunk)  # /page-0 in the chunk after /page
    assert sorted(digest.labels) == ["/item", "/item-1", "/page"]
    assert digest.skipped_rows == 1


def test_cli_report_leaves_transactions_out_unless_asked(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", ticks=6)
    _nested_jtl(run / "results.jtl", iterations=20)
    left_out = 3 * 20 * 5 + 1  # 3 threads x 20 iterations x (3 transactions, 2 sub-results)
    plain = CliRunner().invoke(cli, ["report", str(run), "--html", str(tmp_path / "plain.html")])
    assert plain.exit_code == 0, plain.output
    html = (tmp_path / "plain.html").read_text()
    assert f"{left_out:,} transaction/sub-result rows left out" in html
    assert ">leaf a<" in html and ">checkout<" not in html and ">leaf redirect-0<" not in html
    args = ["report", str(run), "--transactions", "--html", str(tmp_path / "tx.html")]
    with_tx = CliRunner().invoke(cli, args)
    assert with_tx.exit_code == 0, with_tx.output
    html = (tmp_path / "tx.html").read_text()
    assert f"{3 * 20 * 2:,} transaction/sub-result rows left out" in html
    assert ">checkout<" in html and ">outer<" in html and ">leaf redirect-0<" not in html


def test_a_quoted_label_with_a_newline_split_across_chunks_is_one_sample(tmp_path: Path) -> None:
    rows = [
        _row(T0 + i, 10 + i, "/a" if i % 2 else 'say "hi",\nthere', "TG 1-1") for i in range(40)
    ]
    path = tmp_path / "q.jtl"
    with path.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([DEFAULT_COLUMNS, *rows])
    digest = digest_jtl(path, chunk_bytes=64)  # every record is cut by a chunk boundary
    assert (digest.rows, digest.malformed_rows) == (40, 0)
    assert {k: d.count for k, d in digest.labels.items()} == {"/a": 20, 'say "hi",\nthere': 20}
