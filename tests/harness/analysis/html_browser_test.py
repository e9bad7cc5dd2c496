#!/usr/bin/python3
"""`flopwatt report --format html` opened in headless Chromium with no network.

    html_browser_test.py FLOPWATT_BINARY ARTEFACT_DIR

Four pages: a fresh run of the built binary on a fixture laptop whose RAPL counter a
thread here advances (the GEMM timings are real, the energy SYNTHETIC), the fixture
mains-vs-battery campaign (also with --paper), and a copy of the fresh run whose id, directory name, CPU
model and backend are hostile. For each: no console error, exception or request off
file:, every chart drawn with as many points as the run's files hold (samples.csv,
run.json's rows), each FLOP/J cell equal to run.json's figure of the row's recorded
headline source, and hostile text shown as text. A screenshot of each page kind goes to
ARTEFACT_DIR. Then a site (`flopwatt site`) of a store holding these runs: its index, a
series page and a run page load cleanly, every link resolves to a file, and each series
chart has one point per row of its history table. Skips (77) only where chromium is missing, never with CI=true."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cdp  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "..", "fixtures")
CAMPAIGN = os.path.join(FIXTURES, "runs", "campaign-gemm-smoke")
LAPTOP = os.path.join(FIXTURES, "campaign", "laptop-mains")
EVIL = "\"'><script>window.pwned=1</script>\n<img src=x onerror=\"window.pwned=2\">\u2028&amp;"
PACKAGE_W = 12.0  # the synthetic package power the RAPL counter advances at

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


class Rapl(threading.Thread):
    """Advances the fixture's energy_uj at PACKAGE_W, as the package counter would."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.stop = path, False

    def run(self):
        t0, e = time.monotonic(), 0.0
        while not self.stop:
            time.sleep(0.005)
            e = (time.monotonic() - t0) * PACKAGE_W * 1e6
            with open(self.path + ".new", "w") as f:
                f.write("%d\n" % e)
            os.replace(self.path + ".new", self.path)


def fresh_run(binary, work):
    root = os.path.join(work, "root")
    shutil.copytree(LAPTOP, root)
    rapl = Rapl(os.path.join(root, "sys/class/powercap/intel-rapl:0/energy_uj"))
    rapl.start()
    out = os.path.join(work, "run")
    try:
        subprocess.run([binary, "run", "gemm", "--shapes", "64,64,64;96,64,128", "--backend", "cpu:reference,cpu:llmc",
                        "--sysfs-root", root, "--idle", "0", "--no-peak", "--min-time", "0.3", "--min-reps", "3",
                        "--no-store", "--out", out], check=True, stdout=subprocess.DEVNULL, timeout=120)
    finally:
        rapl.stop = True
        rapl.join()
    return out


def report(binary, dirs, page):
    subprocess.run([binary, "report"] + dirs + ["--format", "html", "-o", page], check=True, timeout=60)
    os.chmod(page, 0o644)


def samples_per_source(run_dir):
    n, unit = {}, {}
    path = os.path.join(run_dir, "samples.csv")
    if not os.path.exists(path):
        return {}
    import csv
    with open(path, newline="") as f:
        for row in list(csv.reader(f))[1:]:
            if len(row) >= 4:
                n[row[0]] = n.get(row[0], 0) + 1
                unit[row[0]] = row[3]
    # A counter's power is between consecutive samples: one point fewer.
    return {k: v - 1 if unit[k] == "J" else v for k, v in n.items() if unit[k] in ("J", "W")}


def comparable(m):
    return (not m.get("skipped") and (m.get("flop_per_s") or 0) > 0 and m.get("reps", 0) >= 1
            and not (m.get("workload") == "gpt2" and m.get("step") is not None))


PROBE = """JSON.stringify({
  charts: Object.values(Chart.instances).map(c => ({id: c.canvas.id,
    sets: c.data.datasets.map((d, i) => ({label: d.label, n: d.data.length, drawn: c.getDatasetMeta(i).data.length}))})),
  runs: window.flopwatt.data.runs.map(r => ({run_id: r.run_id, labels: r.rates.labels.length,
    roof: r.roofline.length, eroof: r.energy_roofline.length, sources: r.trace.sources.map(s => [s.id, s.x.length])})),
  mvb: window.flopwatt.data.mains_battery ? window.flopwatt.data.mains_battery.rows.length : null,
  fpj: Array.from(document.querySelectorAll('tr[data-m] td.fpj')).map(td =>
    ({run: +td.closest('tr').dataset.run, m: +td.closest('tr').dataset.m, v: td.dataset.v, text: td.textContent})),
  text: document.body.textContent,
  runIds: Array.from(document.querySelectorAll('code.run-id')).map(e => e.textContent),
  scripts: document.scripts.length, images: document.images.length,
  pwned: window.pwned === undefined ? null : String(window.pwned)
})"""


