"""``loadguard inject``: add the Elastic Timer to a plan's thread groups (pure: bytes in,
bytes out).

lxml parses the plan to decide (which thread groups, their thread counts, competing
timers); the output is the *original text* with the timer lines spliced in before the
first child of each chosen thread group's ``hashTree`` (``loadguard.jmx.scan``), so a
diff of input and output holds only added lines.

Thread-count check (Little's law): a thread group paced at ``R`` req/s whose samples take
``W`` seconds keeps ``R * W`` threads busy on average; threads that are busy cannot take a
slot, so the plan needs

    N >= ceil(1.2 * R_max * W)

where ``W`` is the SLO latency (p95, conservative) and 20 % extra threads stay queued at
the timer, ready for a rise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lxml import etree

from loadguard.actuator.elastic_timer import DEFAULT_INITIAL_RATE_RPS, threads_needed
from loadguard.errors import JmxError, UsageError
from loadguard.jmx.elastic_xml import MARKER, initial_tpm, timer_block, timer_lines
from loadguard.jmx.scan import line_indent, start_tags

#: Thread groups left alone unless named with ``--thread-group``.
SETUP_TEARDOWN = frozenset({"SetupThreadGroup", "PostThreadGroup"})
#: Timers that pace throughput themselves and would fight the Elastic Timer.
THROUGHPUT_TIMERS = {
    "ConstantThroughputTimer": "Constant Throughput Timer",
    "PreciseThroughputTimer": "Precise Throughput Timer",
    "kg.apc.jmeter.timers.VariableThroughputTimer": "Throughput Shaping Timer",
}
#: Where each kind of thread group keeps its thread count.
_THREAD_PROPS = ("ThreadGroup.num_threads", "TargetLevel")
_P_DEFAULT = re.compile(r"^\$\{__(?:P|property)\(\s*[^,()]+,\s*(?:,\s*)?(\d+)\s*\)\}$")


@dataclass(frozen=True)
class ThreadGroupInfo:
    name: str
    kind: str  # the element's class, e.g. ThreadGroup, ConcurrencyThreadGroup
    threads: int | None  # None: an expression without a readable default
    enabled: bool
    has_elastic_timer: bool


@dataclass(frozen=True)
class InjectResult:
    xml: bytes
    injected: tuple[str, ...]  # thread groups given an Elastic Timer
    skipped: tuple[str, ...]  # chosen but left alone (already paced, empty, disabled)
    warnings: tuple[str, ...]
    threads: int | None  # total threads of the injected groups (None: unknown)
    threads_needed: int | None  # Little's law need at --max-rate (None: not checked)


@dataclass(frozen=True)
class _Group:
    element: etree._Element
    tree: etree._Element  # its hashTree
    info: ThreadGroupInfo


def _kind(element: etree._Element) -> str:
    tag = str(element.tag)
    return tag.rsplit(".", 1)[-1]


def _is_thread_group(element: etree._Element) -> bool:
    return isinstance(element.tag, str) and _kind(element).endswith("ThreadGroup")


def _enabled(element: etree._Element) -> bool:
    return element.get("enabled", "true") != "false"


def _threads(element: etree._Element) -> int | None:
    for child in element:
        if child.get("name") in _THREAD_PROPS:
            text = (child.text or "").strip()
            if text.isdigit():
                return int(text)
            match = _P_DEFAULT.match(text)
            return int(match.group(1)) if match else None
    return None


def _is_elastic_timer(element: etree._Element) -> bool:
    if element.tag != "JSR223Timer":
        return False
    return any(child.get("name") == "script" and MARKER in (child.text or "") for child in element)


def _parse(xml: bytes) -> etree._Element:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_blank_text=False)
    try:
        root = etree.fromstring(xml, parser=parser)
    except etree.XMLSyntaxError as exc:
        raise JmxError(f"not well-formed XML: {exc}") from None
    if root.tag != "jmeterTestPlan":
        raise JmxError(f"not a JMeter test plan: the root element is <{root.tag}>")
    return root


def _groups(root: etree._Element) -> list[_Group]:
    groups = []
    for element in root.iter():
        if not _is_thread_group(element) or element.getparent() is None:
            continue
        tree = element.getnext()
        while tree is not None and not isinstance(tree.tag, str):
            tree = tree.getnext()
        if tree is None or tree.tag != "hashTree":
            raise JmxError(f"thread group {element.get('testname')!r} has no hashTree")
        info = ThreadGroupInfo(
            name=element.get("testname", ""),
            kind=_kind(element),
            threads=_threads(element),
            enabled=_enabled(element),
            has_elastic_timer=any(_is_elastic_timer(c) for c in tree if _enabled(c)),
        )
        groups.append(_Group(element, tree, info))
    return groups


def thread_groups(xml: bytes) -> list[ThreadGroupInfo]:
    """Every thread group of the plan, in document order."""
    return [g.info for g in _groups(_parse(xml))]


def has_elastic_timer(xml: bytes) -> bool:
    """True when some enabled thread group (or the test plan) already has an Elastic Timer."""
    root = _parse(xml)
    return any(_is_elastic_timer(e) and _enabled(e) for e in root.iter("JSR223Timer"))


def _competing_timers(root: etree._Element, group: _Group) -> list[str]:
    """Enabled throughput timers that pace this group: in its subtree or above it."""
    found = []
    scopes = [group.tree]
    # Timers directly in an ancestor hashTree (test plan level) apply to every group.
    parent = group.element.getparent()
    while parent is not None:
        scopes.append(parent)
        parent = parent.getparent()
    for index, scope in enumerate(scopes):
        elements = scope.iter() if index == 0 else iter(scope)
        for element in elements:
            if not isinstance(element.tag, str) or not _enabled(element):
                continue
            label = THROUGHPUT_TIMERS.get(str(element.tag))
            if label is not None:
                found.append(f"{label} {element.get('testname', '')!r}")
    return found


def _select(groups: list[_Group], names: Sequence[str]) -> list[_Group]:
    if not names:
        return [g for g in groups if g.info.kind not in SETUP_TEARDOWN]
    by_name = {g.info.name: g for g in groups}
    missing = [n for n in names if n not in by_name]
    if missing:
        have = ", ".join(repr(g.info.name) for g in groups)
        raise JmxError(f"no thread group named {missing[0]!r}; the plan has: {have}")
    return [by_name[n] for n in dict.fromkeys(names)]


def inject_elastic_timer(
    xml: bytes,
    *,
    thread_groups: Sequence[str] = (),
    initial_rate_rps: float = DEFAULT_INITIAL_RATE_RPS,
    max_rate_rps: float | None = None,
    latency_ms: float | None = None,
) -> InjectResult:
    """Add the Elastic Timer to the chosen thread groups (default: every enabled one but
    setUp/tearDown). Raises ``JmxError`` for malformed XML, a non-JMX file, no thread
    group or an unknown ``thread_groups`` name; ``UsageError`` for a bad rate."""
    initial_tpm(initial_rate_rps)  # validates the rate before anything else
    if max_rate_rps is not None and not 0 < max_rate_rps < math.inf:
        raise UsageError(f"bad max rate {max_rate_rps!r}: must be > 0 and finite")
    if latency_ms is not None and not 0 < latency_ms < math.inf:
        raise UsageError(f"bad latency {latency_ms!r}: must be > 0 and finite")
    root = _parse(xml)
    groups = _groups(root)
    if not groups:
        raise JmxError("the plan has no thread group")
    chosen = _select(groups, thread_groups)

    encoding = root.getroottree().docinfo.encoding or "UTF-8"
    text = xml.decode(encoding)
    elements = [e for e in root.iter() if isinstance(e.tag, str)]
    tags = start_tags(text)
    if [t.name for t in tags] != [str(e.tag) for e in elements]:
        raise JmxError("cannot map the plan's elements to its text (unusual XML layout)")
    offset_of = {id(e): t for e, t in zip(elements, tags, strict=True)}

    warnings: list[str] = []
    injected: list[str] = []
    skipped: list[str] = []
    splices: list[tuple[int, str]] = []
    for group in chosen:
        name = group.info.name
        if not group.info.enabled:
            skipped.append(name)
            warnings.append(f"thread group {name!r} is disabled: left alone")
            continue
        if group.info.has_elastic_timer:
            skipped.append(name)
            warnings.append(f"thread group {name!r} already has an Elastic Timer: left alone")
            continue
        children = [c for c in group.tree if isinstance(c.tag, str)]
        if not children:
            skipped.append(name)
            warnings.append(f"thread group {name!r} has no samplers: left alone")
            continue
        for timer in _competing_timers(root, group):
            warnings.append(
                f"thread group {name!r}: {timer} also paces it and will fight the Elastic "
                "Timer; disable it"
            )
        first = offset_of[id(children[0])]
        indent = line_indent(text, first.start)
        if indent is not None:
            splices.append((first.start - len(indent), timer_block(indent, initial_rate_rps)))
        else:
            splices.append((first.start, "".join(timer_lines(initial_rate_rps))))
        injected.append(name)

    if not injected:
        raise JmxError("no thread group to inject into: " + "; ".join(warnings))
    infos = [g.info for g in chosen if g.info.name in injected]
    total: int | None = None
    if all(i.threads is not None for i in infos):
        total = sum(i.threads for i in infos if i.threads is not None)
    needed: int | None = None
    if max_rate_rps is not None and latency_ms is None:
        warnings.append(
            f"thread count not checked against {max_rate_rps:g} req/s: no latency (p95) given"
        )
    if max_rate_rps is not None and latency_ms is not None:
        needed = threads_needed(max_rate_rps, latency_ms)
        if total is None:
            warnings.append(
                f"cannot read the thread count of every group; {max_rate_rps:g} req/s at "
                f"{latency_ms:g} ms needs {needed} threads in all (Little's law + 20%)"
            )
        elif total < needed:
            warnings.append(
                f"{total} threads cannot reach {max_rate_rps:g} req/s at {latency_ms:g} ms: "
                f"need at least {needed} (Little's law: threads >= rate x latency, + 20% "
                "idle at the timer)"
            )
    newline = "\r\n" if "\r\n" in text else "\n"
    for offset, block in sorted(splices, reverse=True):
        text = text[:offset] + block.replace("\n", newline) + text[offset:]
    return InjectResult(
        xml=text.encode(encoding),
        injected=tuple(injected),
        skipped=tuple(skipped),
        warnings=tuple(warnings),
        threads=total,
        threads_needed=needed,
    )
