#!/usr/bin/env python3
"""The installed artefacts, used as a user would use them.

Installs the build into a temporary prefix (cmake --install), checks what a
user's project finds there, then builds and runs the four examples/ against
that prefix alone: a C++ program through find_package, the same through
pkg-config, a Google Benchmark suite with flopwatt's counters, and a Python
script. Each runs on a fixture laptop tree with an external meter at a
constant 20 W, so the energy each reports is known.

installed_test.py BUILD_DIR SOURCE_DIR
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

build, source = sys.argv[1], sys.argv[2]
examples = os.path.join(source, "examples")
fixture = os.path.join(source, "tests", "fixtures", "power", "laptop")
failures = []
WATTS = 20.0


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def near(value, want, rel):
    return value is not None and abs(value - want) <= rel * want


tmp = tempfile.mkdtemp(prefix="flopwatt-installed-")
try:
    prefix = os.path.join(tmp, "prefix")
    run(["cmake", "--install", build, "--prefix", prefix])
    env = dict(os.environ)
    for k in ("FLOPWATT_SYSFS_ROOT", "FLOPWATT_NPU_DEVICES", "PKG_CONFIG_PATH", "PYTHONPATH", "LD_LIBRARY_PATH"):
        env.pop(k, None)
    # The build's own compiler flags (a sanitizer build's library needs its
    # runtimes in the program that loads it); empty for a normal build.
    cxxflags = os.environ.get("FLOPWATT_EXAMPLE_CXXFLAGS", "").strip()
    ldflags = os.environ.get("FLOPWATT_EXAMPLE_LDFLAGS", "").strip()
    cmake_flags = [f"-DCMAKE_CXX_FLAGS={cxxflags}", f"-DCMAKE_EXE_LINKER_FLAGS={ldflags}"]
    preload = []
    if "-fsanitize=" in cxxflags:
        for rt in ("libasan.so", "libubsan.so"):
            path = subprocess.run(["c++", f"-print-file-name={rt}"], capture_output=True, text=True).stdout.strip()
            if os.path.isabs(path):
                preload.append(os.path.realpath(path))

    # What the install holds: programs, one versioned library, public headers only.
    libdir = "lib"
    for f in ("bin/flopwatt", "bin/flopwatt-setup-permissions", "include/flopwatt/meter.h", "include/flopwatt/benchmark.h",
              f"{libdir}/cmake/flopwatt/flopwatt-config.cmake", f"{libdir}/cmake/flopwatt/flopwatt-config-version.cmake",
              f"{libdir}/pkgconfig/flopwatt.pc", "share/flopwatt/npu/devices",
              "share/man/man1/flopwatt.1.gz", "share/bash-completion/completions/flopwatt"):
        check(os.path.exists(os.path.join(prefix, f)), f"installed {f}")
    headers = sorted(os.listdir(os.path.join(prefix, "include")))
    check(headers == ["flopwatt"], f"include/ holds only flopwatt/ (found {headers})")
    libs = sorted(os.listdir(os.path.join(prefix, libdir)))
    sonames = [l for l in libs if re.fullmatch(r"libflopwatt\.so\.\d+", l)]
    check(len(sonames) == 1, f"one libflopwatt.so.N (found {libs})")
    if sonames:
        dyn = run(["readelf", "-d", os.path.join(prefix, libdir, sonames[0])])
        check(f"[{sonames[0]}]" in dyn, f"SONAME is {sonames[0]}")
        syms = run(["nm", "-D", "--defined-only", "-C", os.path.join(prefix, libdir, sonames[0])])
        leaked = [l for l in syms.splitlines() if re.search(r"\b(fmt|nlohmann|CLI)::", l)]
        check(not leaked, f"no fmt/nlohmann/CLI11 symbols exported ({len(leaked)} found)")
    # The man page and completion come from the same option tables as --help.
    manpath = os.path.join(prefix, "share/man/man1/flopwatt.1.gz")
    man = gzip.open(manpath, "rt").read() if os.path.exists(manpath) else ""
    check(r"\-\-sysfs\-root" in man and ".SH COMMANDS" in man and "measure" in man, "man page lists the commands and options")

    # An external meter at a constant 20 W covering the next minute.
    log = os.path.join(tmp, "meter.log")
    with open(log, "w") as f:
        f.write("# clock: realtime\n")
        now = time.time()
        t = now - 5
        while t < now + 120:
            f.write(f"{t:.3f},{WATTS}\n")
            t += 0.1
    power = ["--power-log", log, "--sysfs-root", fixture]

    def window_lines(out):
        return {m.group(1): (float(m.group(2)), float(m.group(3)), float(m.group(4)), m.group(5))
                for m in re.finditer(r"^(\S+) ([\d.]+) s ([\d.]+) J ([\d.]+) W headline (\S+)", out, re.M)}

    # 1. find_package(flopwatt CONFIG)
    b = os.path.join(tmp, "cpp")
    run(["cmake", "-S", os.path.join(examples, "cpp_meter"), "-B", b, f"-DCMAKE_PREFIX_PATH={prefix}",
         "-DCMAKE_BUILD_RPATH=" + os.path.join(prefix, libdir)] + cmake_flags, env=env)
    run(["cmake", "--build", b], env=env)
    out = run([os.path.join(b, "meter_example")] + power, env=env)
    w = window_lines(out)
    for name in ("inner", "outer"):
        ok = name in w and near(w[name][2], WATTS, 0.05) and near(w[name][1], WATTS * w[name][0], 0.1)
        check(ok, f"find_package example: '{name}' window at {WATTS} W, J = W x s ({w.get(name)})")
    check("outer" in w and "inner" in w and w["outer"][0] > w["inner"][0] + 0.15,
          "find_package example: the outer window holds the inner one")
    check(w.get("inner", (0, 0, 0, ""))[3] == "external:meter", "the headline is the external meter")

    # 2. pkg-config alone
    penv = dict(env, PKG_CONFIG_PATH=os.path.join(prefix, libdir, "pkgconfig"), CXXFLAGS=f"{cxxflags} {ldflags}")
    exe = os.path.join(tmp, "pc_example")
    run(["sh", os.path.join(examples, "pkg_config", "build.sh"), exe], env=penv)
    w = window_lines(run([exe] + power, env=env))
    check("inner" in w and near(w["inner"][2], WATTS, 0.05), f"pkg-config example at {WATTS} W ({w.get('inner')})")

    # 3. A Google Benchmark suite with flopwatt's counters
    b = os.path.join(tmp, "gbench")
    run(["cmake", "-S", os.path.join(examples, "gbench"), "-B", b, f"-DCMAKE_PREFIX_PATH={prefix}",
         "-DCMAKE_BUILD_RPATH=" + os.path.join(prefix, libdir)] + cmake_flags, env=env)
    run(["cmake", "--build", b], env=env)
    out = run([os.path.join(b, "gbench_example")] + power + ["--benchmark_format=json"], env=env)
    bench = json.loads(out)["benchmarks"][0]
    check(near(bench.get("W"), WATTS, 0.05), f"benchmark counter W = {bench.get('W')}")
    j_iter, secs = bench.get("J/iter"), bench.get("real_time", 0) * 1e-9  # real_time in ns per iteration
    check(near(j_iter, WATTS * secs, 0.15), f"benchmark counter J/iter = {j_iter} ~ {WATTS} W x {secs:.3g} s")
    check(bench.get("FLOP/J") and bench.get("FLOP/s") and near(bench["FLOP/J"], bench["FLOP/s"] / WATTS, 0.15),
          f"FLOP/J = FLOP/s / W ({bench.get('FLOP/J')}, {bench.get('FLOP/s')})")

    # 4. Python: the module where the prefix's Python path holds it
    pydir = [os.path.join(root, d) for root, dirs, _ in os.walk(os.path.join(prefix, "lib")) for d in dirs
             if d in ("dist-packages", "site-packages")]
    check(len(pydir) == 1, f"one Python package dir under the prefix ({pydir})")
    if pydir:
        # The installed module's Python: its path, and the sanitizers' runtimes when the build has them.
        pyenv = dict(env, PYTHONPATH=pydir[0], **({"LD_PRELOAD": " ".join(preload)} if preload else {}))
        out = run([sys.executable, os.path.join(examples, "python", "train_step.py"), "--numpy", "--steps", "2"] + power,
                  env=pyenv)
        w = window_lines(out.replace("step ", "step_"))
        check(len(w) == 2 and all(near(v[2], WATTS, 0.05) for v in w.values()), f"python windows at {WATTS} W ({w})")
        # The reprs say what a window and a meter hold, for a user at the interpreter.
        code = ("import flopwatt, sys, time\n"
                "m = flopwatt.Meter(power_log=sys.argv[1], sysfs_root=sys.argv[2])\n"
                "w = m.window('w', 1e9)\n"
                "print(repr(m)); print(repr(w))\n"
                "with w: time.sleep(0.3)\n"
                "print(repr(w))\n")
        out = run([sys.executable, "-c", code, power[1], power[3]], env=pyenv)
        lines = out.strip().splitlines()
        check(len(lines) == 3 and lines[0].startswith("<flopwatt.Meter sampling") and "not entered" in lines[1]
              and lines[2].startswith("<flopwatt.Window 'w' ") and " J, " in lines[2] and "GFLOP/J from " in lines[2],
              f"reprs of Meter and Window ({lines})")
        # The push options reach the Meter: its run_id, and a bad gateway named in the error.
        code = ("import flopwatt, sys\n"
                "m = flopwatt.Meter(power_log=sys.argv[1], sysfs_root=sys.argv[2], run_id='nightly-7')\n"
                "print(m.run_id)\n"
                "try:\n"
                "    flopwatt.Meter(power_log=sys.argv[1], sysfs_root=sys.argv[2], pushgateway='gw:9091')\n"
                "except Exception as e:\n"
                "    print(e)\n")
        out = run([sys.executable, "-c", code, power[1], power[3]], env=pyenv)
        lines = out.strip().splitlines()
        check(len(lines) == 2 and lines[0] == "nightly-7" and lines[1].startswith("MeterOptions::pushgateway gw:9091: "),
              f"Python Meter's push options ({lines})")
        # The default prefix's module directory is one the system Python searches.
        rel = os.path.relpath(pydir[0], prefix)
        default = os.path.join("/usr/local", rel)
        check(default in sys.path or os.path.join("/usr", rel) in sys.path,
              f"{rel} under /usr/local is on the system Python's path")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
