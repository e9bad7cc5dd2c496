#!/usr/bin/python3
"""Proves scripts/packages.txt is complete: everything a configured build uses comes
from a listed package or from the Depends closure of the list (never only through
Recommends, which bootstrap does not install), or from the base system that
`debootstrap --variant=minbase` gives (Essential and Priority: required packages).

What "uses" means here, all read from the build tree and the sources:
  - every file CMake's cache points at (FILEPATH/PATH entries: libraries, headers,
    package config directories, tools);
  - every system header an object file was compiled from (the compiler's *.o.d files);
  - every absolute path on a link line (link.txt);
  - every program the build, tests and scripts run (TOOLS below), and every program those
    tools start on their behalf, read from the tools' own sources (TOOL_CALLS below);
  - every Python module the scripts and tests import, located with /usr/bin/python3.

usage: check_packages.py BUILD_DIR [--packages FILE] [--drop PKG]... [--each]
  --drop PKG  check as if PKG were not in the list (must fail for a needed package)
  --each      drop every listed package in turn: each must be needed, or be in the
              Depends closure of the others (then it is only listed for clarity)
Exit 0 when complete, 1 with one line per uncovered file naming its package.
"""
import argparse
import ast
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Programs run outside what CMake records: by bootstrap, by ctest, or by the tests
# themselves (tests/power: umockdev-run, setpriv, bash; tests/harness and tests/bench: compare.py),
# and by CI's scripts/fuzz.sh (clang++ with libFuzzer's runtime); tests/harness/store
# starts a PostgreSQL 15 server (initdb, pg_ctl) as nobody through runuser; tests/harness/prom and
# serve run promtool, and start Prometheus and the Pushgateway as nobody through setpriv.
TOOLS = ["cmake", "ctest", "make", "pkg-config", "git", "bash", "sh", "umockdev-run", "setpriv",
         "/usr/bin/python3", "/usr/share/benchmark/compare.py", "clang++", "runuser",
         "/usr/lib/postgresql/15/bin/initdb", "/usr/lib/postgresql/15/bin/pg_ctl",
         "/usr/lib/postgresql/15/bin/postgres", "dpkg-shlibdeps", "readelf",
         "/usr/bin/promtool", "/usr/bin/prometheus", "/usr/bin/prometheus-pushgateway"]
# Files read at run time, and by what.
RUNTIME_FILES = {"/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a": "libFuzzer, linked by scripts/fuzz.sh",
                 "/usr/share/javascript/chart.js/chart.min.js": "Chart.js, inlined by report --format html and site"}
# The HTML report's browser test (tests/harness/analysis/html_browser_test.py) starts chromium.
TOOLS += ["chromium"]
# tests/api/deb_package_test.py (and scripts/check-deb.sh) run lintian on the packages cpack makes.
TOOLS += ["lintian"]

# Programs that the tools above start on the tests' behalf, read from the tools' own sources so that
# a program a tool starts is seen without anyone listing it: tests/api's Debian-package test runs
# `cpack -G DEB`, whose CPackDeb module finds `file` and dpkg-shlibdeps, which runs objdump.
# (tool, glob of the file that holds its calls, pattern whose group 1 is a program it runs)
TOOL_CALLS = [
    ("cpack -G DEB", "/usr/share/cmake-*/Modules/Internal/CPack/CPackDeb.cmake",
     r"find_program\(\s*\w+\s+(?:NAMES\s+)?([A-Za-z0-9_.+-]+)"),
    ("dpkg-shlibdeps", "/usr/share/perl5/Dpkg/Shlibs/Objdump.pm", r"return '([a-z][a-z0-9-]*)';"),
]

# Scripts that are run by hand and never by the tests, with what they need.
HAND_ONLY = {
    "scripts/make_gpt2_reference.py": "python3-torch (writes the GPT-2 reference fixtures)",
    "scripts/bench_pytorch_gpt2.py": "python3-torch (PyTorch timing for comparison)",
}


def read_list(path):
    with open(path) as f:
        return [l.split("#", 1)[0].strip() for l in f if l.split("#", 1)[0].strip()]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))


def outside_tree(path, build):
    p = os.path.realpath(path)
    return not (p.startswith(ROOT + os.sep) or p.startswith(os.path.realpath(build) + os.sep))


