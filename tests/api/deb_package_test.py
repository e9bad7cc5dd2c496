#!/usr/bin/env python3
"""`cpack -G DEB` of the build, checked as dpkg and lintian see it.

Builds the packages into a temporary directory and checks the split
(cmake/flopwatt_package.cmake): flopwatt (programs, man page, completion, NPU
device files), libflopwattN (the library named by its SONAME and nothing else),
libflopwatt-dev (headers, the libflopwatt.so link, CMake and pkg-config files)
and python3-flopwatt (the module where /usr's Python looks). Each package holds
its own files and nothing else, below /usr, with a DEP-5 copyright and a
changelog in /usr/share/doc/<package>/; the man page is gzipped without a name
or time stamp; -dev and python3- depend on the library at exactly this
version; every package's Depends name the package of every shared library its
ELF files need (as this machine's dpkg knows them, or the sibling package that
ships it); the module's Depends bound python3 to the minor version it was
built for; cpack prints no CMake warning; lintian finds no error (its warnings
are printed). Installing them into a bare Debian root is scripts/check-deb.sh
(too slow for every run).

deb_package_test.py BUILD_DIR
"""
import gzip
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


for tool, pkg in (("cpack", "cmake"), ("dpkg-deb", "dpkg"), ("dpkg-shlibdeps", "dpkg-dev"), ("lintian", "lintian")):
    if shutil.which(tool) is None:
        sys.exit(f"deb_package_test: {tool} is missing (apt-get install {pkg}; scripts/packages.txt lists it)")

# The library package is named after the SONAME the build gives the library.
sonames = [f for f in os.listdir(os.path.join(build, "lib")) if re.fullmatch(r"libflopwatt\.so\.\d+", f)]
if len(sonames) != 1:
    sys.exit(f"deb_package_test: expected one libflopwatt.so.N in {build}/lib, found {sonames}")
soname = sonames[0]
LIB = "libflopwatt" + soname.rsplit(".", 1)[1]
module_dir = os.path.join(build, "python")
module = os.listdir(module_dir)[0] if os.path.isdir(module_dir) and os.listdir(module_dir) else None
expected = {"flopwatt", LIB, "libflopwatt-dev"} | ({"python3-flopwatt"} if module else set())


def owner(path):
    """The one package that should hold PATH (None: no package should)."""
    m = re.match(r"/usr/share/doc/([^/]+)/(copyright|changelog\.gz)$", path)
    if m:
        return m.group(1)
    if re.match(r"/usr/bin/|/usr/share/man/man1/flopwatt\.1\.gz$|/usr/share/bash-completion/completions/flopwatt$|"
                r"/usr/share/flopwatt/npu/devices/[\w/.-]+\.json$", path):
        return "flopwatt"
    if re.match(rf"/usr/lib/{re.escape(soname)}(\.[0-9.]+)?$", path):
        return LIB
    if re.match(r"/usr/lib/libflopwatt\.so$|/usr/include/flopwatt/[^/]+\.h$|/usr/lib/cmake/flopwatt/[^/]+\.cmake$|"
                r"/usr/lib/pkgconfig/flopwatt\.pc$", path):
        return "libflopwatt-dev"
    if module and path == f"/usr/lib/python3/dist-packages/{module}":
        return "python3-flopwatt"
    return None