def check_page(browser, page, run_dirs, kind):
    """run_dirs: run id -> its directory (for run.json and samples.csv)."""
    session = browser.new_page()
    events = browser.open(session, "file://" + page)
    got = json.loads(browser.evaluate(session, PROBE))
    for p in cdp.problems(events):
        check(False, "%s: %s" % (kind, p))
    charts = {c["id"]: c for c in got["charts"]}
    for c in got["charts"]:
        for s in c["sets"]:
            check(s["n"] == s["drawn"], "%s: %s %s drew %d of %d points" % (kind, c["id"], s["label"], s["drawn"], s["n"]))
    headline_cells = 0
    for r, run in enumerate(got["runs"]):
        d = run_dirs[run["run_id"]]
        with open(os.path.join(d, "run.json")) as f:
            rj = json.load(f)
        expect = samples_per_source(d)
        trace = charts.get("chart-trace-%d" % r)
        check(trace is not None or not expect, "%s: run %d has samples but no trace chart" % (kind, r))
        if trace:
            check(sorted((s["label"].split(" (")[0], s["n"]) for s in trace["sets"]) == sorted(expect.items()),
                  "%s: trace points %s, samples.csv %s" % (kind, trace["sets"], expect))
        labels = len({(m["op"], m.get("pass"), m.get("layer"), json.dumps(m.get("shape")), m.get("dtype"))
                      for m in rj["measurements"] if comparable(m)})
        rate = charts.get("chart-rate-%d" % r)
        check(rate is not None and rate["sets"] and all(s["n"] == labels for s in rate["sets"]),
              "%s: FLOP/s chart %s, %d configurations in run.json" % (kind, rate, labels))
        backends = {m["backend"] for m in rj["measurements"] if comparable(m)}
        check(rate is not None and len(rate["sets"]) == len(backends), "%s: one FLOP/s dataset per backend" % kind)
        roof = sum(1 for m in rj["measurements"] if comparable(m) and (m.get("intensity_flop_per_byte") or 0) > 0
                   and m.get("roof_flop_per_s"))
        check(run["roof"] == roof, "%s: roofline %d points, run.json %d" % (kind, run["roof"], roof))
        # The energy roofline places every row with an intensity and a FLOP/J from its own judged source.
        eroof = sum(1 for m in rj["measurements"] if comparable(m) and (m.get("intensity_flop_per_byte") or 0) > 0
                    and m.get("headline_source") and (m["energy"].get(m["headline_source"]) or {}).get("flop_per_j")
                    is not None)
        check(run["eroof"] == eroof, "%s: energy roofline %d points, run.json %d" % (kind, run["eroof"], eroof))
        chart = charts.get("chart-eroof-%d" % r)
        check((chart is not None and sum(st["n"] for st in chart["sets"] if st["label"].endswith(" measured")) == eroof)
              or (chart is None and eroof == 0), "%s: energy roofline chart %s, %d rows" % (kind, chart, eroof))
        for cell in got["fpj"]:
            if cell["run"] != r:
                continue
            m = rj["measurements"][cell["m"]]
            src = m.get("headline_source")
            if src is None:
                continue  # a run from before rows recorded their source
            headline_cells += 1
            check(float(cell["v"]) == m["energy"][src]["flop_per_j"],
                  "%s: FLOP/J cell %s, run.json %s" % (kind, cell["v"], m["energy"][src]["flop_per_j"]))
            check(cell["text"] == "%.3g" % (m["energy"][src]["flop_per_j"] * 1e-9) or "e" in cell["text"],
                  "%s: FLOP/J text %r" % (kind, cell["text"]))
    browser.screenshot(session, os.path.join(ARTEFACTS, kind + ".png"))
    return got, charts, headline_cells


LINKS = "JSON.stringify(Array.from(document.querySelectorAll('a[href]')).map(a => a.href))"


def check_links(browser, session, kind):
    """Every link of the page names a file that exists; returns them."""
    links = [l for l in json.loads(browser.evaluate(session, LINKS)) if l.startswith("file://")]
    for l in links:
        path = urllib.parse.unquote(urllib.parse.urlsplit(l).path)
        check(os.path.isfile(path), "%s: link %s resolves to nothing" % (kind, l))
    return links


def check_site(browser, binary, work, run_dirs):
    store, site = os.path.join(work, "store.sqlite3"), os.path.join(work, "site")
    subprocess.run([binary, "store", "import", "--store", store] + run_dirs, check=True, stdout=subprocess.DEVNULL,
                   timeout=60)
    subprocess.run([binary, "site", "--out", site, "--store", store], check=True, stdout=subprocess.DEVNULL, timeout=60)
    session = browser.new_page()
    pages = {}
    for kind, page in (("site-index", os.path.join(site, "index.html")),):
        for p in cdp.problems(browser.open(session, "file://" + page)):
            check(False, "%s: %s" % (kind, p))
        links = check_links(browser, session, kind)
        pages["site-series"] = next((l for l in links if "/series/" in l), None)
        pages["site-run"] = next((l for l in links if "/runs/" in l), None)
        browser.screenshot(session, os.path.join(ARTEFACTS, kind + ".png"))
    check(pages["site-series"] and pages["site-run"], "site-index: no series or run page linked")
    for kind in ("site-series", "site-run"):
        if not pages[kind]:
            continue
        for p in cdp.problems(browser.open(session, pages[kind])):
            check(False, "%s: %s" % (kind, p))
        check_links(browser, session, kind)
        got = json.loads(browser.evaluate(session, """JSON.stringify({
          charts: Object.values(Chart.instances).map(c => ({id: c.canvas.id,
            sets: c.data.datasets.map((d, i) => ({n: d.data.length, drawn: c.getDatasetMeta(i).data.length}))})),
          rows: Array.from(document.querySelectorAll('table.history')).map(t => t.tBodies[0].rows.length)})"""))
        check(got["charts"], "%s: no chart drawn" % kind)
        for c in got["charts"]:
            for st in c["sets"]:
                check(st["n"] == st["drawn"] and st["n"] > 0, "%s: %s drew %d of %d" % (kind, c["id"], st["drawn"], st["n"]))
        if kind == "site-series":
            # One point per stored run of the series, as the history tables list them.
            check(sorted(c["sets"][0]["n"] for c in got["charts"]) == sorted(got["rows"]),
                  "site-series: chart points %s, table rows %s" % (got["charts"], got["rows"]))
        browser.screenshot(session, os.path.join(ARTEFACTS, kind + ".png"))