def used_files(build):
    """Maps each used system file to where the use was seen."""
    used = {}

    def add(path, why):
        if os.path.isabs(path) and os.path.exists(path) and outside_tree(path, build):
            used.setdefault(os.path.normpath(path), why)

    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.-]+):(FILEPATH|PATH)=(.+)$", line.strip())
            if m and not m.group(1).startswith(("CMAKE_INSTALL", "CMAKE_HOME")) and m.group(3) != "/":
                add(m.group(3), "CMakeCache " + m.group(1))
    for dep in glob.glob(os.path.join(build, "**", "*.o.d"), recursive=True):
        with open(dep) as f:
            for tok in f.read().replace("\\\n", " ").split():
                if tok.startswith("/usr/") and (tok.endswith((".h", ".hpp", ".hh")) or "/include/" in tok):
                    add(tok, "compiled by " + os.path.relpath(dep, build))
    for link in glob.glob(os.path.join(build, "**", "link.txt"), recursive=True):
        with open(link) as f:
            for tok in f.read().split():
                tok = tok.split(",")[-1]
                if tok.startswith("/") and re.search(r"\.(so|a)(\.[0-9.]+)?$", tok):
                    add(tok, "linked by " + os.path.relpath(link, build))
    for tool in TOOLS:
        path = tool if os.path.isabs(tool) else run(["sh", "-c", "command -v " + tool]).stdout.strip()
        if not path or not os.path.exists(path):
            used.setdefault("missing-program:" + tool, "run by the build or the tests")
        else:
            add(path, "program")
    for prog, why in programs_run_by_tools().items():
        if prog.startswith("missing-program:"):
            used.setdefault(prog, why)
            continue
        path = run(["sh", "-c", "command -v " + prog]).stdout.strip()
        if not path or not os.path.exists(path):
            used.setdefault("missing-program:" + prog, why)
        else:
            add(path, why)
    for pattern, why in RUNTIME_FILES.items():
        found = glob.glob(pattern)
        if not found:
            used.setdefault("missing-program:" + pattern, why)
        for path in found:
            add(path, why)
    for path, why in python_modules().items():
        if path.startswith("missing-python:"):
            used.setdefault(path, why)
        else:
            add(path, why)
    return used


def programs_run_by_tools():
    """Each program a tool of TOOL_CALLS starts, mapped to which tool and file say so."""
    progs = {}
    for tool, pattern, call in TOOL_CALLS:
        files = sorted(glob.glob(pattern))
        if not files:
            progs.setdefault("missing-program:" + pattern, "the source of " + tool)
        for path in files:
            with open(path, errors="replace") as f:
                for m in re.finditer(call, f.read()):
                    progs.setdefault(m.group(1), f"run by {tool} ({path})")
    return progs


