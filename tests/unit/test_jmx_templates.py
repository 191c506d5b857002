"""jmx_templates/: generated from the package, parseable, and documented."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from loadguard.actuator.elastic_timer import DEFAULT_INITIAL_RATE_RPS
from loadguard.jmx import TEMPLATE_FILES, has_elastic_timer, render_templates, thread_groups
from loadguard.jmx.elastic_xml import timer_block
from loadguard.jmx.groovy_timer import GROOVY_SOURCE

TEMPLATES = Path(__file__).parents[2] / "jmx_templates"


@pytest.mark.parametrize("name", TEMPLATE_FILES)
def test_committed_template_equals_generated(name: str) -> None:
    # Regenerate with: .venv/bin/python -m loadguard.jmx.write_templates
    assert (TEMPLATES / name).read_text(encoding="utf-8") == render_templates()[name]


@pytest.mark.parametrize("name", TEMPLATE_FILES)
def test_template_is_a_jmx_with_the_elastic_timer(name: str) -> None:
    data = (TEMPLATES / name).read_bytes()
    root = etree.fromstring(data)
    assert root.tag == "jmeterTestPlan"
    assert has_elastic_timer(data)
    (script,) = root.iterfind(".//JSR223Timer/stringProp[@name='script']")
    assert script.text == GROOVY_SOURCE


def test_elastic_plan_is_parameterised_by_properties() -> None:
    text = (TEMPLATES / "elastic_plan.jmx").read_text()
    for prop in ("target.host", "target.port", "target.path", "threads", "duration"):
        assert f"${{__P({prop}," in text
    (group,) = thread_groups(text.encode())
    assert group.threads == 100


def test_fragment_holds_exactly_the_lines_inject_adds() -> None:
    text = (TEMPLATES / "elastic_timer.jmx").read_text()
    assert timer_block("    ", DEFAULT_INITIAL_RATE_RPS) in text
