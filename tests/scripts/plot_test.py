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


if __name__ == "__main__":
    unittest.main()
