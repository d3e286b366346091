"""Where the numbers on a report page come from: earlyeval's version, when the page was made, the git commit
of the checkout it runs from (if it is one), the shipped model's content hash, the data root the runs were
read from, and the evaluation protocol.  Every item that cannot be known says so; none is guessed."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Any

from earlyeval.config.workspace import data_root, models_dir
from earlyeval.core.version import __version__

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def git_commit(where: Path = PACKAGE_DIR) -> str:
    """The checkout's short commit, '+dirty' when its tracked files differ from it; 'not a git checkout' for an
    installed package (or where git is absent)."""

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10
        )

    try:
        head = run("rev-parse", "--short=12", "HEAD")
        if head.returncode != 0:
            return "not a git checkout"
        dirty = run("status", "--porcelain", "--untracked-files=no").stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "not a git checkout (git unavailable)"


def model_hash(bench: str) -> str:
    """The shipped model's ``content_hash`` (its manifest, not verified here: ``Monitor.load`` does that)."""
    mf = models_dir(bench) / "manifest.json"
    try:
        h = json.loads(mf.read_text()).get("content_hash")
    except FileNotFoundError:
        return f"no model (earlyeval train --bench {bench} writes {models_dir(bench)})"
    except (OSError, ValueError, AttributeError) as e:
        return f"unreadable manifest ({type(e).__name__})"
    return str(h)[:16] if isinstance(h, str) and h else "no content_hash in the manifest"


def provenance(
    bench: str,
    loao: dict[str, Any] | None,
    ingest: dict[str, Any] | None,
    now: dt.datetime | None = None,
) -> dict[str, str]:
    """The page's provenance items, label -> value."""
    cfg = (loao or {}).get("config") or {}
    prots = [k for k in ((loao or {}).get("protocols") or {}) if k != "doc"]
    protocol = (
        (
            "leave-one-agent-out; headline "
            + str(cfg.get("prior_pool", "as_of")).replace("current", "current_pool")
            + (f" (also {', '.join(p for p in prots if p != 'as_of')})" if len(prots) > 1 else "")
            + (f"; families {', '.join(cfg['families'])}" if cfg.get("families") else "")
        )
        if loao
        else "unknown (no loao.json)"
    )
    root = (ingest or {}).get("data_root")
    return {
        "earlyeval": __version__,
        "page made": (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%d %H:%M UTC"),
        "git commit": git_commit(),
        "model content hash": model_hash(bench),
        "data root": f"{root} (as ingested)"
        if root
        else f"{data_root()} (the configured one; no ingest.json)",
        "protocol": protocol,
    }
