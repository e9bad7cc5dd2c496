#!/usr/bin/python3
"""scripts/plot.py: spike clipping of the power trace and low-confidence marks.

    python3 tests/scripts/plot_test.py
"""
import importlib.util
import math
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("plot", os.path.join(HERE, "..", "..", "scripts", "plot.py"))
plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot)


class TraceYlim(unittest.TestCase):
    def test_one_spike_does_not_set_the_scale(self):
        bulk = [15.0 + 0.1 * (i % 7) for i in range(1000)]
        top, clip = plot.trace_ylim([bulk + [400.0], [4.0] * 500])
        self.assertLess(top, 25.0)  # the 15 W trace keeps most of the axis
        self.assertLess(clip, 400.0)
        self.assertGreater(clip, max(bulk))  # nothing of the bulk is cut

    def test_no_spike_no_clip(self):
        top, clip = plot.trace_ylim([[10.0, 12.0, 11.0, 13.0]])
        self.assertEqual(clip, math.inf)
        self.assertAlmostEqual(top, 13.0 * 1.25)

    def test_empty(self):
        self.assertEqual(plot.trace_ylim([]), (1.0, math.inf))


try:
    import matplotlib
    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False


@unittest.skipUnless(HAVE_MPL, "matplotlib not installed (python3-matplotlib)")
class LowConfidenceMarks(unittest.TestCase):
    def test_efficiency_bars_marked(self):
        matplotlib.use("Agg")
        run = {"power_sources": [{"id": "rapl-powercap:package-0", "domain": "package", "available": True}],
               "headline_source": "rapl-powercap:package-0",
               "measurements": []}
        for i, conf in enumerate(["ok", "low"]):
            run["measurements"].append({
                "op": f"op{i}", "backend": "cpu:naive", "workload": "gemm", "flop": 1e9, "flop_per_s": 1e9,
                "reps": 3, "time_s": {"p10": 1, "p90": 1},
                "headline_source": "rapl-powercap:package-0",
                "energy": {"rapl-powercap:package-0": {"flop_per_j": 1e9, "confidence": conf}}})
        fig = plot.new_figure("efficiency")
        ax = fig.add_subplot(1, 1, 1)
        groups, backends, cell, simulated = plot.run_table(run)

        def val(g, b):
            return 1.0

        def low(g, b):
            return cell[(g, b)]["energy"]["rapl-powercap:package-0"]["confidence"] == "low"

        plot.grouped_bars(ax, groups, backends, val, None, simulated, "GFLOP/J", low_fn=low)
        marked = [p for p in ax.patches if p.get_hatch() == "xx"]
        self.assertEqual(len(marked), 1)
        self.assertEqual([c.get_label() for c in ax.containers].count(plot.LOW_LABEL), 1)


class RowHeadline(unittest.TestCase):
    """plot reads each row's judged headline and has no source order of its own."""
    RUN = {"headline_source": "rapl-powercap:psys-0",
           "power_sources": [{"id": "rapl-powercap:psys-0", "domain": "psys", "available": True},
                             {"id": "battery:BAT0", "domain": "battery", "available": True},
                             {"id": "hwmon:amdgpu:PPT", "domain": "package", "available": True}]}

    def row(self, headline, **energy):
        return {"headline_source": headline, "energy": energy}

    def test_the_rows_own_source_not_the_runs_nor_a_wider_one(self):
        m = self.row("hwmon:amdgpu:PPT", **{"rapl-powercap:psys-0": {"flop_per_j": 5e9},
                                            "battery:BAT0": {"flop_per_j": 2e9},
                                            "hwmon:amdgpu:PPT": {"flop_per_j": 1e9}})
        self.assertEqual(plot.pick_source(self.RUN, m), "hwmon:amdgpu:PPT")

    def test_no_judged_headline_no_figure(self):
        m = self.row(None, **{"battery:BAT0": {"flop_per_j": 2e9}})
        self.assertIsNone(plot.pick_source(self.RUN, m))
        m = {"energy": {"battery:BAT0": {"flop_per_j": 2e9}}}
        self.assertIsNone(plot.pick_source(self.RUN, m))

    def test_a_headline_without_flop_per_j_is_no_figure(self):
        m = self.row("battery:BAT0", **{"battery:BAT0": {"flop_per_j": None}})
        self.assertIsNone(plot.pick_source(self.RUN, m))


