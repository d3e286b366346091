"""A refactor leaves the outputs as they were: compare every file under reports/ and models/ of two checkouts,
byte for byte, JSON apart from timing fields (`seconds`, ...) and the checkouts' own paths:
`python3 tools/compare_reports.py BEFORE AFTER` (each made by `bash tools/refactor_reports.sh DIR`)."""

import json
import sys
from pathlib import Path

a, b = Path(sys.argv[1]), Path(sys.argv[2])
TIMING = {
    "seconds",
    "elapsed",
    "wall_seconds",
    "training_seconds",
    "created",
    "elapsed_s",
    "train_seconds",
    "time_s",
}


def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in TIMING and not k.endswith("_seconds")}
    if isinstance(x, list):
        return [strip(v) for v in x]
    if isinstance(x, str):
        return x.replace(str(a), "<ROOT>").replace(str(b), "<ROOT>")
    return x


files = sorted(p.relative_to(a) for p in (a / "reports").rglob("*") if p.is_file()) + sorted(
    p.relative_to(a) for p in (a / "models").rglob("*") if p.is_file()
)
bad = 0
for rel in files:
    pa, pb = a / rel, b / rel
    if not pb.exists():
        print("MISSING", rel)
        bad += 1
        continue
    if pa.suffix == ".png":
        continue
    ra, rb = pa.read_bytes(), pb.read_bytes()
    if ra == rb:
        print("same ", rel)
        continue
    if pa.suffix == ".json":
        ja, jb = strip(json.loads(ra)), strip(json.loads(rb))
        if ja == jb:
            print("same*", rel, "(apart from timing/paths)")
            continue

        # show first differing key
        def diff(x, y, path=""):
            if type(x) != type(y):
                return [path]
            if isinstance(x, dict):
                out = []
                for k in set(x) | set(y):
                    if k not in x or k not in y:
                        out.append(path + "/" + k)
                    else:
                        out += diff(x[k], y[k], path + "/" + k)
                return out
            if isinstance(x, list):
                if len(x) != len(y):
                    return [path + f"[len {len(x)} vs {len(y)}]"]
                out = []
                for i, (u, v) in enumerate(zip(x, y)):
                    out += diff(u, v, path + f"[{i}]")
                return out
            return [] if x == y else [path + f": {str(x)[:80]} vs {str(y)[:80]}"]

        d = diff(ja, jb)
        print("DIFF ", rel, len(d), d[:6])
        bad += 1
        continue
    ta, tb = (
        ra.decode(errors="replace").replace(str(a), "<ROOT>"),
        rb.decode(errors="replace").replace(str(b), "<ROOT>"),
    )
    if ta == tb:
        print("same*", rel, "(apart from paths)")
        continue
    la, lb = ta.splitlines(), tb.splitlines()
    nd = [i for i, (x, y) in enumerate(zip(la, lb)) if x != y]
    print(
        "DIFF ",
        rel,
        f"{len(nd)} lines differ of {len(la)}/{len(lb)}",
        (la[nd[0]][:150], lb[nd[0]][:150]) if nd else "",
    )
    bad += 1
print("differences:", bad)
