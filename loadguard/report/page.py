"""HTML assembly: one self-contained page, inline CSS, inline SVG charts, no script.

Every string that comes from the inputs (labels, file names, reasons) goes through
``html.escape``. The page references nothing outside itself: no stylesheet, font, image
or script URL, so it renders the same offline, from a mail attachment or a CI artefact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from loadguard.report.charts import ZONE_COLOURS
from loadguard.report.tables import LABEL_HEADER, LabelRow, verdict_text

CSS = """
:root { color-scheme: light; }
body { font: 14px/1.45 "DejaVu Sans", system-ui, sans-serif; margin: 0 auto;
       max-width: 1080px; padding: 20px 28px 40px; color: #1d1d1f; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 3px; }
.meta { color: #555; font-size: 12.5px; margin: 0 0 6px; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 4px; font-weight: bold;
           color: #fff; background: #777; }
.verdict.PASS { background: #1a9850; } .verdict.FAIL { background: #d73027; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border: 1px solid #d6d6d6; padding: 3px 9px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: bold; background: #fafafa; }
td.pass { color: #14692f; } td.fail { color: #b01e12; font-weight: bold; }
figure { margin: 10px 0 18px; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { color: #555; font-size: 12.5px; }
.zones span { display: inline-block; padding: 0 8px; margin-right: 6px; border-radius: 3px;
              font-size: 12px; }
.headline { font-size: 18px; line-height: 1.5; margin: 14px 0 4px; padding: 10px 14px;
            background: #f6f8fa; border-left: 5px solid #2b5c8a; }
.verdict.INCONCLUSIVE { background: #b8860b; } .verdict.NO_DATA { background: #777; }
footer { margin-top: 30px; color: #777; font-size: 12px; }
"""


def _num_cell(text: str) -> str:
    return f'<td class="num">{escape(text)}</td>'


def key_value_table(rows: Sequence[tuple[str, str]], css_id: str) -> str:
    body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    return f'<table id="{css_id}"><tbody>{body}</tbody></table>'


def label_table(rows: Sequence[LabelRow], slo: Mapping[str, float]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in LABEL_HEADER)
    out = []
    for row in rows:
        total = ' class="total"' if row.label == "(all labels)" else ""
        ok = row.meets_slo
        cls = "" if ok is None else (' class="pass"' if ok else ' class="fail"')
        cells = f"<td>{escape(row.cells[0])}</td>" + "".join(_num_cell(c) for c in row.cells[1:])
        out.append(f"<tr{total}>{cells}<td{cls}>{escape(verdict_text(row, slo))}</td></tr>")
    return f'<table id="labels"><thead><tr>{head}</tr></thead><tbody>{"".join(out)}</tbody></table>'


def grid_table(
    header: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]], css_id: str
) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        f"<tr><th>{escape(k)}</th>{''.join(f'<td>{escape(v)}</td>' for v in vals)}</tr>"
        for k, vals in rows
    )
    return f'<table id="{css_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def zone_legend() -> str:
    spans = "".join(
        f'<span style="background:{colour}">{escape(zone)}</span>'
        for zone, colour in ZONE_COLOURS.items()
    )
    return f'<p class="zones">Zones: {spans}</p>'


def headline(verdict: str, text: str) -> str:
    """The headline: the verdict badge and the one sentence (``loadguard.headline``)."""
    badge = f'<span class="verdict {escape(verdict)}">{escape(verdict)}</span> ' if verdict else ""
    sentence = f'<span id="headline-text">{escape(text)}</span>'
    return f'<section id="headline"><p class="headline">{badge}{sentence}</p></section>'


def figure(name: str, title: str, svg: str, caption: str) -> str:
    return (
        f'<section class="chart" id="chart-{escape(name)}"><h2>{escape(title)}</h2>'
        f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure></section>"
    )


def page(title: str, meta: Sequence[str], sections: Sequence[str], footer: str) -> str:
    meta_html = "".join(f'<p class="meta">{m}</p>' for m in meta)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>\n"
        f"<body><header><h1>{escape(title)}</h1>{meta_html}</header>\n"
        + "\n".join(sections)
        + f"\n<footer>{footer}</footer></body></html>\n"
    )
