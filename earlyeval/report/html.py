"""The HTML page's building blocks (escaping, number formats, tables, embedded PNGs, CSS), apart from its sections.

The one place text becomes markup: ``esc`` escapes anything that is not ``Markup`` made here (``tag``, ``table``,
``note``, ...), and the page (``report_page.render``) ``esc``-es every section it is handed, so a section that
returns text or a cell made without a builder is shown as text, never run.  tests/report/test_page_escaping.py
renders every report with hostile strings in every key and value, and holds the sections to these builders."""

from __future__ import annotations

import base64
import io
import math
from typing import Any, Iterable

from markupsafe import Markup, escape

from earlyeval.core.plotting import pyplot as literal_pyplot
from earlyeval.core.text import printable

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1180px;color:#1d2433;
line-height:1.4;padding:0 16px}
h1{font-size:26px;margin-bottom:4px}h2{font-size:20px;border-bottom:2px solid #d0d7e2;padding-bottom:4px;margin-top:36px}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #d0d7e2;padding:3px 7px;text-align:right}td{white-space:nowrap}.off{color:#c62828;font-weight:600}
th{background:#eef2f7}td.name,th.name{text-align:left}tr.pooled td{font-weight:600;background:#f6f8fb}
tr.small td{background:#fff8e6}.badge{display:inline-block;font-size:11px;padding:0 5px;border-radius:3px;
background:#f0b429;color:#222;margin-left:4px}.note{background:#f3f4f6;border-left:4px solid #9aa5b1;padding:6px 10px;
font-size:13px}.missing{background:#fdecec;border-left-color:#d64545}dl.legend{font-size:12px;color:#3e4c59;
display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0 12px}dl.legend dt{font-weight:600}
dl.legend dd{margin:0}img{max-width:100%;border:1px solid #e4e7eb}code{background:#eef2f7;padding:0 3px}
nav a{margin-right:12px;font-size:13px}
div.scroll{max-width:100%;overflow-x:auto}td.miss{background:#fde2e1;color:#a40e26;font-weight:600}
.provenance{font-size:12px;color:#3e4c59;background:#f6f8fb;border:1px solid #d0d7e2;padding:6px 10px;margin:8px 0}
.provenance b{color:#1d2433}.targets{border-left:4px solid #d64545;background:#fff5f5;padding:6px 10px;font-size:13px}
.targets.ok{border-left-color:#2da44e;background:#f0fff4}.gap{color:#a40e26;font-weight:600}
figure{margin:10px 0}figcaption{font-size:12px;color:#3e4c59}pre{max-width:100%;overflow-x:auto;white-space:pre-wrap}
"""


def esc(x: Any) -> Markup:
    """``x`` as page text: markup the builders below made passes as it is; anything else is text, HTML-escaped,
    with control and bidi characters shown as visible escapes (``\\x1b``, ``\\u202e``) -- so an agent name, a
    report's key or a note can neither add markup nor reorder what the reader sees."""
    if isinstance(x, Markup):
        return x
    return escape(printable(str(x)))


def join(parts: Iterable[Any], sep: str = "") -> Markup:
    """Pieces of a page (markup or text, each ``esc``-ed) as one piece."""
    return Markup(sep).join(esc(p) for p in parts)


def tag(name: str, *children: Any, cls: str | None = None, **attrs: Any) -> Markup:
    """``<name class=cls attrs>children</name>``: the one way markup is made from text (every child and
    attribute ``esc``-ed); a section builds its text, however it likes, and hands it here."""
    if not name.isalnum():
        raise ValueError(f"not a tag name: {name!r}")
    at = ([f' class="{esc(cls)}"'] if cls else []) + [
        f' {k.rstrip("_")}="{esc(v)}"' for k, v in attrs.items() if v is not None
    ]
    return Markup(f"<{name}{''.join(at)}>") + join(children) + Markup(f"</{name}>")


def off(text: Any) -> Markup:
    """A value off its target, in red."""
    return tag("span", text, cls="off")


def note(text: Any, missing: bool = False) -> Markup:
    return tag("p", text, cls="note missing" if missing else "note")


def legend(items: dict[str, str]) -> Markup:
    return tag("dl", *(tag("dt", k) + tag("dd", v) for k, v in items.items()), cls="legend")


def num(x: Any) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def pct(x: Any, digits: int = 1) -> str:
    v = num(x)
    return "–" if v is None else f"{100 * v:.{digits}f} %"


def fnum(x: Any, digits: int = 3) -> str:
    v = num(x)
    return "–" if v is None else f"{v:.{digits}f}"


def signed(x: Any, digits: int = 1) -> str:
    v = num(x)
    return "–" if v is None else f"{v:+.{digits}f}"


def usd(x: Any) -> str:
    v = num(x)
    return "unknown" if v is None else f"${v:,.2f}"


def missed(cell: str, why: str) -> tuple[str, str, str]:
    """A cell that misses its target: marked (class ``miss``), the target as its tooltip and in its text."""
    return (f"{cell} ✗", "miss", f"misses the target: {why}")


def _td(i: int, c: Any) -> Markup:
    if isinstance(c, tuple):
        text, cls, title = (tuple(c) + ("", ""))[:3]
        return tag("td", text, cls=cls or None, title=title or None)
    return tag("td", c, cls="name" if i == 0 else None)


def table(header: list[str], rows: list[tuple[str, list[Any]]]) -> Markup:
    """rows: (css class, cells); the first cell is a name (left-aligned); a cell is text or markup, or (text,
    class, title).  Every cell is ``esc``-ed here, whoever made it."""
    h = join(tag("th", c, cls="name" if i == 0 else None) for i, c in enumerate(header))
    body = join(
        tag("tr", *(_td(i, c) for i, c in enumerate(cells)), cls=cls or None) for cls, cells in rows
    )
    # in a scrolling box: a wide table scrolls inside the page instead of widening it
    return tag("div", tag("table", tag("thead", tag("tr", h)), tag("tbody", body)), cls="scroll")


def agent_cell(name: str, small: bool, n: Any = None) -> Markup:
    label = f"small{f' n={int(n)}' if num(n) is not None else ''}"
    return esc(name) + (tag("span", label, cls="badge") if small else Markup(""))


def png(fig: Any) -> Markup:
    """The figure as an embedded PNG; its labels' control and bidi characters shown as escapes, as on the page."""
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        t.set_text(printable(t.get_text()))

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return png_bytes(buf.getvalue())


def png_bytes(b: bytes, alt: str = "plot") -> Markup:
    """A PNG embedded as a data URI (the page fetches nothing)."""
    src = f"data:image/png;base64,{base64.b64encode(b).decode('ascii')}"
    return Markup(f'<img alt="{esc(alt)}" src="{esc(src)}">')


def figure(img: Markup, caption: Any) -> Markup:
    return tag("figure", img, tag("figcaption", caption))


def pyplot():
    """matplotlib's pyplot on the Agg backend with the page's style; labels are literal text (an agent named
    ``$x$`` is not read as TeX: ``core.plotting``)."""
    plt = literal_pyplot()
    plt.rcParams.update(
        {"font.size": 10, "axes.titlesize": 11, "axes.grid": True, "grid.alpha": 0.3}
    )
    return plt