def python_modules():
    """Top-level modules imported by the scripts and tests (and the python3 -c one-liners
    in the C++ tests), mapped to the file /usr/bin/python3 loads them from."""
    sources = glob.glob(os.path.join(ROOT, "scripts", "*.py")) + glob.glob(os.path.join(ROOT, "tests", "**", "*.py"), recursive=True)
    # Google Benchmark's compare.py, which tests/bench/bench_test.cpp runs, and its package.
    sources += glob.glob("/usr/share/benchmark/compare.py") + glob.glob("/usr/share/benchmark/gbench/*.py")
    modules = {}
    for src in sources:
        rel = os.path.relpath(src, ROOT)
        if rel in HAND_ONLY:
            continue
        with open(src) as f:
            tree = ast.parse(f.read(), rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for n in node.names:
                    modules.setdefault(n.name.split(".")[0], rel)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.setdefault(node.module.split(".")[0], rel)
    for src in glob.glob(os.path.join(ROOT, "tests", "**", "*.cpp"), recursive=True):
        with open(src) as f:
            text = f.read()
        for m in re.finditer(r"python3 -c [\\\"']+([^\"']*)", text):
            for imp in re.finditer(r"\bimport ([A-Za-z0-9_., ]+?)(?:;|$|\\)", m.group(1)):
                for name in imp.group(1).split(","):
                    modules.setdefault(name.strip().split(".")[0].split(" ")[0], os.path.relpath(src, ROOT))
    local = {os.path.splitext(os.path.basename(p))[0] for p in sources} | {"gbench"}
    out = {}
    code = ("import importlib.util, sys\n"
            "for n in sys.argv[1:]:\n"
            "    try:\n"
            "        s = importlib.util.find_spec(n)\n"
            "    except Exception:\n"
            "        s = None\n"
            "    o = None if s is None else s.origin\n"
            "    print(n, o if o and o not in ('built-in', 'frozen') else ('-' if s else '!'))\n")
    names = sorted(n for n in modules if n not in local and n != "__future__")
    res = run(["/usr/bin/python3", "-c", code] + names)
    for line in res.stdout.splitlines():
        name, origin = line.split(" ", 1)
        if origin == "!":
            out["missing-python:" + name] = "imported by " + modules[name]
        elif origin != "-":
            out[origin] = "python module " + name + " imported by " + modules[name]
    return out


def owners(paths):
    """dpkg -S for many paths at once. The path as used decides (a -dev package's
    libfoo.so link, not the runtime library it points to); its /usr-merged twin
    and then its resolved target are asked only when dpkg knows the path not."""
    def merged_twin(a):
        if a.startswith("/usr/"):
            return a[4:]
        return "/usr" + a if a.startswith(("/lib", "/bin", "/sbin")) else a

    candidates = {}
    for p in paths:
        real = os.path.realpath(p)
        candidates[p] = list(dict.fromkeys([p, merged_twin(p), real, merged_twin(real)]))
    allpaths = sorted({a for alts in candidates.values() for a in alts})
    found = {}
    for i in range(0, len(allpaths), 500):
        res = run(["dpkg-query", "-S"] + allpaths[i:i + 500])
        for line in res.stdout.splitlines():
            if ": " not in line or line.startswith("diversion "):
                continue
            pkgs, path = line.split(": ", 1)
            found.setdefault(path, set()).update(x.strip().split(":")[0] for x in pkgs.split(","))
    return {p: next((found[a] for a in alts if a in found), set()) for p, alts in candidates.items()}


def base_packages():
    res = run(["dpkg-query", "-W", "-f=${Package} ${Essential} ${Priority}\n"])
    return {l.split()[0] for l in res.stdout.splitlines() if len(l.split()) >= 3 and (l.split()[1] == "yes" or l.split()[2] == "required")}


_DEPENDS = {}


def direct_depends(packages):
    """Each package's Depends and Pre-Depends as apt would satisfy them: the first
    alternative of an "a | b" group, and the first provider of a virtual package
    (apt-cache depends lists every alternative; counting them all would cover a
    file through a package apt never installs)."""
    todo = sorted(p for p in packages if p not in _DEPENDS)
    if todo:
        res = run(["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks",
                   "--no-replaces", "--no-enhances"] + todo)
        if res.returncode != 0 and not res.stdout:
            sys.exit("check_packages: apt-cache depends failed (run apt-get update first): " + res.stderr.strip())
        current, in_alternatives, virtual = None, False, False
        for line in res.stdout.splitlines():
            if not line.startswith(" "):
                current = line.strip().split(":")[0]
                _DEPENDS.setdefault(current, [])
                in_alternatives = virtual = False
            elif line.startswith("    "):  # a provider of the virtual package above
                if virtual:
                    _DEPENDS[current].append(line.strip().split(":")[0])
                    virtual = False
            else:
                kind, _, name = line.strip().partition(": ")
                first_of_group = not in_alternatives
                in_alternatives = kind.startswith("|")
                virtual = False
                if first_of_group and kind.lstrip("|") in ("Depends", "PreDepends"):
                    if name.startswith("<"):
                        virtual = True
                    else:
                        _DEPENDS[current].append(name.split(":")[0])
        for p in todo:
            _DEPENDS.setdefault(p, [])
    return {p: _DEPENDS[p] for p in packages}


def closure(packages):
    out, frontier = set(), set(packages)
    while frontier:
        out |= frontier
        deps = direct_depends(frontier)
        frontier = {d for ds in deps.values() for d in ds} - out
    return out


def uncovered(used, own, listed, base):
    covered = closure(listed) | base
    bad = []
    for path, why in sorted(used.items()):
        if path.startswith(("missing-program:", "missing-python:")):
            bad.append(f"{path.split(':', 1)[1]} ({why}) is not installed: add its package to scripts/packages.txt")
            continue
        pk = own.get(path, set())
        if not pk:
            continue  # not from a package (generated, or installed by hand): nothing apt can give
        if not pk & covered:
            bad.append(f"{path} ({why}) comes from {', '.join(sorted(pk))}, which scripts/packages.txt does not "
                       f"pull in through Depends: add it to scripts/packages.txt")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--packages", default=os.path.join(ROOT, "scripts", "packages.txt"))
    ap.add_argument("--drop", action="append", default=[])
    ap.add_argument("--each", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.build, "CMakeCache.txt")):
        sys.exit(f"check_packages: {a.build}/CMakeCache.txt not found: configure and build first")
    listed = [p for p in read_list(a.packages) if p not in a.drop]
    used = used_files(a.build)
    own = owners([p for p in used if not p.startswith("missing-")])
    base = base_packages()
    if not a.each:
        bad = uncovered(used, own, listed, base)
        for line in bad:
            print(line)
        print(f"{len(used)} used files and programs, {len(listed)} listed packages: "
              f"{'complete' if not bad else str(len(bad)) + ' not covered'}")
        return 1 if bad else 0
    problems = 0
    for p in listed:
        rest = [q for q in listed if q != p]
        if uncovered(used, own, rest, base):
            print(f"{p}: needed (dropping it leaves files uncovered)")
        elif p in closure(rest) or p in base:
            print(f"{p}: implied by the others' Depends (listed for clarity)")
        else:
            print(f"{p}: used by nothing the check sees: remove it from scripts/packages.txt or teach the check its use")
            problems += 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