def main():
    global ARTEFACTS
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, ARTEFACTS = os.path.realpath(sys.argv[1]), sys.argv[2]
    if not cdp.find_chromium():
        if os.environ.get("CI") == "true":
            sys.exit("chromium is missing and CI=true: install it (scripts/packages.txt lists it)")
        print("SKIP: chromium is not installed (apt-get install chromium)")
        sys.exit(cdp.SKIP)
    os.makedirs(ARTEFACTS, exist_ok=True)
    work = tempfile.mkdtemp(prefix="flopwatt-html-")
    os.chmod(work, 0o755)
    try:
        run = fresh_run(binary, work)
        evil_dir = os.path.join(work, EVIL.replace("/", "_").replace("\n", " ")[:40])
        shutil.copytree(run, evil_dir)
        with open(os.path.join(evil_dir, "run.json")) as f:
            rj = json.load(f)
        rj["run_id"], rj["context"]["cpu"] = EVIL, EVIL
        rj["measurements"][0]["backend"] = EVIL
        with open(os.path.join(evil_dir, "run.json"), "w") as f:
            json.dump(rj, f)
        pages = {k: os.path.join(work, k + ".html")
                 for k in ("report-run", "report-campaign", "report-hostile", "report-paper")}
        report(binary, [run], pages["report-run"])
        report(binary, [CAMPAIGN], pages["report-campaign"])
        report(binary, [evil_dir], pages["report-hostile"])
        report(binary, [CAMPAIGN, "--paper"], pages["report-paper"])
        dirs = {}
        for d in (run, os.path.join(CAMPAIGN, "mains"), os.path.join(CAMPAIGN, "battery"), evil_dir):
            with open(os.path.join(d, "run.json")) as f:
                dirs[json.load(f)["run_id"]] = d
        browser = cdp.Browser()
        try:
            got, _, cells = check_page(browser, pages["report-run"], dirs, "report-run")
            check(cells > 0, "report-run: no FLOP/J cell of a row with a recorded headline source")
            got, charts, _ = check_page(browser, pages["report-campaign"], dirs, "report-campaign")
            with open(os.path.join(CAMPAIGN, "comparison.json")) as f:
                rows = len(json.load(f)["rows"])
            for cid in ("chart-mvb-fpj", "chart-mvb-fps"):
                check(cid in charts and all(s["n"] == rows for s in charts[cid]["sets"]) and len(charts[cid]["sets"]) == 2,
                      "report-campaign: %s has %s, comparison.json %d rows" % (cid, charts.get(cid), rows))
            # The study's four figures beside these runs': the GEMM-only fixture has no NPU GPT-2
            # run, so each "here" is missing and says why; the paper's own ranges are all drawn.
            got, charts, _ = check_page(browser, pages["report-paper"], dirs, "report-paper")
            paper = charts.get("chart-paper")
            check(paper is not None and [st["n"] for st in paper["sets"]] == [4, 4],
                  "report-paper: chart-paper %s, 4 figures" % paper)
            check("2.8-3.1x" in got["text"] and "no GPT-2 run with the GEMMs on an NPU backend" in got["text"],
                  "report-paper: the paper's range or the why of a missing figure is not on the page")
            got, _, _ = check_page(browser, pages["report-hostile"], dirs, "report-hostile")
            check(got["pwned"] is None, "report-hostile: injected script ran (%s)" % got["pwned"])
            check(got["images"] == 0, "report-hostile: an injected <img> element exists")
            check(got["scripts"] == 3, "report-hostile: %d script elements, the page has 3" % got["scripts"])
            check(EVIL in got["runIds"], "report-hostile: the run id is not shown as text: %r" % got["runIds"])
            check(got["text"].count(EVIL) >= 3, "report-hostile: hostile text shown %d times" % got["text"].count(EVIL))
            check_site(browser, binary, work, [run, CAMPAIGN])
        finally:
            browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit("%d check(s) failed" % len(failures))
    print("ok: 4 reports and 3 site pages checked in chromium; screenshots in " + ARTEFACTS)


if __name__ == "__main__":
    main()
