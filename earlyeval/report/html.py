"""The HTML page's building blocks (escaping, number formats, tables, embedded PNGs, CSS), apart from its sections."""

from __future__ import annotations

import base64
import html
import io
import math
from typing import Any

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


def esc(x: Any) -> str:
    return html.escape(str(x))


def note(text: str, missing: bool = False) -> str:
    return f'<p class="note{" missing" if missing else ""}">{esc(text)}</p>'


def legend(items: dict[str, str]) -> str:
    return (
        '<dl class="legend">'
        + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items.items())
        + "</dl>"
    )


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


def _td(i: int, c: Any) -> str:
    if isinstance(c, tuple):
        text, cls, title = (tuple(c) + ("", ""))[:3]
        return f'<td class="{esc(cls)}" title="{esc(title)}">{text}</td>'
    return f'<td class="name">{c}</td>' if i == 0 else f"<td>{c}</td>"


def table(header: list[str], rows: list[tuple[str, list[Any]]]) -> str:
    """rows: (css class, cells); the first cell is a name (left-aligned); a cell is HTML, or (HTML, class, title)."""
    h = "".join(
        f'<th class="name">{esc(c)}</th>' if i == 0 else f"<th>{esc(c)}</th>"
        for i, c in enumerate(header)
    )
    body = []
    for cls, cells in rows:
        tds = "".join(_td(i, c) for i, c in enumerate(cells))
        body.append(f'<tr class="{cls}">{tds}</tr>' if cls else f"<tr>{tds}</tr>")
    # in a scrolling box: a wide table scrolls inside the page instead of widening it
    return f'<div class="scroll"><table><thead><tr>{h}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def agent_cell(name: str, small: bool, n: Any = None) -> str:
    badge = (
        f'<span class="badge">small{f" n={int(n)}" if num(n) is not None else ""}</span>'
        if small
        else ""
    )
    return esc(name) + badge


def png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return png_bytes(buf.getvalue())


def png_bytes(b: bytes, alt: str = "plot") -> str:
    """A PNG embedded as a data URI (the page fetches nothing)."""
    return (
        f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(b).decode("ascii")}">'
    )


def pyplot():
    """matplotlib's pyplot on the Agg backend with the page's style."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {"font.size": 10, "axes.titlesize": 11, "axes.grid": True, "grid.alpha": 0.3}
    )
    return plt
