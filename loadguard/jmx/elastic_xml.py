"""JMX text of the Elastic Timer and of the minimal elastic plan (``jmx_templates/``).

The text is built here, not copied from a file, so ``loadguard inject`` works from an
installed package; ``python -m loadguard.jmx.write_templates`` writes the
template files and a golden test keeps the committed ones equal to this output.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from loadguard.actuator.bsh import check_property_name, format_number
from loadguard.actuator.elastic_timer import (
    DEFAULT_INITIAL_RATE_RPS,
    MIN_RATE_RPS,
    RATE_PROPERTY,
    TPM_PER_RPS,
)
from loadguard.errors import UsageError
from loadguard.jmx.groovy_timer import GROOVY_SOURCE

#: The timer's name in plans; with ``MARKER`` in its script it identifies an Elastic Timer.
TIMER_NAME = "LoadGuard Elastic Timer"
MARKER = "LoadGuard Elastic Timer v"
TEMPLATE_FILES = ("elastic_timer.jmx", "elastic_plan.jmx")


def initial_tpm(initial_rate_rps: float) -> str:
    """The initial rate as the timer's parameter text (samples/min), floor-checked."""
    if not (isinstance(initial_rate_rps, int | float) and initial_rate_rps >= MIN_RATE_RPS):
        raise UsageError(
            f"bad initial rate {initial_rate_rps!r}: must be >= {MIN_RATE_RPS} req/s (never 0)"
        )
    return format_number(float(initial_rate_rps) * TPM_PER_RPS)


def timer_lines(
    initial_rate_rps: float = DEFAULT_INITIAL_RATE_RPS, property_name: str = RATE_PROPERTY
) -> list[str]:
    """The ``<JSR223Timer>`` element and its empty ``<hashTree/>``, one list item per line
    (the script's own lines stay inside the ``script`` line, as JMeter saves them)."""
    prop = check_property_name(property_name)
    return [
        '<JSR223Timer guiclass="TestBeanGUI" testclass="JSR223Timer" '
        f'testname="{TIMER_NAME}" enabled="true">',
        '  <stringProp name="scriptLanguage">groovy</stringProp>',
        f'  <stringProp name="parameters">{prop} {initial_tpm(initial_rate_rps)}</stringProp>',
        '  <stringProp name="filename"></stringProp>',
        '  <stringProp name="cacheKey">true</stringProp>',
        f'  <stringProp name="script">{escape(GROOVY_SOURCE)}</stringProp>',
        "</JSR223Timer>",
        "<hashTree/>",
    ]


def timer_block(indent: str, initial_rate_rps: float, property_name: str = RATE_PROPERTY) -> str:
    """``timer_lines`` indented by ``indent``, each line ending in a newline."""
    return "".join(f"{indent}{line}\n" for line in timer_lines(initial_rate_rps, property_name))


_HEADER = '<?xml version="1.0" encoding="UTF-8"?>\n'
_ROOT = '<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3">\n'


def elastic_timer_fragment() -> str:
    """``jmx_templates/elastic_timer.jmx``: the timer alone, as JMeter's "Save Selection
    As" writes a fragment; merge it under a thread group (GUI: Merge)."""
    return (
        _HEADER + "<!--\n"
        "  LoadGuard Elastic Timer (JSR223 Timer, Groovy). Merge it into each thread group\n"
        "  to pace, or let `loadguard inject PLAN.jmx OUT.jmx` do it.\n"
        f"  Rate: property {RATE_PROPERTY} = the ENGINE's total samples per minute, shared by\n"
        "  every Elastic Timer in the engine. Unset: the second parameter (here 60/min =\n"
        "  1 req/s). Values below 6/min are clamped to 6/min: pacing never stops.\n"
        "  Set it at start with -Jloadguard.tpm=600, at runtime through the BeanShell\n"
        "  server: loadguard push -e 127.0.0.1:9001 -r 10  (9001 = beanshell.server.port+1)\n"
        "  A push takes hold within one 50 ms step: no slot is handed out ahead of time.\n"
        "  Give the group enough threads: threads >= rate x response time (Little's law),\n"
        "  plus ~20% idle ones. See docs/jmeter-integration.md.\n"
        "-->\n"
        + _ROOT
        + "  <hashTree>\n"
        + timer_block("    ", DEFAULT_INITIAL_RATE_RPS)
        + "  </hashTree>\n"
        + "</jmeterTestPlan>\n"
    )


def _p(name: str, default: str) -> str:
    return f"${{__P({name},{default})}}"