tmp = tempfile.mkdtemp(prefix="flopwatt-deb-")
try:
    r = subprocess.run(["cpack", "-G", "DEB", "-B", tmp], cwd=build, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): cpack -G DEB\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    warnings = re.findall(r"^CMake (?:Warning|Deprecation Warning).*$", r.stdout + r.stderr, re.M)
    check(not warnings, f"cpack prints no CMake warning ({warnings})")

    debs = {}
    for f in sorted(os.listdir(tmp)):
        if f.endswith(".deb"):
            debs[run(["dpkg-deb", "-f", os.path.join(tmp, f), "Package"]).strip()] = os.path.join(tmp, f)
    check(set(debs) == expected, f"packages {sorted(expected)} (made {sorted(debs)})")

    files, control = {}, {}
    for name, deb in debs.items():
        # dpkg-deb -c: mode owner size date time path [-> target]; directories end in /
        listing = [l.split(None, 5)[5].split(" -> ")[0].lstrip(".") for l in run(["dpkg-deb", "-c", deb]).splitlines()]
        files[name] = sorted(f for f in listing if not f.endswith("/"))
        control[name] = {k: run(["dpkg-deb", "-f", deb, k]).strip() for k in ("Version", "Depends", "Maintainer", "Source")}
    versions = {c["Version"] for c in control.values()}
    check(len(versions) == 1 and re.fullmatch(r"\d+\.\d+\.\d+", next(iter(versions), "")) is not None,
          f"one version x.y.z for all ({versions})")
    version = next(iter(versions), "")
    check(all(re.fullmatch(r"[^<>]+ <[^<>@ ]+@[^<>@ ]+>", c["Maintainer"]) for c in control.values()),
          f"Maintainer is 'Name <email>' ({ {c['Maintainer'] for c in control.values()} })")
    check(all(c["Source"] == "flopwatt" for c in control.values()), "all built from source flopwatt")

    # The split: each file in the package that should hold it, and each package
    # holds its own copyright and changelog.
    for name, fs in files.items():
        strays = [f for f in fs if owner(f) != name]
        check(not strays, f"{name} holds only its own files (strays: {strays})")
        check(f"/usr/share/doc/{name}/changelog.gz" in fs, f"{name} ships /usr/share/doc/{name}/changelog.gz")
    shipped = {f: n for n, fs in files.items() for f in fs}
    for want in ("/usr/bin/flopwatt", "/usr/bin/flopwatt-setup-permissions", "/usr/share/man/man1/flopwatt.1.gz",
                 "/usr/share/bash-completion/completions/flopwatt", f"/usr/lib/{soname}", "/usr/lib/libflopwatt.so",
                 "/usr/include/flopwatt/meter.h", "/usr/include/flopwatt/benchmark.h",
                 "/usr/lib/cmake/flopwatt/flopwatt-config.cmake", "/usr/lib/pkgconfig/flopwatt.pc") + (
                     (f"/usr/lib/python3/dist-packages/{module}",) if module else ()):
        check(want in shipped, f"{owner(want)} ships {want} ({shipped.get(want)})")
    check(any(f.startswith("/usr/share/flopwatt/npu/devices/") for f in files.get("flopwatt", [])),
          "flopwatt ships the NPU device files")
    check(any(re.fullmatch(rf"/usr/lib/{re.escape(soname)}\.[0-9.]+", f) for f in files.get(LIB, [])),
          f"{LIB} ships the versioned {soname}.x.y.z")

    root = os.path.join(tmp, "root")
    for name, deb in debs.items():
        os.makedirs(os.path.join(root, name))
        run(["dpkg-deb", "-x", deb, os.path.join(root, name)])

    def path_in(name, f):
        return os.path.join(root, name, f.lstrip("/"))

    # Man pages gzipped with -n: no file name, time stamp 0 (reproducible bytes).
    for name, fs in files.items():
        for f in fs:
            if f.startswith("/usr/share/man/"):
                with open(path_in(name, f), "rb") as fh:
                    head = fh.read(10)
                check(f.endswith(".gz") and head[:2] == b"\x1f\x8b" and not head[3] & 0x08 and head[4:8] == b"\0\0\0\0",
                      f"{f} is gzipped without name or time stamp")
    # DEP-5 copyright in every package.
    for name in debs:
        path = path_in(name, f"/usr/share/doc/{name}/copyright")
        text = open(path).read() if os.path.isfile(path) else ""
        check(text.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
              and re.search(r"^Files: \*$", text, re.M) and re.search(r"^Copyright: \S", text, re.M)
              and re.search(r"^License: \S", text, re.M), f"{name} ships a DEP-5 /usr/share/doc/{name}/copyright")

    # Depends between the packages, at exactly this version.
    depends = {n: [d.strip() for d in c["Depends"].split(",") if d.strip()] for n, c in control.items()}
    for name in ("libflopwatt-dev", "python3-flopwatt"):
        if name in debs:
            check(f"{LIB} (= {version})" in depends[name], f"{name} depends on {LIB} (= {version}) ({control[name]['Depends']})")
    check(not [d for d in depends.get(LIB, []) + depends.get("flopwatt", []) if "flopwatt" in d],
          "flopwatt and the library depend on no other package of this build")
    if LIB in debs:
        shlibs = subprocess.run(["dpkg-deb", "-I", debs[LIB], "shlibs"], capture_output=True, text=True).stdout
        check(re.search(rf"^libflopwatt {soname.rsplit('.', 1)[1]} {LIB} \(>= {re.escape(version)}\)$", shlibs, re.M) is not None,
              f"{LIB} has a shlibs file naming itself ({shlibs.strip()})")

    # The Python module: for the version the package depends on.
    if module and "python3-flopwatt" in debs:
        minor = sys.version_info.minor
        tag = sysconfig.get_config_var("SOABI") or ""
        if tag and tag in module:
            check(f"python3 (>= 3.{minor})" in depends["python3-flopwatt"] and f"python3 (<< 3.{minor + 1})" in depends["python3-flopwatt"],
                  f"python3-flopwatt's Depends bound python3 to 3.{minor} ({control['python3-flopwatt']['Depends']})")

    # Every shared library a package's ELF files need comes from a package in its
    # Depends: a sibling that ships it, or what dpkg says provides it here.
    needs = []
    for name, fs in files.items():
        own = {os.path.basename(f) for f in fs}
        for f in fs:
            path = path_in(name, f)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            with open(path, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run(["readelf", "-d", path])):
                if lib not in own:
                    needs.append((name, os.path.basename(f), lib))
    siblings = {os.path.basename(f): n for n, fs in files.items() for f in fs}
    missing = set()
    for name, exe, lib in needs:
        if lib in siblings and siblings[lib] not in {re.split(r"\s", d)[0] for d in depends[name]}:
            missing.add(f"{name}: {exe} needs {lib} from {siblings[lib]}")
    # One dpkg -S for all the others (it reads the whole file database per call).
    outside = sorted({f"*/{lib}" for _, _, lib in needs if lib not in siblings})
    found = subprocess.run(["dpkg", "-S"] + outside, capture_output=True, text=True) if outside else None
    owners = {}
    for line in (found.stdout.splitlines() if found else []):
        pkgs, _, path = line.partition(": ")
        for pkg in pkgs.split(", "):
            owners.setdefault(os.path.basename(path), set()).add(pkg.split(":")[0])
    for name in debs:
        names = {re.split(r"\s", d)[0] for d in depends[name]}
        uncovered = {lib for n, _, lib in needs if n == name and owners.get(lib) and not owners[lib] & names}
        if uncovered:
            # A Depends entry also covers the packages it depends on itself (as
            # Debian's libopenblas0 stands for libopenblas0-pthread | -openmp | -serial).
            for dep in list(names):
                q = subprocess.run(["apt-cache", "depends", dep], capture_output=True, text=True)
                names |= set(re.findall(r"^\s*\|?Depends: (\S+)", q.stdout, re.M))
        missing |= {f"{name}: {exe} needs {lib} from {sorted(owners[lib])}" for n, exe, lib in needs
                    if n == name and lib in uncovered and not owners[lib] & names}
    check(not missing, f"each package's Depends cover every NEEDED library ({sorted(missing)})")

    # lintian: errors fail, warnings are shown. --no-cfg: the same checks whoever runs it.
    lint = subprocess.run(["lintian", "--no-cfg", "--tag-display-limit", "0", "-j", "2"] + sorted(debs.values()),
                          capture_output=True, text=True)
    tags = [l for l in lint.stdout.splitlines() if re.match(r"[EWIPXO]: ", l)]
    errors = [l for l in tags if l.startswith("E: ")]
    for l in tags:
        print("     lintian " + l)
    # As root it says so on stderr; anything else there is lintian failing to run.
    stderr = "\n".join(l for l in lint.stderr.splitlines() if "running with root privileges" not in l).strip()
    check(lint.returncode in (0, 1) and not errors and not stderr,
          f"lintian reports no errors ({len(errors)} errors, {sum(l.startswith('W: ') for l in tags)} warnings"
          f"{'; stderr: ' + stderr[-500:] if stderr else ''})")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    sys.exit(f"{len(failures)} check(s) failed: {failures}")
print("deb packages: all checks passed")
