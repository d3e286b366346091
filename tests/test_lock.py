"""The lock file: every dependency a fresh machine installs is pinned to one version with its hashes."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from _paths import REPO

LOCK = REPO / "requirements.lock"


def _entries() -> dict[str, list[str]]:
    """name -> the lines of its entry (requirement line and continuation lines)."""
    out: dict[str, list[str]] = {}
    cur = None
    for line in LOCK.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            cur = re.split(r"[=<>!~ ;\\[]", line, maxsplit=1)[0].lower().replace("_", "-")
            out.setdefault(cur, []).append(line)
        elif cur:
            out[cur].append(line)
    return out


def test_every_locked_requirement_is_exact_and_hashed():
    entries = _entries()
    assert len(entries) > 50
    for name, lines in entries.items():
        reqs = [ln for ln in lines if not ln.startswith(" ")]
        assert all(re.match(r"^[A-Za-z0-9_.-]+(\[[^\]]*\])?==[^ ;]+", r) for r in reqs), (
            name,
            reqs,
        )
        assert any("--hash=sha256:" in ln for ln in lines), name


def test_the_lock_covers_every_declared_dependency_and_make_installs_it_hash_checked():
    proj = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = list(proj["dependencies"]) + [
        d for ds in proj.get("optional-dependencies", {}).values() for d in ds
    ]
    names = {re.split(r"[=<>!~ ;\[]", d, maxsplit=1)[0].lower().replace("_", "-") for d in declared}
    names.discard("earlyeval")
    missing = names - set(_entries())
    assert not missing, missing
    make = (REPO / "Makefile").read_text()
    assert "LOCK := requirements.lock" in make and "--require-hashes --no-deps -r $(LOCK)" in make


def test_the_lock_covers_the_vendored_swe_agent_and_make_installs_it_checked():
    """SWE-agent 1.1.0 is on no package index: `make install-sweagent` installs the vendored tarball (sha256-checked,
    without dependencies), so every requirement it declares must be in the lock (`make lock` resolves them)."""
    import hashlib
    import io
    import tarfile

    make = (REPO / "Makefile").read_text()
    tarball = REPO.parent / "shared" / "vendor" / "SWE-agent-1.1.0-src.tar.gz"
    assert "SWEAGENT_TARBALL ?= $(SHARED)/vendor/SWE-agent-1.1.0-src.tar.gz" in make
    assert "sha256sum -c" in make and "pip install -q --no-deps -e $(SWEAGENT_SRC)" in make
    assert "--no-emit-package sweagent" in make
    if not tarball.exists():
        import pytest

        pytest.skip(f"the vendored SWE-agent is not beside the repository ({tarball.parent})")
    sha = re.search(r"SWEAGENT_SHA256 := ([0-9a-f]{64})", make).group(1)
    assert hashlib.sha256(tarball.read_bytes()).hexdigest() == sha
    with tarfile.open(tarball) as tf:
        member = next(
            m
            for m in tf.getmembers()
            if m.name.endswith("/pyproject.toml") and m.name.count("/") == 1
        )
        proj = tomllib.load(io.BytesIO(tf.extractfile(member).read()))["project"]
    names = {
        re.split(r"[=<>!~ ;\[]", d, maxsplit=1)[0].lower().replace("_", "-").replace(".", "-")
        for d in proj["dependencies"]
    }
    locked = {n.replace(".", "-") for n in _entries()}
    assert not names - locked, names - locked


def test_the_core_subset_of_the_lock_is_the_runtime_and_nothing_offline():
    """tools/lock_subset.py (the core install of tools/smoke_installed.sh): pyproject.toml's [project]
    dependencies and what they pull in, hash-checked; none of the extras' packages."""
    out = subprocess.run(
        [sys.executable, str(REPO / "tools" / "lock_subset.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {
        re.match(r"([A-Za-z0-9._-]+)==", l).group(1).lower()
        for l in out.splitlines()
        if re.match(r"[A-Za-z0-9]", l)
    }
    assert {"lightgbm", "numpy", "scipy", "narwhals", "tqdm", "unidiff"} <= names, names
    assert not names & {
        "scikit-learn",
        "pandas",
        "pyarrow",
        "typer",
        "matplotlib",
        "atif",
        "dask",
        "joblib",
    }, names
    assert out.count("--hash=sha256:") >= len(names)
