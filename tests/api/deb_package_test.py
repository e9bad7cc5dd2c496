#!/usr/bin/env python3
"""`cpack -G DEB` of the build, checked as dpkg would see it.

Builds the package into a temporary directory and checks that it installs below
/usr what `cmake --install` installs (programs, one versioned library, public
headers, CMake and pkg-config files, the Python module where /usr's Python
looks, the NPU device files, man page and completion), and that its Depends
name the package of every shared library a shipped ELF file needs (as this
machine's dpkg knows them) and the Python the module was built for. Installing
it into a bare Debian root is scripts/check-deb.sh (too slow for every run).

deb_package_test.py BUILD_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

build = sys.argv[1]
failures = []


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


for tool in ("cpack", "dpkg-deb", "dpkg-shlibdeps"):
    if shutil.which(tool) is None:
        sys.exit(f"deb_package_test: {tool} is missing (apt-get install cmake dpkg-dev)")

tmp = tempfile.mkdtemp(prefix="flopwatt-deb-")
try:
    run(["cpack", "-G", "DEB", "-B", tmp], cwd=build)
    debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
    check(len(debs) == 1, f"one .deb made (found {debs})")
    deb = os.path.join(tmp, debs[0])
    # dpkg-deb -c: mode owner size date time path [-> target]
    files = sorted(l.split(None, 5)[5].split(" -> ")[0].lstrip(".") for l in run(["dpkg-deb", "-c", deb]).splitlines())
    control = {k: run(["dpkg-deb", "-f", deb, k]).strip() for k in ("Package", "Version", "Depends", "Architecture")}
    check(control["Package"] == "flopwatt", f"package name flopwatt ({control['Package']})")
    check(re.fullmatch(r"\d+\.\d+\.\d+", control["Version"]) is not None, f"version {control['Version']}")

    check(not [f for f in files if f.startswith("/usr/local")], "nothing below /usr/local")
    check(not [f for f in files if re.match(r"/usr/lib/python3\.\d+/", f)],
          "no /usr/lib/python3.N/ (below /usr, Python only searches /usr/lib/python3/dist-packages)")
    for want in ("/usr/bin/flopwatt", "/usr/bin/flopwatt-setup-permissions", "/usr/include/flopwatt/meter.h", "/usr/include/flopwatt/benchmark.h",
                 "/usr/lib/cmake/flopwatt/flopwatt-config.cmake", "/usr/lib/pkgconfig/flopwatt.pc",
                 "/usr/share/man/man1/flopwatt.1.gz", "/usr/share/bash-completion/completions/flopwatt"):
        check(want in files, f"ships {want}")
    check(any(re.fullmatch(r"/usr/lib/libflopwatt\.so\.\d+", f) for f in files), "ships libflopwatt.so.N")
    check(any(f.startswith("/usr/share/flopwatt/npu/devices/") and f.endswith(".json") for f in files),
          "ships the NPU device files")
    headers = [f for f in files if f.startswith("/usr/include/") and not f.endswith("/")]
    check(all(f.startswith("/usr/include/flopwatt/") for f in headers), f"only flopwatt/ headers ({headers})")

    # The Python module: where Debian's /usr Python imports from, for the
    # version the package depends on.
    module = os.path.join(build, "python")
    built = [f for f in os.listdir(module)] if os.path.isdir(module) else []
    depends = [d.strip() for d in control["Depends"].split(",")]
    if built:
        check(f"/usr/lib/python3/dist-packages/{built[0]}" in files,
              f"Python module in /usr/lib/python3/dist-packages ({[f for f in files if 'python' in f]})")
        minor = sys.version_info.minor
        tag = sysconfig.get_config_var("SOABI") or ""
        if tag and tag in built[0]:
            check(f"python3 (>= 3.{minor})" in depends and f"python3 (<< 3.{minor + 1})" in depends,
                  f"Depends bounds python3 to 3.{minor} ({control['Depends']})")

    # Every shared library a shipped ELF file needs comes from a package in
    # Depends (or from the package itself).
    root = os.path.join(tmp, "root")
    run(["dpkg-deb", "-x", deb, root])
    names = {re.split(r"\s", d)[0] for d in depends}
    shipped = {os.path.basename(f) for f in files}
    needs = []
    for f in files:
        path = os.path.join(root, f.lstrip("/"))
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                continue
        for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run(["readelf", "-d", path])):
            if lib not in shipped:
                needs.append((os.path.basename(f), lib))
    # One dpkg -S for all of them (it reads the whole file database per call).
    found = subprocess.run(["dpkg", "-S"] + sorted({f"*/{lib}" for _, lib in needs}), capture_output=True, text=True)
    owners = {}
    for line in found.stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        for pkg in pkgs.split(", "):
            owners.setdefault(os.path.basename(path), set()).add(pkg.split(":")[0])
    uncovered = {lib for _, lib in needs if owners.get(lib) and not owners[lib] & names}
    if uncovered:
        # A Depends entry also covers the packages it depends on itself (as
        # Debian's libopenblas0 stands for libopenblas0-pthread | -openmp | -serial).
        for name in list(names):
            q = subprocess.run(["apt-cache", "depends", name], capture_output=True, text=True)
            names |= set(re.findall(r"^\s*\|?Depends: (\S+)", q.stdout, re.M))
    missing = {f"{exe} needs {lib} from {sorted(owners[lib])}" for exe, lib in needs
               if lib in uncovered and not owners[lib] & names}
    check(not missing, f"Depends covers every NEEDED library ({sorted(missing)})")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    sys.exit(f"{len(failures)} check(s) failed: {failures}")
print("deb package: all checks passed")
