#!/usr/bin/python3
"""The folders stand in layers: no two folders include each other, directly or round a longer loop.

  include_layers_test.py SOURCE_DIR    check the tree
  include_layers_test.py --self-test   prove a two-folder and a three-folder loop are caught

The graph comes from the `#include "..."` lines of every C and C++ source outside tests/ (a test
may reach into any layer it tests). Two graphs are checked: one between the top-level folders
(harness, api, bench, ...), and one between the rooms of harness/, npu/, power/, cpu/ and
workloads/ (harness/run, harness/analysis, workloads/gpt2; a file directly in such a folder is
the room "<folder>/."). The build enforces only that a target links what it includes; two
libraries of different folders can still each link the other's side, so the loop shows only here.
"""
import collections
import os
import sys
import tempfile

SOURCES = (".h", ".hpp", ".c", ".cc", ".cpp", ".inc")
SKIP = {"tests", "build", ".git"}
ROOMED = ("harness", "npu", "power", "cpu", "workloads")
# Include roots besides the source root: the public headers are included as "flopwatt/meter.h".
EXTRA_ROOTS = ("api/include",)


def sources(root):
    for top in sorted(os.listdir(root)):
        if top in SKIP or top.startswith(".") or top.startswith("build") or not os.path.isdir(os.path.join(root, top)):
            continue
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCES):
                    yield os.path.relpath(os.path.join(d, f), root)


def includes(root, rel):
    with open(os.path.join(root, rel), errors="replace") as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if s.startswith("#") and s[1:].lstrip().startswith("include"):
                rest = s[1:].lstrip()[len("include"):].strip()
                if rest.startswith('"') and rest.count('"') >= 2:
                    yield n, rest[1:rest.index('"', 1)]


def resolve(root, rel, inc):
    """The file an include names, relative to the root, or None (a system or generated header)."""
    here = os.path.dirname(rel)
    for base in (here, "") + EXTRA_ROOTS:
        cand = os.path.normpath(os.path.join(base, inc))
        if not cand.startswith("..") and os.path.isfile(os.path.join(root, cand)):
            return cand
    # A generated header (harness/output/version.h from version.h.in) still names its folder.
    first = inc.split("/")[0]
    if "/" in inc and os.path.isdir(os.path.join(root, first)) and first not in SKIP:
        return inc
    return None


def top_of(path):
    return path.split("/")[0]


def room_of(path):
    parts = path.split("/")
    if parts[0] in ROOMED:
        return parts[0] + "/" + (parts[1] if len(parts) > 2 else ".")
    return parts[0]


def graph(root, node_of):
    """edges[a][b] = the first include that makes folder a include folder b (file:line -> include)."""
    edges = collections.defaultdict(dict)
    for rel in sources(root):
        for n, inc in includes(root, rel):
            target = resolve(root, rel, inc)
            if target is None:
                continue
            a, b = node_of(rel), node_of(target)
            if a != b and b not in edges[a]:
                edges[a][b] = f"{rel}:{n} includes \"{inc}\""
    return edges


def loops(edges):
    """The strongly connected components of more than one folder (Tarjan), each as a sorted list."""
    index, low, stack, on, out = {}, {}, [], set(), []
    nodes = sorted(set(edges) | {b for a in edges for b in edges[a]})

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def explain(edges, comp):
    """The pairs of the loop, each direction with the include that makes it."""
    members = set(comp)
    lines = [f"folders that include each other: {' <-> '.join(comp)}"]
    for a in comp:
        for b in sorted(edges.get(a, {})):
            if b in members:
                mutual = " (and back: a two-folder loop)" if a in edges.get(b, {}) else ""
                lines.append(f"  {a} -> {b}: {edges[a][b]}{mutual}")
    return lines


def check(root):
    problems = []
    for name, node_of in (("top-level folders", top_of), ("rooms", room_of)):
        edges = graph(root, node_of)
        for comp in loops(edges):
            problems.append(f"{name}: " + "\n".join(explain(edges, comp)))
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as t:
        def write(rel, *incs):
            os.makedirs(os.path.join(t, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(t, rel), "w") as f:
                f.write("".join(f'#include "{i}"\n' for i in incs))
        write("api/include/flopwatt/meter.h")
        write("api/meter.cpp", "flopwatt/meter.h", "harness/run/energy.h")
        write("harness/run/energy.h", "power/sampler.h")
        write("power/sampler.h")
        write("tests/harness/x_test.cpp", "flopwatt/meter.h")
        ok = check(t)
        if ok:
            print("self-test: a layered tree was refused:\n" + "\n".join(ok))
            return 1
        write("harness/analysis/compare.cpp", "flopwatt/meter.h")  # harness <-> api
        two = check(t)
        if not any("api <-> harness" in p and "harness/analysis/compare.cpp:1" in p for p in two):
            print("self-test: the api <-> harness loop was missed:\n" + "\n".join(two))
            return 1
        write("harness/analysis/compare.cpp")
        write("npu/plan/tile.h", "npu/sim/model.h")
        write("npu/sim/model.h", "npu/xdna/device.h")
        write("npu/xdna/device.h", "npu/plan/tile.h")
        three = check(t)
        if len(three) != 1 or "rooms: " not in three[0] or "npu/plan <-> npu/sim <-> npu/xdna" not in three[0]:
            print("self-test: the npu/plan -> sim -> xdna -> plan loop was missed:\n" + "\n".join(three))
            return 1
    print("self-test: both loops caught, the layered tree passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p)
    if problems:
        print("fix: move what the lower folder needs down into it (or into a folder below both), "
              "so every include points one way; see ARCHITECTURE.md's layers")
        return 1
    print("folders layered: no two include each other")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
