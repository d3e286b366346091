"""What --format auto reads of a file (``ingest.sniff``): a bounded prefix, its root keys, in linear time."""

from __future__ import annotations

import gzip
import time

from earlyeval.ingest.sniff import SNIFF_BYTES, read_head, root_keys


def test_root_keys_of_a_prefix_cut_anywhere():
    assert root_keys('{"a": 1, "b": {"c": [2, {"d": 3}]}, "e": "x\\"y", "f": "cut \\" off') == (
        "{",
        ("a", "b", "e", "f"),
    )
    assert root_keys('[{"id": 1, "source": "x", "nested": {"no": 1}}, {"z": 1}]') == (
        "[",
        ("id", "source", "nested"),
    )
    assert root_keys("not json {") == ("", ())


def test_a_long_cut_off_string_of_escaped_quotes_reads_in_linear_time(tmp_path):
    """The prefix ends inside a string full of escaped quotes (a tool output): no rescan from inside it."""
    f = tmp_path / "x.json.gz"
    with gzip.open(f, "wt") as g:
        g.write('{"pass": true, "messages": [{"content": "' + '\\"' * SNIFF_BYTES + '"}]}')
    t = time.perf_counter()
    h = read_head(f)
    assert time.perf_counter() - t < 1.0  # quadratic: minutes; linear: milliseconds
    assert (
        h.root == "{"
        and h.keys == ("pass", "messages")
        and not h.complete
        and len(h.raw) == SNIFF_BYTES
    )
