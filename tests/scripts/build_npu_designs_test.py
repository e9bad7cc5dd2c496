#!/usr/bin/python3
"""scripts/build-npu-designs --dry-run against a stand-in mlir-aie checkout: the
make commands use mlir-aie's MxKxN order, every design obeys the array and the
kernel's 2x2 micro-kernel expansion, and flopwatt accepts the manifest it
writes (and refuses it once N and K are swapped).

usage: build_npu_designs_test.py FLOPWATT_BINARY"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "build-npu-designs")
FLOPWATT = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def dry_run(aie, device, out):
    r = subprocess.run([sys.executable, SCRIPT, "--mlir-aie", aie, "--device", device, "--out", out,
                        "--flopwatt", FLOPWATT, "--dry-run"], capture_output=True, text=True)
    check(r.returncode == 0, f"{device}: exit {r.returncode}: {r.stderr}")
    makes = [l for l in r.stdout.splitlines() if l.startswith("make ")]
    manifest = json.loads(r.stdout[r.stdout.index("\n{") + 1:])
    return makes, manifest


def artifacts_report(art):
    r = subprocess.run([FLOPWATT, "npu", "info", "--json"], capture_output=True, text=True,
                       env=dict(os.environ, FLOPWATT_NPU_ARTIFACTS=art))
    return json.loads(r.stdout[r.stdout.index("\n{") + 1:])["artifacts"]


with tempfile.TemporaryDirectory() as tmp:
    aie = os.path.join(tmp, "mlir-aie")
    example = os.path.join(aie, "programming_examples", "basic", "matrix_multiplication", "whole_array")
    os.makedirs(example)
    # The lines of mlir-aie 02979d3d3ec1's makefiles the script checks for.
    common = os.path.join(os.path.dirname(example), "makefile-common")
    pinned_common = ("target_suffix?=${M}x${K}x${N}\nxclbin_target?=build/final_${target_suffix}.xclbin\n"
                     "insts_target?=build/insts_${target_suffix}.txt\ndevicename ?= npu\n"
                     "\taiecc.py --aie-generate-npu-insts --npu-insts-name=${insts_target:build/%=%}\n")
    with open(os.path.join(example, "Makefile"), "w") as f:
        f.write("n_aie_cols?=2\nb_col_maj?=0\ntarget_suffix=${M}x${K}x${N}_${m}x${k}x${n}_${n_aie_cols}c\n")
    # A revision whose makefile no longer names the instructions insts_<suffix>.txt is refused.
    with open(common, "w") as f:
        f.write(pinned_common.replace("insts_${target_suffix}.txt", "insts_${target_suffix}.bin"))
    r = subprocess.run([sys.executable, SCRIPT, "--mlir-aie", aie, "--device", "npu1", "--out", tmp,
                        "--flopwatt", FLOPWATT, "--dry-run"], capture_output=True, text=True)
    check(r.returncode == 2 and "makefile-common: no 'insts_target?=build/insts_${target_suffix}.txt'" in r.stderr,
          f"a changed makefile-common was not refused: exit {r.returncode}: {r.stderr}")
    with open(common, "w") as f:
        f.write(pinned_common)
    for device, two_t in (("npu1", 8), ("npu4", 16), ("npu6", 16)):
        out = os.path.join(tmp, device)
        makes, manifest = dry_run(aie, device, out)
        designs = manifest["designs"]
        check(len(designs) == 12 and len(makes) == 12, f"{device}: {len(designs)} designs, {len(makes)} makes (gpt2-124m has 12 GEMMs)")
        check(("devicename=npu2" in makes[0]) == (device != "npu1"), f"{device}: {makes[0]}")
        for d in designs:
            M, N, K, t, cols = d["M"], d["N"], d["K"], d["tile"], d["array"]["cols"]
            check(d["device"] == device, f"{d['name']}: device {d['device']}")
            check(d["xclbin"] == f"final_{M}x{K}x{N}_{t['m']}x{t['k']}x{t['n']}_{cols}c.xclbin", f"{d['name']}: {d['xclbin']}")
            check(M % (4 * t["m"]) == 0 and N % (cols * t["n"]) == 0 and K % t["k"] == 0, f"{d['name']}: not a multiple of the array")
            check(t["m"] % 8 == 0 and t["n"] % two_t == 0, f"{d['name']}: tile {t} breaks the 2x2 expansion")
        os.makedirs(out, exist_ok=True)
        for d in designs:
            for f in (d["xclbin"], d["insts"]):
                open(os.path.join(out, f), "w").close()
        with open(os.path.join(out, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        a = artifacts_report(out)
        check(a.get("designs") == 12, f"{device}: flopwatt did not accept the manifest: {a}")
        # Swap N and K of a design where they differ, keeping it a multiple of the array
        # so that only the file name can tell.
        d = next(d for d in designs if d["N"] != d["K"])
        d["N"], d["K"] = d["K"], d["N"]
        d["tile"]["k"], d["array"]["cols"], d["tile"]["n"] = 16, 1, 16
        with open(os.path.join(out, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        a = artifacts_report(out)
        check("MxKxN" in a.get("problem", ""), f"{device}: swapped N and K accepted: {a}")

# The copy step names binary words .bin even when the makefile called them .txt.
from importlib.machinery import SourceFileLoader
import importlib.util
spec = importlib.util.spec_from_loader("build_npu_designs", SourceFileLoader("build_npu_designs", SCRIPT))
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
with tempfile.TemporaryDirectory() as tmp:
    txt, bin_ = os.path.join(tmp, "insts_a.txt"), os.path.join(tmp, "insts_b.txt")
    with open(txt, "w") as f:
        f.write("00000011\n0x00000022\r\n")
    with open(bin_, "wb") as f:
        f.write(bytes([0x11, 0, 0, 0, 0x22, 0, 0, 0]))
    check(mod.insts_form(txt) == "text", "a hex text stream was not read as text")
    check(mod.insts_form(bin_) == "binary", "binary words named .txt were not read as binary")

for f in failures:
    print("FAIL:", f)
print("ok" if not failures else f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
