"""The report page escapes every string where it is built (issue 43 item 2): a report received from someone else,
every key and value of it hostile, gives a page with no markup of its own, no raw control or bidi character, and
no section lost to a label matplotlib would read as TeX."""

from __future__ import annotations

import ast
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import test_report_page
from test_report_page import LARGE, _workspace

from earlyeval.report import html
from earlyeval.report.report_page import write_report

HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>\x1b[31m\u202e$\\frac{x}$"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
REPORT = Path(html.__file__).parent
ws = test_report_page.ws  # the workspace fixture of the page tests


def _hostile(x):
    """Every string value with the payload appended; every table holding, beside each key, the same entry under
    the key with the payload appended (so agent names, W=k keys, protocols, pairs, formats are hostile too)."""
    if isinstance(x, dict):
        out = {k: _hostile(v) for k, v in x.items()}
        out.update({k + HOSTILE: _hostile(v) for k, v in x.items()})
        return out
    if isinstance(x, list):
        return [_hostile(v) for v in x]
    return x + HOSTILE if isinstance(x, str) else x


def _pass_blocks(rep: dict) -> None:
    blk = {
        "halted_accuracy": 0.975,
        "steps_saved": 0.42,
        "audited_share": 0.1,
        "threshold_moves": [1, 0, 2],
        "steps_saved_by_fifth_of_pass": [0.3, 0.4, 0.45, 0.5, 0.45],
    }
    for a in LARGE:
        rep["agents"][a]["pass"] = {"seeds": [0], "audit_share": 0.1, "W=1": blk, "W=8": blk}
    rep["pass_pooled"] = {"W=1": blk, "W=8": blk}


PAGE_TAGS = set(
    "html head meta title style body h1 h2 h3 p nav a section div table thead tbody tr th td span dl dt dd "
    "ul li b img figure figcaption".split()
)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs.update(k for k, _ in attrs)


def _markup(page: str) -> tuple[set[str], set[str]]:
    """The elements and attribute names a browser would build from ``page``."""
    p = _Tags()
    p.feed(page)
    return p.tags, p.attrs


def _failed_sections(page: str) -> list[str]:
    return re.findall(r'<section id="(\w+)">(?:(?!</section>).)*could not be built', page, re.S)


def test_a_hostile_report_gives_a_page_of_text_only(ws):
    _workspace(ws, latency=True)
    rdir = ws / "reports" / "demo"
    rep = json.loads((rdir / "loao.json").read_text())
    _pass_blocks(rep)
    (rdir / "loao.json").write_text(json.dumps(rep))
    clean = write_report("demo").read_text()
    for name in ("loao.json", "budget.json", "routing.json", "latency.json", "ingest.json"):
        (rdir / name).write_text(json.dumps(_hostile(json.loads((rdir / name).read_text()))))
    page = write_report("demo").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the hostile names are there, as text
    tags, attrs = _markup(page)
    assert tags <= PAGE_TAGS, (
        tags - PAGE_TAGS
    )  # no element of the report's own: no script, no img src=x
    assert tags == _markup(clean)[0] and not [a for a in attrs if a.startswith("on")]
    assert not RAW.search(page), repr(RAW.search(page))
    assert "\\x1b[31m\\u202e" in page  # shown as visible escapes
    # a TeX-looking name costs no section (matplotlib reads every label literally)
    assert _failed_sections(page) == _failed_sections(clean) == []
    for sid in ("pass", "frontier", "calibration", "halts"):
        assert page.split(f'<section id="{sid}">')[1].count("data:image/png;base64,") >= 1


@pytest.mark.parametrize(
    "cell",
    ["<b>x</b>", "a\x1bb", "\u202eevil", "x & y"],
)
def test_table_cells_and_tags_escape_what_they_are_given(cell):
    t = html.table(["<h>", "v"], [("<cls>", [cell, ("t<", 'c"', 'ti"tle')])])
    assert "<b>" not in t and "<h>" not in t and "<cls>" not in t and 'c"' not in t
    assert not RAW.search(t)
    assert html.esc(html.tag("p", cell)) == html.tag("p", cell)  # markup made here passes once


def test_the_sections_build_markup_only_through_the_html_builders():
    """No page module writes markup itself: no string literal holding a tag, no ``Markup(...)``, outside
    report/html.py (and the page's <meta charset> and CSS in report_page.render)."""
    found = []
    for p in sorted(REPORT.glob("page_*.py")) + [REPORT / "report_page.py"]:
        tree = ast.parse(p.read_text())
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(n)
        }
        for node in ast.walk(tree):
            if id(node) in docs:
                continue
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Markup":
                arg = node.args[0] if node.args else None
                literal = isinstance(arg, ast.Constant) and arg.value in (
                    "",
                    '<meta charset="utf-8">',
                )
                if not literal and not (isinstance(arg, ast.Name) and arg.id == "CSS"):
                    found.append(f"{p.name}:{node.lineno}: Markup({ast.unparse(arg or node)})")
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.search(
                    r"<(/?)(h\d|p|td|tr|li|ul|div|span|b|a|section|table)\b[^>]*>", node.value
                ):
                    found.append(f"{p.name}:{node.lineno}: {node.value[:60]!r}")
    assert found == []
