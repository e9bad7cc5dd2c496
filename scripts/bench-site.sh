#!/bin/sh
# `flopwatt site`'s speed, as a benchmark (not a test): N copies of the fixture
# campaign's mains run (9 GEMM rows) under new ids and dates, with a 10% step
# in the middle, imported into a fresh SQLite store; then the site's first
# build, a rebuild after one more run (only what changed is written), and a
# rebuild with nothing new.
#   scripts/bench-site.sh [N]     (N runs, default 2000)
set -eu
N=${1:-2000}
BIN=${FLOPWATT:-build/flopwatt}
SEED=tests/fixtures/runs/campaign-gemm-smoke/mains
W=$(mktemp -d /tmp/flopwatt-bench-site.XXXXXX)
trap 'rm -rf "$W"' EXIT
ms() { date +%s%3N; }

python3 - "$W" "$N" "$SEED" <<'PY'
import json, os, random, sys
w, n, seed_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seed = json.load(open(os.path.join(seed_dir, "run.json")))
random.seed(1)
def copy(i, name):
    r = json.loads(json.dumps(seed))
    r["run_id"] = "bench-%05d" % i
    r["context"]["started_utc"] = "2026-%02d-%02dT%02d:%02d:00Z" % (1 + i // 28 // 24 % 12, 1 + i // 24 % 28, i % 24, i % 60)
    step = 1.1 if i >= n // 2 else 1.0
    for m in r["measurements"]:
        f = step * random.uniform(0.97, 1.03)
        m["rep_times_s"] = [t * f for t in m.get("rep_times_s", [])]
        if m.get("flop_per_s"): m["flop_per_s"] /= f
    d = os.path.join(w, name, r["run_id"])
    os.makedirs(d)
    json.dump(r, open(os.path.join(d, "run.json"), "w"))
for i in range(n):
    copy(i, "runs")
copy(n, "one-more")
PY
t0=$(ms); "$BIN" store import "$W/runs" --store "$W/s.sqlite3" >/dev/null; t1=$(ms)
echo "import $N runs: $((t1 - t0)) ms"
t0=$(ms); "$BIN" site --out "$W/site" --store "$W/s.sqlite3"; t1=$(ms)
echo "first build, $N runs: $((t1 - t0)) ms"
"$BIN" store import "$W/one-more" --store "$W/s.sqlite3" >/dev/null
t0=$(ms); "$BIN" site --out "$W/site" --store "$W/s.sqlite3"; t1=$(ms)
echo "rebuild after one more run: $((t1 - t0)) ms"
t0=$(ms); "$BIN" site --out "$W/site" --store "$W/s.sqlite3"; t1=$(ms)
echo "rebuild with nothing new: $((t1 - t0)) ms"
du -sh "$W/site" | sed 's/\t.*/ on disk/'
