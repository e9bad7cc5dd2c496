// The HTML report's style sheet and its page script (sortable tables, and the
// Chart.js charts drawn from the page's embedded data). Private to
// html_report.cpp; kept apart so the C++ reads as C++.
#pragma once

namespace flopwatt {

inline constexpr const char* kHtmlCss = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #ddd;padding:2px 6px;text-align:left}
th{background:#f3f3f3;cursor:pointer;user-select:none}th:after{content:" \2195";color:#aaa}
td.n{text-align:right;font-variant-numeric:tabular-nums}tr.skipped{color:#888}
dl.machine,dl.method{display:grid;grid-template-columns:max-content auto;gap:0 1em}dt{font-weight:600}dd{margin:0}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:1em}
.chart{position:relative;height:340px;min-width:0}.charts p.none{color:#888;font-style:italic}
.about{color:#555}code{background:#f6f6f6;padding:0 3px}
nav{margin-bottom:1em}nav a{margin-right:1em}
)css";

// Sortable tables: every page of the report and the site has it.
inline constexpr const char* kHtmlSortScript = R"js(
(function () {
  'use strict';
  // Sortable tables: numbers by their exact value (data-v), text as text.
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('th').forEach(function (th, col) {
      th.addEventListener('click', function () {
        const body = table.tBodies[0];
        const asc = th.dataset.asc !== '1';
        th.dataset.asc = asc ? '1' : '0';
        const key = function (row) {
          const c = row.cells[col];
          if (!c) return '';
          const v = c.dataset.v;
          return v !== undefined && v !== '' ? parseFloat(v) : c.textContent;
        };
        Array.from(body.rows).sort(function (a, b) {
          const x = key(a), y = key(b);
          const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
          return asc ? c : -c;
        }).forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
)js";

// The report's charts, drawn from its embedded data.
inline constexpr const char* kHtmlScript = R"js(
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('flopwatt-data').textContent);
  window.flopwatt = {data: data, charts: {}};

  function none(id, why) {
    const c = document.getElementById(id);
    if (!c) return;
    const p = document.createElement('p');
    p.className = 'none';
    p.textContent = why;
    c.replaceWith(p);
  }
  if (typeof Chart === 'undefined') {
    document.querySelectorAll('canvas').forEach(function (c) { none(c.id, 'Chart.js did not load'); });
    return;
  }
  const colours = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22',
                   '#17becf', '#d62728'];
  const colour = function (i) { return colours[i % colours.length]; };

  // Each measurement's window shaded, each supply change a dashed red line.
  const shade = {
    id: 'flopwattShade',
    beforeDatasetsDraw: function (chart, args, opts) {
      const a = chart.chartArea, x = chart.scales.x, ctx = chart.ctx;
      ctx.save();
      (opts.bands || []).forEach(function (b, i) {
        const x0 = x.getPixelForValue(b.t0), x1 = x.getPixelForValue(b.t1);
        ctx.fillStyle = i % 2 ? 'rgba(255,160,0,0.12)' : 'rgba(0,120,255,0.10)';
        ctx.fillRect(x0, a.top, Math.max(1, x1 - x0), a.bottom - a.top);
      });
      ctx.strokeStyle = '#d62728';
      ctx.fillStyle = '#d62728';
      ctx.setLineDash([4, 3]);
      (opts.lines || []).forEach(function (l) {
        const px = x.getPixelForValue(l.t);
        ctx.beginPath();
        ctx.moveTo(px, a.top);
        ctx.lineTo(px, a.bottom);
        ctx.stroke();
        ctx.fillText(l.label, px + 3, a.top + 10);
      });
      ctx.restore();
    }
  };
  // The p10-p90 spread of a bar as a whisker.
  const whiskers = {
    id: 'flopwattSpread',
    afterDatasetsDraw: function (chart) {
      const y = chart.scales.y, ctx = chart.ctx;
      chart.data.datasets.forEach(function (ds, i) {
        const meta = chart.getDatasetMeta(i);
        if (!ds.spread || meta.hidden) return;
        ctx.save();
        ctx.strokeStyle = '#333';
        meta.data.forEach(function (bar, j) {
          const s = ds.spread[j];
          if (!s || s[0] === null || s[1] === null) return;
          const y0 = y.getPixelForValue(s[0]), y1 = y.getPixelForValue(s[1]);
          ctx.beginPath();
          ctx.moveTo(bar.x, y0); ctx.lineTo(bar.x, y1);
          ctx.moveTo(bar.x - 3, y0); ctx.lineTo(bar.x + 3, y0);
          ctx.moveTo(bar.x - 3, y1); ctx.lineTo(bar.x + 3, y1);
          ctx.stroke();
        });
        ctx.restore();
      });
    }
  };
  function draw(id, config) {
    const c = document.getElementById(id);
    if (!c) return;
    config.options = Object.assign({animation: false, responsive: true, maintainAspectRatio: false}, config.options);
    window.flopwatt.charts[id] = new Chart(c, config);
  }
  const title = function (t) { return {display: true, text: t}; };
  const scaled = function (v, s) { return v === null ? null : v * s; };

  // Ops placed by intensity on log-log axes, one dataset per backend, and
  // each op's ceiling (its roof, or its energy roof) as a triangle where it has one.
  function placement(id, pts, o) {
    if (!pts.length) {
      none(id, o.none);
      return;
    }
    const backends = Array.from(new Set(pts.map(function (p) { return p.backend; })));
    const sets = backends.map(function (b, i) {
      return {label: b + ' measured', backgroundColor: colour(i), pointRadius: 4,
              data: pts.filter(function (p) { return p.backend === b; }).map(function (p) {
                return {x: p.intensity, y: p[o.value] * 1e-9, name: o.name(p)};
              })};
    });
    const ceilings = pts.filter(function (p) { return p[o.ceiling] !== null; });
    if (ceilings.length)
      sets.push({label: o.roof, backgroundColor: 'rgba(0,0,0,0)', borderColor: '#000', pointStyle: 'triangle', pointRadius: 5,
                 data: ceilings.map(function (p) { return {x: p.intensity, y: p[o.ceiling] * 1e-9, name: p.label}; })});
    draw(id, {
      type: 'scatter',
      data: {datasets: sets},
      options: {scales: {x: {type: 'logarithmic', title: title('FLOP per byte')},
                         y: {type: 'logarithmic', title: title(o.unit)}},
                plugins: {title: title(o.title),
                          tooltip: {callbacks: {label: function (c) {
                            return c.raw.name + ': ' + c.raw.y.toPrecision(3) + ' ' + o.unit;
                          }}}}}
    });
  }

  data.runs.forEach(function (run, r) {
    const t = run.trace;
    if (!t.sources.length) {
      none('chart-trace-' + r, 'Power trace: no power samples in this run (samples.csv absent, or not stored).');
    } else {
      draw('chart-trace-' + r, {
        type: 'line',
        data: {datasets: t.sources.map(function (s, i) {
          return {label: s.id + (s.unit === 'J' ? ' (from energy counter)' : ''), borderColor: colour(i),
                  backgroundColor: colour(i), borderWidth: 1, pointRadius: 0, spanGaps: false,
                  data: s.x.map(function (x, k) { return {x: x, y: s.y[k]}; })};
        })},
        options: {parsing: false, normalized: true,
                  scales: {x: {type: 'linear', title: title('seconds since the first sample')},
                           y: {title: title('W')}},
                  plugins: {title: title('Power per source; shaded: each row\'s window; red: supply changes'),
                            flopwattShade: {bands: t.windows, lines: t.supply}}},
        plugins: [shade]
      });
    }
    const rt = run.rates;
    if (!rt.labels.length) {
      none('chart-rate-' + r, 'FLOP/s: no comparable measurements.');
      none('chart-fpj-' + r, 'FLOP/J: no comparable measurements.');
    } else {
      draw('chart-rate-' + r, {
        type: 'bar',
        data: {labels: rt.labels, datasets: rt.backends.map(function (b, i) {
          return {label: b.backend, backgroundColor: colour(i),
                  data: b.flop_per_s.map(function (v) { return scaled(v, 1e-9); }),
                  spread: b.lo.map(function (lo, k) {
                    return lo === null ? null : [lo * 1e-9, b.hi[k] * 1e-9];
                  })};
        })},
        options: {scales: {y: {title: title('GFLOP/s (median; whisker p10-p90)')}},
                  plugins: {title: title('FLOP/s per op and backend')}},
        plugins: [whiskers]
      });
      const anyFpj = rt.backends.some(function (b) { return b.flop_per_j.some(function (v) { return v !== null; }); });
      if (!anyFpj) {
        none('chart-fpj-' + r, 'FLOP/J: no row has an energy figure its run judged usable.');
      } else {
        draw('chart-fpj-' + r, {
          type: 'bar',
          data: {labels: rt.labels, datasets: rt.backends.map(function (b, i) {
            return {label: b.backend, data: b.flop_per_j.map(function (v) { return scaled(v, 1e-9); }),
                    backgroundColor: b.low_confidence.map(function (low) { return low ? colour(i) + '55' : colour(i); })};
          })},
          options: {scales: {y: {title: title('GFLOP/J (each row\'s judged source; pale: low confidence)')}},
                    plugins: {title: title('FLOP/J per op and backend (one figure per window)')}}
        });
      }
    }
    placement('chart-roof-' + r, run.roofline, {
      value: 'flop_per_s', ceiling: 'roof', unit: 'GFLOP/s', roof: 'roof at that intensity',
      name: function (p) { return p.label; },
      title: 'Roofline: each op measured and its roof',
      none: 'Roofline: no row has a roofline placement (no stored ceilings for this machine).'});
    placement('chart-eroof-' + r, run.energy_roofline, {
      value: 'flop_per_j', ceiling: 'ceiling', unit: 'GFLOP/J', roof: 'energy roof at that intensity',
      name: function (p) { return p.label + ' (' + p.source + ')'; },
      title: 'Energy roofline: each op\'s judged FLOP/J and its fitted or modelled roof',
      none: 'Energy roofline: no row has both an intensity and a judged FLOP/J.'});
  });

  const paper = data.paper;
  if (paper) {
    const figs = paper.figures;
    const range = function (v) {
      if (v === null || v === undefined) return null;
      if (Array.isArray(v)) return [v[0], v[1]];
      if (typeof v === 'object') return [v.min, v.max];
      return [v, v];
    };
    draw('chart-paper', {
      type: 'bar',
      data: {labels: figs.map(function (f) { return f.what; }),
             datasets: [{label: 'paper', backgroundColor: colour(0), borderColor: colour(0), borderWidth: 3,
                         borderSkipped: false, data: figs.map(function (f) { return range(f.paper); })},
                        {label: 'here' + (paper.npu ? ' (' + paper.npu + (paper.npu_simulated ? ', simulated' : '') + ')' : ''),
                         backgroundColor: colour(1), borderColor: colour(1), borderWidth: 3, borderSkipped: false,
                         data: figs.map(function (f) { return range(f.here); })}]},
      options: {scales: {y: {title: title('ratio (x), range where one was given')}},
                plugins: {title: title('Rösti & Franz (2025): their figures and these runs\'')}}
    });
  }

  const mvb = data.mains_battery;
  if (mvb) {
    const labels = mvb.rows.map(function (r) { return r.label + ' ' + r.backend; });
    const get = function (r, s, k) { return r[s] && r[s][k] !== undefined ? r[s][k] : null; };
    const states = ['mains', 'battery'];
    draw('chart-mvb-fpj', {
      type: 'bar',
      data: {labels: labels, datasets: states.map(function (s, i) {
        return {label: s, backgroundColor: colour(i),
                data: mvb.rows.map(function (r) { return scaled(get(r, s, 'flop_per_j'), 1e-9); })};
      })},
      options: {scales: {y: {title: title('GFLOP/J')}},
                plugins: {title: title('FLOP/J on mains and on battery (each run\'s judged source)')}}
    });
    draw('chart-mvb-fps', {
      type: 'bar',
      data: {labels: labels, datasets: states.map(function (s, i) {
        return {label: s, backgroundColor: colour(i),
                data: mvb.rows.map(function (r) { return scaled(get(r, s, 'flop_per_s'), 1e-9); }),
                spread: mvb.rows.map(function (r) {
                  const lo = get(r, s, 'flop_per_s_p10'), hi = get(r, s, 'flop_per_s_p90');
                  return lo === null || hi === null ? null : [lo * 1e-9, hi * 1e-9];
                })};
      })},
      options: {scales: {y: {title: title('GFLOP/s (median; whisker p10-p90)')}},
                plugins: {title: title('FLOP/s on mains and on battery')}},
      plugins: [whiskers]
    });
  }
})();
)js";

}  // namespace flopwatt