def roof_run(n_ops=30, backends=("cpu:llmc", "cpu:openblas", "cpu:onednn", "npu:sim-phoenix", "npu:sim-strix")):
    """A run with this machine's ceilings and n_ops ops x backends, ops spread over 4 decades of intensity."""
    host = {"label": "cpu", "threads": 2, "peak_flop_per_s": {"fp32": 2e11, "bf16": 4e11},
            "memory": [{"name": "dram_read", "bytes_per_s": 1.2e10}, {"name": "dram_triad", "bytes_per_s": 1.6e10},
                       {"name": "l1_read", "bytes_per_s": 4e11}],
            "dram": {"name": "dram_triad", "bytes_per_s": 1.6e10}}
    npu = {"label": "npu:sim-phoenix (modelled)", "peak_flop_per_s": {"bf16": 6.5e12, "fp32": 6.5e12},
           "memory": [{"name": "dram_model", "bytes_per_s": 2.4e10}],
           "dram": {"name": "dram_model", "bytes_per_s": 2.4e10}}
    run = {"run_id": "t", "context": {"roofline": {"host": host, "from": "results/peaks/x.json", "age_s": 60,
                                                   "modelled": {"npu:sim-phoenix": npu}}},
           "power_sources": [{"id": "rapl:package", "domain": "package", "available": True}],
           "headline_source": "rapl:package",
           "energy_roofline": {"host": {"j_per_flop": 2e-11, "j_per_byte": 3e-10, "constant_w": 5.0,
                                        "rms_relative_error": 0.03, "points": 30, "source": "rapl:package"},
                               "modelled": {"npu:sim-phoenix": {"j_per_flop": 2e-13, "j_per_byte": 3e-11,
                                                                "constant_w": 0.6}}},
           "measurements": []}
    for k in range(n_ops):
        intensity = 10 ** (-1.5 + 4.0 * k / (n_ops - 1))
        for j, b in enumerate(backends):
            sim = b.startswith("npu:sim")
            run["measurements"].append({
                "workload": "gpt2", "op": f"op{k:02d}", "pass": "fwd", "layer": None, "backend": b,
                "simulated": sim, "flop": 1e9, "flop_per_s": 1e9 * (j + 1) * (1 + k % 3),
                "intensity_flop_per_byte": intensity, "reps": 3,
                "headline_source": "npu-model:x" if sim else "rapl:package",
                "energy": {("npu-model:x" if sim else "rapl:package"): {"flop_per_j": 1e9 * (1 + j), "confidence": "ok"}}})
    # Rows that must not be drawn: a step, a per-layer row, a skipped one, one without bytes.
    extra = dict(run["measurements"][0])
    run["measurements"] += [dict(extra, op="step"), dict(extra, layer=3), dict(extra, skipped="no"),
                            dict(extra, op="nobytes", intensity_flop_per_byte=None)]
    return run


