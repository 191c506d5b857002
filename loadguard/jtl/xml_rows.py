"""XML JTL rows: a byte stream in, ``RawRows`` out (pure core).

JMeter writes ``<testResults version="1.2">`` and then one element per sample,
``<httpSample .../>`` or ``<sample ...>``, starting at column 0; sub-results are nested
(indented) inside their parent, and ``</testResults>`` is written only when the test ends.
Some writers indent the top-level elements too (two spaces, the nested ones deeper): the
first sample element's indentation is taken as the top level's.
Attributes used: ``ts`` (start, ms), ``t`` (elapsed), ``s`` (success), ``lb`` (label),
``rm`` (message), ``tn`` (thread), ``na`` (all threads).

The stream is cut into top-level sample elements (a start tag at the top level's
indentation up to the next one). Complete elements are parsed with lxml, many at a time;
when a group fails to parse, its elements are parsed one by one and each broken one
counts as one bad row, so garbage never stops the reader (an incremental parser, once
broken, would stop for good).

Rows come out in document order, parent first. Each request counts once: a *generated
parent* holds the results of the samplers under it as children, and those are samplers'
own results (rows of their own, at any depth: a parent inside a parent is walked the same
way); the parent itself is marked ``transaction``. Generated parents are

* Transaction Controller results (``generate parent sample``): message ``Number of samples
  in transaction : ...``, or a label once seen on one (a controller cut short at the end
  of the test writes an empty message);
* any other plain ``<sample>`` holding nested samples: a Parallel Controller's
  ``generate parent sample`` result (its children are labelled ``<parent>-<n>``), or a
  script sampler that bundles results. A sampler's own sub-results (redirects, embedded
  resources) sit under an ``<httpSample>``.

Everything nested under a sampler's own result is a sub-result.

JMeter writes characters XML 1.0 forbids when it saves a binary response body
(``response_data=true``): control characters as references such as ``&#x1;``. A group of
elements that fails to parse is scrubbed (such references, raw C0 control bytes and bytes
that are not UTF-8 become U+FFFD, counted in ``illegal_chars``) and parsed again, so those
samples still count. The scrub is linear: a C-speed regex pass for control characters, one
for rare references to high code points, a UTF-8 check.
"""

from __future__ import annotations

import functools
import logging
import re
from datetime import tzinfo

import numpy as np
from lxml import etree

from loadguard.jtl.raw_rows import (
    CUT_SHORT,
    MAX_ELAPSED_MS,
    MAX_TIMESTAMP_MS,
    TRANSACTION_PREFIX,
    BadRowLog,
    RawRows,
)
from loadguard.jtl.timestamps import parse_timestamps

log = logging.getLogger(__name__)

_SAMPLE_TAGS = frozenset(["httpSample", "sample"])
#: A negative elapsed (``t="-123"``): JMeter never set the sample's end (raw_rows.CUT_SHORT).
_CUT_SHORT_T = re.compile(r"-\d+$")
#: The first sample element of a file, whatever its indentation (group 1).
_ANY_START = re.compile(rb"(?m)^([ \t]*)<(?:httpSample|sample)[\s/>]")


@functools.cache
def _top_level(indent: bytes) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """The start and the end tag of a top-level sample element indented by ``indent``."""
    at = re.escape(indent)
    return (
        re.compile(rb"(?m)^" + at + rb"<(?:httpSample|sample)[\s/>]"),
        re.compile(rb"(?m)^" + at + rb"(?:</httpSample>|</sample>)[ \t\r]*$"),
    )


_DOC_END = re.compile(rb"(?m)^</testResults>")
_PROLOG = re.compile(rb"^\s*(?:<\?xml[^>]*\?>\s*)?(?:<\?[^>]*\?>\s*)*(?:<testResults[^>]*>)?\s*$")


# What XML 1.0 forbids, in one C-speed pass: a C0 control byte (TAB, LF, CR are allowed)
# or a reference to one (hex or decimal), the way JMeter writes a binary body.
_C0 = re.compile(
    rb"[\x00-\x08\x0b\x0c\x0e-\x1f]"
    rb"|&#x0*(?:[0-8bcefBCEF]|1[0-9a-fA-F]);"
    rb"|&#0*(?:[0-8]|1[124-9]|2[0-9]|3[01]);"
)
# References to code points from U+1000 (hex) or 10000 (decimal) up: a callback keeps the
# legal ones and replaces surrogates, U+FFFE, U+FFFF and those past U+10FFFF. Rare in JTLs
# (JMeter writes other characters as UTF-8), so the callback seldom runs.
_HIGH = re.compile(rb"&#x0*([0-9a-fA-F]{4,8});|&#0*([0-9]{5,10});")
_REPLACEMENT = "\ufffd".encode()


def _legal(cp: int) -> bool:
    return 0x20 <= cp <= 0xD7FF or 0xE000 <= cp <= 0xFFFD or 0x10000 <= cp <= 0x10FFFF