def elastic_plan() -> str:
    """``jmx_templates/elastic_plan.jmx``: one thread group, one HTTP GET, the Elastic
    Timer; every knob is a ``-J`` property (see the plan's comment)."""
    sampler = [
        '<HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" '
        'testname="request" enabled="true">',
        '  <elementProp name="HTTPsampler.Arguments" elementType="Arguments">',
        '    <collectionProp name="Arguments.arguments"/>',
        "  </elementProp>",
        f'  <stringProp name="HTTPSampler.protocol">{_p("target.protocol", "http")}</stringProp>',
        f'  <stringProp name="HTTPSampler.domain">{_p("target.host", "127.0.0.1")}</stringProp>',
        f'  <stringProp name="HTTPSampler.port">{_p("target.port", "8080")}</stringProp>',
        f'  <stringProp name="HTTPSampler.path">{_p("target.path", "/")}</stringProp>',
        '  <stringProp name="HTTPSampler.method">GET</stringProp>',
        '  <boolProp name="HTTPSampler.follow_redirects">true</boolProp>',
        '  <boolProp name="HTTPSampler.use_keepalive">true</boolProp>',
        '  <stringProp name="HTTPSampler.connect_timeout">'
        f"{_p('target.connect_timeout', '5000')}</stringProp>",
        '  <stringProp name="HTTPSampler.response_timeout">'
        f"{_p('target.response_timeout', '30000')}</stringProp>",
        "</HTTPSamplerProxy>",
        "<hashTree/>",
    ]
    group = [
        '<ThreadGroup guiclass="ThreadGroupGui" testclass="ThreadGroup" '
        'testname="elastic" enabled="true">',
        f'  <stringProp name="ThreadGroup.num_threads">{_p("threads", "100")}</stringProp>',
        f'  <stringProp name="ThreadGroup.ramp_time">{_p("rampup", "0")}</stringProp>',
        '  <boolProp name="ThreadGroup.scheduler">true</boolProp>',
        f'  <stringProp name="ThreadGroup.duration">{_p("duration", "60")}</stringProp>',
        '  <stringProp name="ThreadGroup.delay">0</stringProp>',
        '  <stringProp name="ThreadGroup.on_sample_error">continue</stringProp>',
        '  <boolProp name="ThreadGroup.same_user_on_next_iteration">true</boolProp>',
        '  <elementProp name="ThreadGroup.main_controller" elementType="LoopController">',
        '    <intProp name="LoopController.loops">-1</intProp>',
        '    <boolProp name="LoopController.continue_forever">false</boolProp>',
        "  </elementProp>",
        "</ThreadGroup>",
    ]
    body = "".join(f"        {line}\n" for line in sampler) + timer_block(
        "        ", DEFAULT_INITIAL_RATE_RPS
    )
    return (
        _HEADER + "<!--\n"
        "  LoadGuard minimal elastic test plan: one thread group, one HTTP GET, paced by the\n"
        "  LoadGuard Elastic Timer (rate property loadguard.tpm, samples/min per engine).\n"
        "  Parameters (-Jname=value):\n"
        "    target.protocol  http        target.host  127.0.0.1    target.port  8080\n"
        "    target.path      /           target.connect_timeout 5000 (ms)\n"
        "    target.response_timeout 30000 (ms)\n"
        "    threads          100  must cover the highest rate: rate x response time + 20%\n"
        "    rampup           0 (s)       duration     60 (s)\n"
        "    loadguard.tpm    60   initial rate, samples/min (60 = 1 req/s)\n"
        "  Example:\n"
        "    jmeter -n -t elastic_plan.jmx -l out.jtl -Jtarget.port=8080 -Jthreads=200 \\\n"
        "      -Jduration=120 -Jbeanshell.server.port=9000 -Jbeanshell.server.file= \\\n"
        "      -Jjmeterengine.force.system.exit=true\n"
        "    loadguard push -e 127.0.0.1:9001 -r 50\n"
        "-->\n"
        + _ROOT
        + "  <hashTree>\n"
        + '    <TestPlan guiclass="TestPlanGui" testclass="TestPlan" '
        'testname="LoadGuard elastic plan" enabled="true">\n'
        + '      <boolProp name="TestPlan.functional_mode">false</boolProp>\n'
        + '      <boolProp name="TestPlan.serialize_threadgroups">false</boolProp>\n'
        + '      <elementProp name="TestPlan.user_defined_variables" elementType="Arguments">\n'
        + '        <collectionProp name="Arguments.arguments"/>\n'
        + "      </elementProp>\n"
        + "    </TestPlan>\n"
        + "    <hashTree>\n"
        + "".join(f"      {line}\n" for line in group)
        + "      <hashTree>\n"
        + body
        + "      </hashTree>\n"
        + "    </hashTree>\n"
        + "  </hashTree>\n"
        + "</jmeterTestPlan>\n"
    )


def render_templates() -> dict[str, str]:
    """File name -> text of every generated template."""
    return {"elastic_timer.jmx": elastic_timer_fragment(), "elastic_plan.jmx": elastic_plan()}
