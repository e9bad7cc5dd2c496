#!/bin/sh
# The results store's speed, as a benchmark (not a test): records one real run
# of the default suite's GEMMs, makes N copies of it under new ids and dates
# (times jittered, a 10% step in the middle), imports them into a fresh SQLite
# store and, when the PostgreSQL 15 server binaries exist, into a private
# server started here; then reports the store's size per run, times a
# re-import of the same runs, `store export` (CSV time, JSON peak memory),
# `history` and `compare` on both, and the recording's share of a run's wall time.
#   scripts/bench-store.sh [N]     (N runs, default 1000; run as root or a user that can run initdb)
set -eu
N=${1:-1000}
BIN=${FLOPWATT:-build/flopwatt}
W=$(mktemp -d /tmp/flopwatt-bench-store.XXXXXX)
PG=/usr/lib/postgresql/15/bin
AS=""
cleanup() {
  if [ -f "$W/pg/PG_VERSION" ]; then $AS "$PG/pg_ctl" -D "$W/pg" -m immediate -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$W"
}
trap cleanup EXIT

ms() { date +%s%3N; }
timed() {  # label, command...: best of 5 wall times, in ms
  label=$1; shift
  best=""
  for _ in 1 2 3 4 5; do
    t0=$(ms); "$@" >/dev/null; t1=$(ms)
    d=$((t1 - t0)); if [ -z "$best" ] || [ "$d" -lt "$best" ]; then best=$d; fi
  done
  echo "$label: ${best} ms (best of 5)"
}

echo "one run of the default suite's GEMM shapes on every available backend..."
t0=$(ms)
if [ -n "${SEED:-}" ]; then cp -r "$SEED" "$W/seed"  # an earlier run directory, to repeat the timings quickly
else
  "$BIN" run gemm --shapes gpt2-124m --backend available --min-time 0.02 --min-reps 5 --idle 0 --no-peak \
    --out "$W/seed" --no-store >/dev/null
fi
t1=$(ms)
t2=$(ms); "$BIN" store import "$W/seed" --store "$W/once.sqlite3" >/dev/null; t3=$(ms)
echo "seed run: $((t1 - t0)) ms wall; recording it alone (store import, a process start included): $((t3 - t2)) ms"
[ -z "${SEED:-}" ] && cp -r "$W/seed" /tmp/flopwatt-bench-store-seed  # SEED=/tmp/flopwatt-bench-store-seed repeats without it

python3 - "$W" "$N" <<'PY'
import json, random, sys, os
w, n = sys.argv[1], int(sys.argv[2])
seed = json.load(open(os.path.join(w, "seed", "run.json")))
random.seed(1)
for i in range(n):
    r = json.loads(json.dumps(seed))
    r["run_id"] = "bench-%05d" % i
    r["context"]["started_utc"] = "2026-%02d-%02dT%02d:%02d:00Z" % (1 + i // 28 // 24 % 12, 1 + i // 24 % 28, i % 24, i % 60)
    r["context"]["flopwatt_git_revision"] = "%012x" % (0xabc000000000 + i)
    step = 1.1 if i >= n // 2 else 1.0
    for m in r["measurements"]:
        f = step * random.uniform(0.97, 1.03)
        m["rep_times_s"] = [t * f for t in m.get("rep_times_s", [])]
        for k, v in list(m.get("time", {}).items()):
            if isinstance(v, (int, float)): m["time"][k] = v * f
        if m.get("flop_per_s"): m["flop_per_s"] /= f
    d = os.path.join(w, "runs", r["run_id"])
    os.makedirs(d)
    json.dump(r, open(os.path.join(d, "run.json"), "w"))
PY
rows=$(python3 -c "import json;print(len(json.load(open('$W/seed/run.json'))['measurements']))")
echo "$N runs of $rows rows each"
OP=$(python3 -c "import json;m=json.load(open('$W/seed/run.json'))['measurements'][0];print(m['op'], m['backend'])")
set -- $OP

bench() {  # store spec, command printing the store's size in bytes
  S=$1
  b0=$($2)
  t0=$(ms); "$BIN" store import "$W/runs" --store "$S" >/dev/null; t1=$(ms)
  echo "  import $N runs: $((t1 - t0)) ms ($(( (t1 - t0) * 1000 / N )) us per run)"
  b1=$($2)
  echo "  store size: $(( (b1 - b0) / 1024 / N )) KiB per run ($(( (b1 - b0) / 1024 / 1024 )) MiB for $N runs, samples not stored)"
  t0=$(ms); "$BIN" store import "$W/runs" --store "$S" >/dev/null; t1=$(ms)
  echo "  re-import of the $N runs already there: $((t1 - t0)) ms"
  timed "  store export --format csv ($((N * rows)) rows)" "$BIN" store export --format csv --store "$S"
  rss=$(/usr/bin/time -f %M "$BIN" store export --format json --store "$S" 2>&1 >/dev/null | tail -n 1)
  echo "  store export --format json: peak resident $((rss / 1024)) MiB"
  timed "  history median_s --op $OP1 --backend $OP2 (one series, $N points)" "$BIN" history median_s --op "$OP1" --backend "$OP2" --store "$S"
  timed "  history flop_per_s --format csv (every series, $((N * rows)) points)" "$BIN" history flop_per_s --format csv --store "$S"
  timed "  compare previous latest" "$BIN" compare previous latest --store "$S"
  timed "  compare by git revision" "$BIN" compare abc000000001 latest --store "$S"
  timed "  flopwatt --version (process start, for scale)" "$BIN" --version
}
OP1=$1; OP2=$2
sqlite_bytes() { if [ -f "$W/bench.sqlite3" ]; then stat -c %s "$W/bench.sqlite3"; else echo 0; fi; }
pg_bytes() { $AS "$PG/psql" -h "$W/sock" -U flopwatt -d postgres -Atc "SELECT pg_database_size('postgres')"; }
echo "SQLite:"
bench "$W/bench.sqlite3" "sqlite_bytes"

if [ -x "$PG/initdb" ]; then
  mkdir -p "$W/pg" "$W/sock"
  if [ "$(id -u)" = 0 ]; then AS="runuser -u nobody --"; chown -R nobody "$W/pg" "$W/sock"; chmod 755 "$W"; fi
  $AS "$PG/initdb" -D "$W/pg" -A trust -U flopwatt -E UTF8 --no-sync >/dev/null
  $AS "$PG/pg_ctl" -D "$W/pg" -o "-k $W/sock -c listen_addresses=''" -l "$W/sock/log" -w start >/dev/null
  echo "PostgreSQL 15 (local, Unix socket):"
  bench "host=$W/sock user=flopwatt dbname=postgres" pg_bytes
else
  echo "PostgreSQL: skipped ($PG/initdb not found; install postgresql-15)"
fi