@unittest.skipUnless(HAVE_MPL, "matplotlib not installed (python3-matplotlib)")
class Rooflines(unittest.TestCase):
    def capture(self, fn, run):
        import tempfile
        matplotlib.use("Agg")
        figs = []
        real_save = plot.save

        def keep(fig, out_dir, kind, formats, written):
            figs.append(fig)
            real_save(fig, out_dir, kind, formats, written)

        plot.save = keep
        try:
            with tempfile.TemporaryDirectory() as d:
                written = []
                note = fn(run, d, ["png", "svg"], written, "title")
                sizes = []
                for w in written:
                    self.assertGreater(os.path.getsize(w), 1000, w)
                    if w.endswith(".png"):
                        from matplotlib import image
                        h, wd = image.imread(w).shape[:2]
                        sizes.append((wd, h))
        finally:
            plot.save = real_save
        return note, figs, written, sizes

    def test_thirty_ops_five_backends_one_label_per_column_and_every_ceiling(self):
        run = roof_run()
        note, figs, written, sizes = self.capture(plot.plot_roofline, run)
        self.assertIsNone(note)
        self.assertEqual([os.path.basename(w) for w in written], ["roofline.png", "roofline.svg"])
        self.assertEqual(sizes, [plot.SIZES["roofline"]])
        ax = figs[0].axes[0]
        self.assertEqual((ax.get_xscale(), ax.get_yscale()), ("log", "log"))
        labels = [t.get_text() for t in ax.texts if t.get_rotation() == 90]
        self.assertLessEqual(len(labels), 30)
        for k in range(30):  # every op is named once, and nothing that must not be drawn
            self.assertEqual(sum(f"op{k:02d} fwd" in t for t in labels), 1, k)
        # Ops closer than a label's width share one: 10 ops of one intensity are two names and "+8".
        crowd = roof_run(n_ops=10)
        for m in crowd["measurements"]:
            if m.get("intensity_flop_per_byte"):
                m["intensity_flop_per_byte"] = 40.0
        _, figs2, _, _ = self.capture(plot.plot_roofline, crowd)
        crowded = [t.get_text() for t in figs2[0].axes[0].texts if t.get_rotation() == 90]
        self.assertEqual(crowded, ["op00 fwd, op01 fwd +8"])
        self.assertFalse(any("step" in t or "nobytes" in t or "L3" in t for t in labels))
        points = sum(len(c.get_offsets()) for c in ax.collections)
        self.assertEqual(points, 30 * 5)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        self.assertEqual(sum(1 for t in legend if t.startswith(("cpu:", "npu:")) and "roof" not in t), 5)
        self.assertLessEqual(max(len(t) for t in labels), 60)
        self.assertIn("npu:sim-phoenix roof (modelled)", legend)
        ceilings = " ".join(t.get_text() for t in ax.texts if t.get_rotation() != 90) + " ".join(legend)
        for want in ("fp32 peak 200 GFLOP/s", "bf16 peak 400 GFLOP/s", "dram_triad 16 GB/s", "l1_read 400 GB/s"):
            self.assertIn(want, ceilings)
        self.assertNotIn("dram_read", ceilings)  # one line per level: its fastest stream

    def test_ops_that_evaluate_exps_have_the_exp_rate_as_a_cap_of_their_own(self):
        run = roof_run(n_ops=6)
        run["context"]["roofline"]["host"]["exp_per_s"] = 1.5e10
        for m in run["measurements"]:
            if m["op"] in ("op01", "op04"):  # every backend's row; the device's has no exp rate
                m["exps"] = 2e8 if m["op"] == "op01" else 5e8
        _, figs, _, _ = self.capture(plot.plot_roofline, run)
        ax = figs[0].axes[0]
        bars = [l for l in ax.get_lines() if l.get_color() == "#aa3377"]
        self.assertEqual(len(bars), 2, "one cap per op, not per backend")
        # An op with few exps per FLOP has its cap above the peak, where it never binds: not drawn.
        for m in run["measurements"]:
            if m["op"] == "op02":
                m["exps"] = 1e9 / 1e3  # 1.5e10 x 1e3 FLOP/s, far above the 400 GFLOP/s peak
        _, figs_hi, _, _ = self.capture(plot.plot_roofline, run)
        self.assertEqual(len([l for l in figs_hi[0].axes[0].get_lines() if l.get_color() == "#aa3377"]), 2)
        intensity = {m["op"]: m["intensity_flop_per_byte"] for m in run["measurements"] if m.get("exps")}
        for bar, op, exps in zip(sorted(bars, key=lambda l: l.get_xdata()[0]), ("op01", "op04"), (2e8, 5e8)):
            for y in bar.get_ydata():  # GFLOP/s: FLOP per exp x the rate
                self.assertAlmostEqual(y, 1e9 / exps * 1.5e10 / 1e9, places=9, msg=op)
            lo, hi = bar.get_xdata()
            self.assertLess(lo, intensity[op])
            self.assertGreater(hi, intensity[op])
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        self.assertEqual(sum(t.startswith("exp rate 15 G exp/s") for t in legend), 1, legend)
        # Ceilings stored before the exp rate was measured draw none.
        del run["context"]["roofline"]["host"]["exp_per_s"]
        _, figs, _, _ = self.capture(plot.plot_roofline, run)
        self.assertFalse([l for l in figs[0].axes[0].get_lines() if l.get_color() == "#aa3377"])

    def test_energy_roofline_draws_fitted_and_modelled_ceilings(self):
        note, figs, written, sizes = self.capture(plot.plot_energy_roofline, roof_run(n_ops=6))
        self.assertIsNone(note)
        self.assertEqual(sizes, [plot.SIZES["energy_roofline"]])
        ax = figs[0].axes[0]
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        self.assertTrue(any(t.startswith("fitted from rapl:package: 20 pJ/FLOP, 300 pJ/B, 5 W") for t in legend), legend)
        self.assertTrue(any(t.startswith("npu:sim-phoenix (modelled)") for t in legend), legend)
        # The fitted curve at high intensity approaches 1 / (J/FLOP + W / peak).
        fitted = [l for l in ax.get_lines() if l.get_label().startswith("fitted")][0]
        top = fitted.get_ydata()[-1]
        self.assertAlmostEqual(top, 1e-9 / (2e-11 + 3e-10 / fitted.get_xdata()[-1] + 5.0 / 2e11), places=3)

    def test_nothing_to_place_is_a_note_not_a_figure(self):
        run = roof_run(n_ops=2)
        for m in run["measurements"]:
            m["intensity_flop_per_byte"] = None
        note, figs, written, _ = self.capture(plot.plot_roofline, run)
        self.assertIn("no measurement has an arithmetic intensity", note)
        self.assertEqual(written, [])
        run["energy_roofline"] = None
        run["context"]["roofline"] = {}
        note, figs, written, _ = self.capture(plot.plot_energy_roofline, run)
        self.assertIn("energy_roofline: no energy figures", note)


if __name__ == "__main__":
    unittest.main()
