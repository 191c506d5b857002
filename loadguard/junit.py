"""JUnit XML for pipelines: one test case per SLO, so CI servers show the verdict."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from loadguard.atomic_file import write_file
from loadguard.errors import DecisionLogError
from loadguard.summary import Summary

_UNITS = {"p95_ms": "ms", "p99_ms": "ms", "mean_ms": "ms", "error_rate": ""}


def _threshold(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 100:g}%" if metric == "error_rate" else f"{value:g} {_UNITS[metric]}"


def junit_xml(summary: Summary, suite: str = "loadguard") -> bytes:
    """Render the summary as a JUnit testsuite (pure)."""
    cases = sorted(summary.slo_verdicts.items())
    failures = sum(1 for _, v in cases if v == "FAIL")
    skipped = sum(1 for _, v in cases if v == "NO_DATA") + (summary.verdict == "NO_DATA")
    root = etree.Element(
        "testsuite",
        name=suite,
        tests=str(len(cases) + 1),
        failures=str(failures + (1 if summary.verdict == "FAIL" else 0)),
        skipped=str(skipped),
        time=f"{summary.duration_s:.3f}",
    )
    for metric, verdict in cases:
        case = etree.SubElement(
            root,
            "testcase",
            classname=suite,
            name=f"{metric} <= {_threshold(metric, summary.slo.get(metric))}",
        )
        share = summary.violation_share.get(metric)
        text = (
            f"final windows breached {metric}; violation share {share:.1%} "
            f"at final rate {summary.final_rate} req/s"
            if share is not None
            else f"final windows breached {metric}"
        )
        if verdict == "FAIL":
            etree.SubElement(case, "failure", message=f"{metric} SLO failed").text = text
        elif verdict == "NO_DATA":
            etree.SubElement(case, "skipped", message="no evaluated window")
    overall = etree.SubElement(root, "testcase", classname=suite, name="SLO verdict")
    if summary.verdict == "FAIL":
        etree.SubElement(
            overall, "failure", message="SLO verdict failed"
        ).text = f"max SLO-compliant rate {summary.max_compliant_rate} req/s"
    elif summary.verdict == "NO_DATA":
        etree.SubElement(overall, "skipped", message="no evaluated window")
    props = etree.SubElement(root, "properties")
    for key in ("max_compliant_rate", "final_rate", "violation_share_p95", "error_rate", "ok_rps"):
        etree.SubElement(props, "property", name=key, value=str(getattr(summary, key)))
    suites = etree.Element("testsuites")
    suites.append(root)
    return bytes(etree.tostring(suites, xml_declaration=True, encoding="UTF-8", pretty_print=True))


def write_junit(path: Path, summary: Summary) -> None:
    data = junit_xml(summary)
    try:
        write_file(path, data)
    except OSError as exc:
        raise DecisionLogError(f"writing {path} failed: {exc.strerror or exc}") from exc