def scrub(data: bytes) -> tuple[bytes, int]:
    """``data`` with what XML 1.0 forbids replaced by U+FFFD, and how many were replaced:
    C0 control bytes (TAB, LF and CR are allowed), references to characters it forbids
    (``&#x0;``, ``&#27;``, surrogates ...) and bytes that are not UTF-8. Linear time."""
    out, count = _C0.subn(_REPLACEMENT, data)
    high = 0

    def fix(m: re.Match[bytes]) -> bytes:
        nonlocal high
        cp = int(m.group(1), 16) if m.group(1) is not None else int(m.group(2))
        if _legal(cp):
            return m.group(0)
        high += 1
        return _REPLACEMENT

    out = _HIGH.sub(fix, out)
    count += high
    try:
        out.decode("utf-8")
    except UnicodeDecodeError:
        text = out.decode("utf-8", errors="replace")
        count += text.count("\ufffd") - out.count(_REPLACEMENT)
        out = text.encode("utf-8")
    return out, count


class _Regroup(Exception):
    """A group of elements did not parse one-to-one: parse them one by one."""


_Row = tuple[int, int, bool, str, str, int, bool, bool]


class XmlStreamDecoder:
    def __init__(
        self,
        bad: BadRowLog,
        *,
        timestamp_format: str = "ms",
        tz: str | tzinfo | None = None,
        max_record_bytes: int = 4 << 20,
    ) -> None:
        self.bad = bad
        self.timestamp_format = timestamp_format
        self.tz = tz
        self.max_record_bytes = max_record_bytes
        self.records = 0
        self.illegal_chars = 0
        self.transaction_labels: set[str] = set()
        self._buf = b""
        #: ``</testResults>`` was read: what follows is ignored, in this chunk or later
        #: ones (a file read in one piece and one read as it grows give the same rows)
        self._ended = False
        #: The top level's indentation, from the first sample element (column 0 till then).
        self._indent: bytes | None = None
        self._top_start, self._top_end = _top_level(b"")
        self._parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)

    @property
    def held_bytes(self) -> int:
        return len(self._buf)

    def _replaced(self, count: int) -> None:
        if count and not self.illegal_chars:
            log.warning(
                "the XML JTL holds characters XML 1.0 forbids (binary response data?): "
                "replacing them with U+FFFD; their samples still count"
            )
        self.illegal_chars += count

    def _bad(self, reason: str, text: bytes) -> None:
        self.records += 1
        self.bad.add(self.records, reason, text[:200].decode("utf-8", errors="replace"))

    def _blocks(self, final: bool) -> list[bytes]:
        """Cut complete top-level elements off the buffer; what lies between elements and
        is not the prolog counts as one bad row per stretch."""
        blocks: list[bytes] = []
        buf = self._buf
        pos = 0
        if self._indent is None:
            first = _ANY_START.search(buf)
            if first is not None:
                self._indent = first.group(1)
                self._top_start, self._top_end = _top_level(self._indent)
        top_start, top_end = self._top_start, self._top_end
        # The first document end at or after a position, searched again only once that
        # position has passed it: one scan of the buffer, not one per element.
        doc_end_seen = _DOC_END.search(buf)

        def doc_end_from(at: int) -> re.Match[bytes] | None:
            nonlocal doc_end_seen
            if doc_end_seen is not None and doc_end_seen.start() < at:
                doc_end_seen = _DOC_END.search(buf, at)
            return doc_end_seen

        while True:
            m = top_start.search(buf, pos)
            doc_end = doc_end_from(pos)
            found = [x.start() for x in (m, doc_end) if x is not None]
            limit = min(found) if found else len(buf)
            gap = buf[pos:limit]
            if gap.strip() and not _PROLOG.match(gap):
                if not found and not final:
                    break  # may be the start of an element still arriving
                self._bad("not a sample element", gap.strip())
            if doc_end is not None and doc_end.start() == limit:
                pos = len(buf)  # the end of the document: nothing after it matters
                self._ended = True
                break
            if m is None:
                # Keep trailing blanks: they may be the indentation of an element whose
                # start tag is still arriving.
                pos = limit if final else limit - (len(gap) - len(gap.rstrip(b" \t")))
                break
            start = m.start()
            following = (top_start.search(buf, m.end()), doc_end_from(m.end()))
            nxt = [x.start() for x in following if x is not None]
            bound = min(nxt) if nxt else None
            nl = buf.find(b"\n", start)
            if nl >= 0 and buf[start:nl].rstrip().endswith(b"/>"):
                end = nl + 1
            else:
                close = top_end.search(buf, m.end(), bound if bound is not None else len(buf))
                if close is not None:
                    end = close.end()
                    if buf[end : end + 1] == b"\n":
                        end += 1
                elif bound is not None:
                    end = bound  # never closed: parsing it will count it as bad
                elif final:
                    end = len(buf)
                else:
                    if len(buf) - start > self.max_record_bytes:
                        self._bad(f"element longer than {self.max_record_bytes} bytes", buf[start:])
                        pos = len(buf)
                    else:
                        pos = start
                    break
            blocks.append(buf[start:end])
            pos = end
        self._buf = buf[pos:]
        return blocks

    def _rows_of(self, top: etree._Element, out: list[_Row]) -> bool:
        """Append the rows of one top-level element, parents first; False when it is
        malformed. Walked with a stack, not recursion: nesting depth is the file's."""
        mine: list[_Row] = []
        stack: list[tuple[etree._Element, bool]] = [(top, False)]
        while stack:
            el, subresult = stack.pop()
            if _CUT_SHORT_T.match(el.get("t", "")):
                # JMeter's row for a sample cut short at stop (raw_rows.CUT_SHORT): left
                # out, not malformed; what completed inside it still counts.
                self.bad.add(self.records + 1, CUT_SHORT, "")
                stack.extend((c, subresult) for c in reversed(el) if c.tag in _SAMPLE_TAGS)
                continue
            row = self._row(el, subresult=subresult)
            if row is None:
                return False
            children = [c for c in el if c.tag in _SAMPLE_TAGS]
            generated = False
            if not subresult:
                if row[6]:
                    self.transaction_labels.add(row[3])
                    generated = True
                elif row[3] in self.transaction_labels or (el.tag == "sample" and children):
                    # A transaction cut short (empty message, label seen on one before), or
                    # another generated parent (Parallel Controller): not a request itself.
                    row = (*row[:6], True, row[7])
                    generated = True
            mine.append(row)
            stack.extend((c, subresult or not generated) for c in reversed(children))
        out.extend(mine)
        return True

    def _row(self, el: etree._Element, subresult: bool) -> _Row | None:
        a = el.attrib
        try:
            elapsed = int(a["t"])
            ts_text = a["ts"]
            if self.timestamp_format == "ms" or ts_text.isdigit():
                start = int(ts_text)
            else:
                ms, bad = parse_timestamps(
                    np.asarray([ts_text], object), self.timestamp_format, self.tz
                )
                if bad[0]:
                    return None
                start = int(ms[0])
            success_text = a.get("s", "").lower()
            if success_text not in ("true", "false") or elapsed < 0:
                return None
            na = int(a.get("na", "-1"))
        except (KeyError, ValueError):
            return None
        if not (0 <= start < MAX_TIMESTAMP_MS and elapsed < MAX_ELAPSED_MS and -1 <= na < 2**31):
            return None  # implausible: would also overflow the int64/int32 columns
        message = a.get("rm", "")
        return (start, elapsed, success_text == "true", a.get("lb", ""), a.get("tn", ""), na,
                message.startswith(TRANSACTION_PREFIX), subresult)  # fmt: skip

    def _parse_one(self, block: bytes, out: list[_Row]) -> None:
        try:
            el = etree.fromstring(block, self._parser)
        except etree.XMLSyntaxError as exc:
            clean, replaced = scrub(block)
            try:
                if not replaced:
                    raise
                el = etree.fromstring(clean, self._parser)
            except etree.XMLSyntaxError:
                self._bad(f"XML error ({exc.msg})", block)
                return
            self._replaced(replaced)
        if el.tag not in _SAMPLE_TAGS or not self._rows_of(el, out):
            self._bad("sample element without usable t/ts/s attributes", block)
            return
        self.records += 1

    def _parse(self, blocks: list[bytes]) -> RawRows:
        rows: list[_Row] = []
        if not blocks:
            return RawRows.empty()
        try:
            payload = b"<r>" + b"".join(blocks) + b"</r>"
            try:
                wrapper = etree.fromstring(payload, self._parser)
                replaced = 0
            except etree.XMLSyntaxError:
                payload, replaced = scrub(payload)
                if not replaced:
                    raise
                wrapper = etree.fromstring(payload, self._parser)
            tops = [el for el in wrapper if isinstance(el.tag, str)]
            if len(tops) != len(blocks):
                raise _Regroup
            self._replaced(replaced)
            for block, el in zip(blocks, tops, strict=True):
                if el.tag in _SAMPLE_TAGS and self._rows_of(el, rows):
                    self.records += 1
                else:
                    self._bad("sample element without usable t/ts/s attributes", block)
        except (etree.XMLSyntaxError, _Regroup):
            rows = []
            for block in blocks:
                self._parse_one(block, rows)
        return RawRows.from_records(rows)

    def feed(self, data: bytes) -> list[RawRows]:
        if self._ended:
            return []
        if data:
            self._buf += data
        rows = self._parse(self._blocks(final=False))
        return [rows] if len(rows) else []

    def finish(self) -> list[RawRows]:
        if self._ended:
            return []
        rows = self._parse(self._blocks(final=True))
        return [rows] if len(rows) else []
