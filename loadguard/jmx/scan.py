"""Where each element's start tag sits in the original text.

``loadguard inject`` must leave a plan byte-for-byte untouched except for what it adds,
and a parse-and-serialise round trip would not (``<a></a>`` becomes ``<a/>``, quotes and
entities change). So the transform parses with lxml to *decide*, and splices text into
the original string to *write*. This scanner lists the start-tag offsets of the elements
in document order, which is the order of ``root.iter()`` over elements: the k-th offset
belongs to the k-th element. It only runs on text lxml has already accepted as
well-formed, so it needs no error handling of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""<!--.*?-->                         # comment
      | <!\[CDATA\[.*?\]\]>                # CDATA section
      | <\?.*?\?>                          # processing instruction / XML declaration
      | <!DOCTYPE(?:[^\[>]|\[.*?\])*>      # doctype, with an optional internal subset
      | </[^>]*>                           # end tag
      | <(?P<name>[^\s/>!?]+)(?:\s+(?:[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*')))*\s*(?P<empty>/?)>
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class StartTag:
    name: str
    start: int  # offset of '<'
    end: int  # offset just past '>'
    empty: bool  # <name/>


def start_tags(text: str) -> list[StartTag]:
    """Start tags of all elements, in document order."""
    tags: list[StartTag] = []
    for match in _TOKEN.finditer(text):
        name = match.group("name")
        if name is not None:
            tags.append(StartTag(name, match.start(), match.end(), bool(match.group("empty"))))
    return tags


def line_indent(text: str, offset: int) -> str | None:
    """The whitespace between the start of ``offset``'s line and ``offset``; ``None`` when
    something else precedes it on that line."""
    line_start = text.rfind("\n", 0, offset) + 1
    prefix = text[line_start:offset]
    return prefix if prefix.strip() == "" else None
