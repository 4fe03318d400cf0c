// Draws a tandem report from the JSON embedded in the page (src/report/report_data.cpp makes
// it). Nothing here fetches anything: the page works offline, from a file.
//
// Note [Report charts]: why SVG drawn by this script rather than a charting library.
// - Size: this script and the stylesheet are about 50 KB; ECharts' minified bundle is about
//   1 MB, Plotly's 3.5 MB, and inlined into every report they would dwarf a small run's data.
// - Speed: a 100-job trace has 20,000 iterations. Each schedule row is drawn as one SVG path
//   per colour, not one element per bar, and bars closer than a pixel are merged at the current
//   zoom, so the page holds a few hundred elements whatever the trace; the memory chart keeps at
//   most one column per pixel. bench/report/render.sh measures it in headless Chromium.
// - Pictures a library does not draw well: a schedule of iterations (a Gantt chart with states)
//   and memory stacked by job and kind against a budget that changes.
// - What a reader can do: hover for the values under the pointer, drag to zoom every time
//   chart to one span (double-click to zoom out), and export any chart as SVG or PNG. The
//   exported SVG carries its colours as attributes, so it opens the same anywhere.
// - No build step, no network and no third-party code: nothing to fetch at build time, and the
//   file stays readable.
(function () {
  'use strict';
  const SVG = 'http://www.w3.org/2000/svg';
  const body = document.body;
  const root = document.getElementById('report');
  const data = JSON.parse(document.getElementById('report-data').textContent);

  // --- formatting: the same as tandem's tables -------------------------------------------------

  /**
   * `value` with `digits` decimals as C's printf writes it, so that the page shows what tandem's
   * tables show: toFixed rounds an exact half up (5.125 -> "5.13"), printf to even ("5.12").
   */
  function toFixedC(value, digits) {
    const rounded = value.toFixed(digits);
    if (!isFinite(value)) return rounded;
    const exact = Math.abs(value).toFixed(Math.min(100, digits + 60));
    const dot = exact.indexOf('.');
    if (!/^50*$/.test(exact.slice(dot + 1 + digits))) return rounded;
    const kept = exact.slice(0, dot + 1 + digits).replace(/\.$/, '');
    if (Number(kept[kept.length - 1]) % 2 !== 0) return rounded;  // up is even
    return (value < 0 ? '-' : '') + kept;
  }

  /** Bytes as tandem's format_bytes writes them: "512 B", "50.27 MiB". */
  function fmtBytes(bytes) {
    if (bytes === null || bytes === undefined) return '-';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let value = Number(bytes);
    let unit = 0;
    while (value >= 1024 && unit + 1 < units.length) {
      value /= 1024;
      unit++;
    }
    return unit === 0 ? String(Math.round(value)) + ' B' : toFixedC(value, 2) + ' ' + units[unit];
  }
  function fmtFixed(value, digits) {
    return value === null || value === undefined || !isFinite(value) ? '-'
                                                                      : toFixedC(Number(value), digits);
  }
  function fmtSeconds(value) { return value === null || value === undefined ? '-' : fmtFixed(value, 3) + ' s'; }
  /** Short times for axes and tooltips. */
  function fmtTime(s) {
    const a = Math.abs(s);
    if (a === 0) return '0 s';
    if (a < 1e-3) return (s * 1e6).toFixed(0) + ' \u00b5s';
    if (a < 1) return (s * 1e3).toFixed(a < 0.01 ? 2 : 1) + ' ms';
    if (a < 1200) return s.toFixed(a < 10 ? 2 : 1) + ' s';
    return Number((s / 60).toFixed(1)) + ' min';
  }
  /** A statistic by its name's unit, as tandem's table prints it. */
  function fmtStatistic(name, value) {
    if (value === null || value === undefined) return '-';
    if (typeof value !== 'number') return String(value);
    if (name.endsWith('_bytes')) return fmtBytes(value);
    if (name.endsWith('_s')) return toFixedC(value, 3) + ' s';
    return String(Number(value.toPrecision(6)));
  }

  // --- elements ------------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null) continue;
      if (key === 'text') node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }
  function svg(tag, attrs, parent) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === 'text') node.textContent = value;
      else node.setAttribute(key, value);
    }
    if (parent) parent.appendChild(node);
    return node;
  }
  function section(title, note) {
    const s = el('section', {}, title ? el('h2', { text: title }) : null);
    if (note) s.append(el('p', { class: 'note', text: note }));
    root.append(s);
    return s;
  }

  // Colours: one hue per job (Tableau 10, then golden-angle hues), lighter shades for kinds.
  const TABLEAU = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1',
                   '#ff9da7', '#9c755f', '#bab0ac'];
  function jobColor(i, shade) {
    let h, s = 55, l = 50;
    if (i < TABLEAU.length && !shade) return TABLEAU[i];
    if (i < TABLEAU.length) {
      const hex = TABLEAU[i];
      const rgb = [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16) / 255);
      const max = Math.max(...rgb), min = Math.min(...rgb);
      l = (max + min) * 50;
      const d = max - min;
      s = d === 0 ? 0 : (d / (1 - Math.abs(2 * l / 100 - 1))) * 100;
      if (d === 0) h = 0;
      else if (max === rgb[0]) h = 60 * (((rgb[1] - rgb[2]) / d) % 6);
      else if (max === rgb[1]) h = 60 * ((rgb[2] - rgb[0]) / d + 2);
      else h = 60 * ((rgb[0] - rgb[1]) / d + 4);
    } else {
      h = (i * 137.508) % 360;
    }
    const lightness = Math.min(92, l + (shade || 0) * 12);
    return 'hsl(' + h.toFixed(0) + ',' + s.toFixed(0) + '%,' + lightness.toFixed(0) + '%)';
  }
  const STATE_COLORS = { waiting: '#d3d7dd', setup: '#f2c14e', failed: '#c62828', stopped: '#8d8d8d',
                         restarted: '#8e24aa', planned: '#263238', memwait: '#ef6c00', groupwait: '#00897b' };
  /** Where the time charts' plots begin, the same for all so that their times line up. */
  const TIME_PLOT_X = 130;
  const KIND_ORDER = ['persistent', 'feature_map', 'gradient', 'temporary', 'unknown', 'held'];

  // --- tooltip, zoom and export shared by the charts -----------------------------------------

  const tooltip = el('div', { class: 'tooltip' });
  body.append(tooltip);
  function showTip(event, text) {
    tooltip.textContent = text;
    tooltip.style.display = 'block';
    const x = Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
    const y = event.clientY + 16 + tooltip.offsetHeight > window.innerHeight
      ? event.clientY - tooltip.offsetHeight - 10 : event.clientY + 16;
    tooltip.style.left = x + 'px';
    tooltip.style.top = y + 'px';
  }
  function hideTip() { tooltip.style.display = 'none'; }

  /** Every time chart, redrawn when the shared span changes. */
  const timeCharts = [];
  const view = { t0: 0, t1: 1, full: [0, 1] };
  function setSpan(t0, t1) {
    view.t0 = Math.max(view.full[0], t0);
    view.t1 = Math.min(view.full[1], t1);
    if (view.t1 - view.t0 < 1e-6) view.t1 = view.t0 + 1e-6;
    for (const chart of timeCharts) chart.draw();
  }

  /** Frames a chart: heading with export buttons, the SVG, and the legend below. */
  function chartFrame(parent, id, title, note, width, height) {
    const head = el('div', { class: 'chart-head' }, el('h2', { text: title }));
    const box = el('div', { class: 'chart', id: id });
    const canvas = svg('svg', { xmlns: SVG, viewBox: '0 0 ' + width + ' ' + height, width: width,
                                height: height, 'font-family': 'DejaVu Sans, Arial, sans-serif',
                                'font-size': 11, role: 'img', 'aria-label': title });
    box.append(canvas);
    const exportSvg = el('button', { type: 'button', text: 'SVG', title: 'Save this chart as SVG' });
    const exportPng = el('button', { type: 'button', text: 'PNG', title: 'Save this chart as PNG' });
    exportSvg.addEventListener('click', () => download(id + '.svg', svgText(canvas), 'image/svg+xml'));
    exportPng.addEventListener('click', () => savePng(canvas, id + '.png'));
    head.append(exportSvg, exportPng);
    parent.append(head);
    if (note) parent.append(el('p', { class: 'note', text: note }));
    parent.append(box);
    return { box, canvas };
  }
  function svgText(canvas) {
    const copy = canvas.cloneNode(true);
    copy.querySelectorAll('.overlay').forEach((n) => n.remove());
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(copy);
  }
  function download(name, content, type) {
    const url = URL.createObjectURL(content instanceof Blob ? content : new Blob([content], { type }));
    const link = el('a', { href: url, download: name });
    body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }
  function savePng(canvas, name) {
    const scale = 2;
    const width = Number(canvas.getAttribute('width')), height = Number(canvas.getAttribute('height'));
    const image = new Image();
    image.onload = () => {
      const c = document.createElement('canvas');
      c.width = width * scale;
      c.height = height * scale;
      const g = c.getContext('2d');
      g.fillStyle = '#fff';
      g.fillRect(0, 0, c.width, c.height);
      g.drawImage(image, 0, 0, c.width, c.height);
      c.toBlob((blob) => download(name, blob, 'image/png'));
    };
    image.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(svgText(canvas));
  }

  /** Nice axis ticks over [lo, hi]. */
  function ticks(lo, hi, count) {
    const span = hi - lo;
    if (!(span > 0)) return [lo];
    const raw = span / count;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * power).find((s) => span / s <= count) || 10 * power;
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(t);
    return out;
  }
  function byteTicks(hi, count) {
    if (!(hi > 0)) return [0];
    const unit = Math.pow(1024, Math.max(0, Math.floor(Math.log(hi) / Math.log(1024))));
    return ticks(0, hi / unit, count).map((t) => t * unit);
  }

  /** The drag-to-zoom overlay of a time chart's plot area; x maps pixels to seconds. */
  function addZoom(canvas, plot, onHover) {
    const overlay = svg('rect', { class: 'overlay', x: plot.x, y: plot.y, width: plot.w,
                                  height: plot.h, fill: 'transparent', cursor: 'crosshair' }, canvas);
    const band = svg('rect', { class: 'overlay', y: plot.y, height: plot.h, fill: 'rgba(78,121,167,0.18)',
                               stroke: '#4e79a7', width: 0, display: 'none' }, canvas);
    let from = null;
    const local = (event) => {
      const box = canvas.getBoundingClientRect();
      const scale = Number(canvas.getAttribute('width')) / box.width;
      return { x: (event.clientX - box.left) * scale, y: (event.clientY - box.top) * scale };
    };
    const clampX = (x) => Math.max(plot.x, Math.min(plot.x + plot.w, x));
    const timeAt = (x) => view.t0 + ((clampX(x) - plot.x) / plot.w) * (view.t1 - view.t0);
    overlay.addEventListener('mousedown', (event) => {
      from = clampX(local(event).x);
      band.setAttribute('display', 'inline');
      band.setAttribute('x', from);
      band.setAttribute('width', 0);
      event.preventDefault();
    });
    window.addEventListener('mousemove', (event) => {
      if (from === null) return;
      const x = clampX(local(event).x);
      band.setAttribute('x', Math.min(from, x));
      band.setAttribute('width', Math.abs(x - from));
    });
    window.addEventListener('mouseup', (event) => {
      if (from === null) return;
      const x = clampX(local(event).x);
      band.setAttribute('display', 'none');
      const a = Math.min(from, x), b = Math.max(from, x);
      from = null;
      if (b - a > 3) setSpan(timeAt(a), timeAt(b));
    });
    overlay.addEventListener('dblclick', () => setSpan(view.full[0], view.full[1]));
    overlay.addEventListener('mousemove', (event) => {
      if (from !== null) return;
      const p = local(event);
      const text = onHover(timeAt(p.x), p.y);
      if (text) showTip(event, text); else hideTip();
    });
    overlay.addEventListener('mouseleave', hideTip);
    return overlay;
  }

  function timeAxis(group, plot) {
    const x = (t) => plot.x + ((t - view.t0) / (view.t1 - view.t0)) * plot.w;
    svg('line', { x1: plot.x, x2: plot.x + plot.w, y1: plot.y + plot.h, y2: plot.y + plot.h,
                  stroke: '#888' }, group);
    // Long spans in whole minutes, so that ticks fall on round numbers of the labels' unit.
    const unit = view.t1 - view.t0 > 1200 ? 60 : 1;
    const count = Math.max(2, Math.floor(plot.w / 90));
    for (const t of ticks(view.t0 / unit, view.t1 / unit, count).map((v) => v * unit)) {
      svg('line', { x1: x(t), x2: x(t), y1: plot.y + plot.h, y2: plot.y + plot.h + 4, stroke: '#888' }, group);
      svg('text', { x: x(t), y: plot.y + plot.h + 16, 'text-anchor': 'middle', fill: '#444',
                    text: fmtTime(t) }, group);
    }
    return x;
  }

  // --- the memory timeline ---------------------------------------------------------------------

  /** Expands [bucket, value, ...] changes to one value per bucket. */
  function expand(changes, buckets) {
    const out = new Float64Array(buckets);
    for (let i = 0; i < changes.length; i += 2) {
      const from = changes[i], value = changes[i + 1];
      const to = i + 2 < changes.length ? changes[i + 2] : buckets;
      out.fill(value, from, to);
    }
    return out;
  }

  /**
   * A time chart's plot: its background and a grid of `count` byte ticks up to `top` (labels
   * end with `unit`); returns x(t), clamped to the view.
   */
  function bytePlot(group, plot, y, top, count, unit) {
    svg('rect', { x: plot.x, y: plot.y, width: plot.w, height: plot.h, fill: '#fbfbfc' }, group);
    for (const t of byteTicks(top, count)) {
      svg('line', { x1: plot.x, x2: plot.x + plot.w, y1: y(t), y2: y(t), stroke: '#e6e8eb' }, group);
      svg('text', { x: plot.x - 6, y: y(t) + 4, 'text-anchor': 'end', fill: '#444', text: fmtBytes(t) + unit }, group);
    }
    return (t) => plot.x + ((Math.min(Math.max(t, view.t0), view.t1) - view.t0) / (view.t1 - view.t0)) * plot.w;
  }

  function budgetAt(system, t) {
    let budget = system.budget_bytes;
    for (const change of system.budget_changes || []) if (change.at_s <= t) budget = change.bytes;
    return budget;
  }

  function memoryChart(memory, system, jobs) {
    const s = section(null);
    const simulated = memory.format === 'sim';
    const note = simulated
      ? 'Regions each job held (a simulation records regions, not tensors), stacked, against the budget (red). '
      : "Each job's live bytes by kind, stacked; the dark line is the regions all jobs held, the red line the budget. ";
    const width = 1120, height = 330;
    const { canvas } = chartFrame(s, 'memory-chart', 'Memory timeline',
      note + 'Each of the ' + memory.buckets + ' columns shows the moment its total was highest (' +
      memory.rows + ' timeline rows).', width, height);
    const plot = { x: TIME_PLOT_X, y: 10, w: width - TIME_PLOT_X - 14, h: height - 10 - 30 };
    const buckets = memory.buckets, bucketS = memory.end_s / buckets;
    const layers = memory.layers.map((layer) => ({
      job: layer.job, kind: layer.kind, values: expand(layer.changes, buckets) }));
    layers.sort((a, b) => a.job - b.job || KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind));
    const kindsOf = {};
    for (const layer of layers) (kindsOf[layer.job] = kindsOf[layer.job] || []).push(layer.kind);
    const total = new Float64Array(buckets);
    for (const layer of layers) for (let b = 0; b < buckets; b++) total[b] += layer.values[b];
    const held = memory.held_total ? expand(memory.held_total, buckets) : null;
    let top = 0;
    for (let b = 0; b < buckets; b++) top = Math.max(top, total[b], held ? held[b] : 0);
    top = Math.max(top, system.budget_bytes);
    for (const change of system.budget_changes || []) top = Math.max(top, change.bytes);
    top *= 1.05;
    const names = memory.jobs;
    const group = svg('g', {}, canvas);
    const y = (bytes) => plot.y + plot.h - (bytes / top) * plot.h;

    function columns() {
      // At most one column per pixel: within a pixel, the bucket whose total was highest.
      const b0 = Math.max(0, Math.floor(view.t0 / bucketS));
      const b1 = Math.min(buckets, Math.ceil(view.t1 / bucketS));
      const per = Math.max(1, (b1 - b0) / plot.w);
      const cols = [];
      for (let c = b0; c < b1; c += per) {
        const from = Math.floor(c), to = Math.min(b1, Math.max(from + 1, Math.floor(c + per)));
        let best = from;
        for (let b = from; b < to; b++) if (total[b] > total[best]) best = b;
        let heldMax = 0;
        if (held) for (let b = from; b < to; b++) heldMax = Math.max(heldMax, held[b]);
        cols.push({ t0: from * bucketS, t1: to * bucketS, bucket: best, held: heldMax });
      }
      return cols;
    }

    const draw = () => {
      group.replaceChildren();
      const x = bytePlot(group, plot, y, top, 6, '');
      const cols = columns();
      const base = new Float64Array(cols.length);
      const shadeOf = (layer) => (kindsOf[layer.job].length > 1 ? kindsOf[layer.job].indexOf(layer.kind) : 0);
      for (const layer of layers) {
        // Only where the layer has bytes: a job that ran for a tenth of the time costs a tenth.
        let first = -1, last = -1;
        for (let c = 0; c < cols.length; c++) {
          if (layer.values[cols[c].bucket] > 0) { if (first < 0) first = c; last = c; }
        }
        if (first < 0) continue;
        const upper = [], lower = [];
        for (let c = first; c <= last; c++) {
          const v = layer.values[cols[c].bucket];
          const x0 = x(cols[c].t0).toFixed(1), x1 = x(cols[c].t1).toFixed(1);
          const yb = y(base[c]).toFixed(1), yt = y(base[c] + v).toFixed(1);
          upper.push(x0 + ',' + yt, x1 + ',' + yt);
          lower.push(x1 + ',' + yb, x0 + ',' + yb);
          base[c] += v;
        }
        lower.reverse();
        svg('path', { d: 'M' + upper.join('L') + 'L' + lower.join('L') + 'Z',
                      fill: jobColor(layer.job, shadeOf(layer)), 'data-job': names[layer.job],
                      'data-kind': layer.kind }, group);
      }
      if (held) {
        const points = [];
        for (const col of cols) points.push(x(col.t0).toFixed(1) + ',' + y(col.held).toFixed(1),
                                            x(col.t1).toFixed(1) + ',' + y(col.held).toFixed(1));
        svg('path', { d: 'M' + points.join('L'), fill: 'none', stroke: '#1d2430', 'stroke-width': 1.4 }, group);
      }
      // The budget, and where it changed.
      const steps = [[0, system.budget_bytes]].concat((system.budget_changes || []).map((c) => [c.at_s, c.bytes]));
      const budgetPoints = [];
      for (let i = 0; i < steps.length; i++) {
        const from = steps[i][0], to = i + 1 < steps.length ? steps[i + 1][0] : view.full[1];
        if (to < view.t0 || from > view.t1) continue;
        budgetPoints.push(x(from).toFixed(1) + ',' + y(steps[i][1]).toFixed(1),
                          x(to).toFixed(1) + ',' + y(steps[i][1]).toFixed(1));
      }
      if (budgetPoints.length) {
        svg('path', { d: 'M' + budgetPoints.join('L'), fill: 'none', stroke: '#c62828',
                      'stroke-width': 1.6, 'stroke-dasharray': '6 3' }, group);
      }
      for (const change of system.budget_changes || []) {
        if (change.at_s < view.t0 || change.at_s > view.t1) continue;
        svg('line', { x1: x(change.at_s), x2: x(change.at_s), y1: plot.y, y2: plot.y + plot.h,
                      stroke: '#c62828', 'stroke-dasharray': '2 3' }, group);
        svg('text', { x: x(change.at_s) + 4, y: plot.y + 12, fill: '#c62828',
                      text: 'budget ' + fmtBytes(change.bytes) }, group);
      }
      timeAxis(group, plot);
      canvas.appendChild(overlay);  // keep the overlay on top
    };
    const overlay = addZoom(canvas, plot, (t) => {
      const b = Math.min(buckets - 1, Math.max(0, Math.floor(t / bucketS)));
      const lines = ['t = ' + fmtTime(b * bucketS) + ' to ' + fmtTime((b + 1) * bucketS),
                     (simulated ? 'held ' : 'live ') + fmtBytes(total[b]) +
                     (held ? ', regions held ' + fmtBytes(held[b]) : '') +
                     ', budget ' + fmtBytes(budgetAt(system, b * bucketS))];
      const perJob = new Map();
      for (const layer of layers) {
        const v = layer.values[b];
        if (!v) continue;
        const entry = perJob.get(layer.job) || { sum: 0, parts: [] };
        entry.sum += v;
        entry.parts.push(layer.kind + ' ' + fmtBytes(v));
        perJob.set(layer.job, entry);
      }
      const shown = [...perJob.entries()].sort((a, b2) => b2[1].sum - a[1].sum);
      for (const [job, entry] of shown.slice(0, 10)) {
        lines.push(names[job] + ': ' + fmtBytes(entry.sum) + (entry.parts.length > 1 ? ' (' + entry.parts.join(', ') + ')' : ''));
      }
      if (shown.length > 10) lines.push('... and ' + (shown.length - 10) + ' more jobs');
      return lines.join('\n');
    });
    timeCharts.push({ draw });
    const legend = el('div', { class: 'legend' });
    if (names.length <= 16) {
      for (let j = 0; j < names.length; j++) {
        const kinds = kindsOf[j] || [];
        for (let k = 0; k < kinds.length; k++) {
          legend.append(el('span', {}, el('span', { class: 'swatch', style: 'background:' + jobColor(j, kinds.length > 1 ? k : 0) }),
                           document.createTextNode(names[j] + (simulated ? '' : ' ' + kinds[k]))));
        }
      }
    } else {
      legend.append(el('span', { text: names.length + ' jobs, one colour each: hover for names and bytes.' }));
    }
    if (held) legend.append(el('span', {}, el('span', { class: 'swatch', style: 'background:#1d2430' }), document.createTextNode('regions held (all jobs)')));
    legend.append(el('span', {}, el('span', { class: 'swatch', style: 'background:#c62828' }), document.createTextNode('budget')));
    s.append(legend);
  }

  // --- swap and recompute traffic --------------------------------------------------------------

  /**
   * Bytes each job's footprint plans copied per second (out to host memory and back in),
   * stacked. An iteration's results give its copies as totals, not as times (the executor and
   * the cost model count them per iteration), so each iteration's bytes are spread evenly over
   * its span; a bucket is exact where its iterations lie whole within it.
   */
  function trafficChart(jobs, system) {
    const rows = jobs.map((job, index) => {
      const bars = decodeBars(job.bars);
      return { job, index, bars, marks: decodeMarks(job, bars.n) };
    }).filter((row) => row.marks.traffic.size);
    if (!rows.length) return;
    const s = section(null);
    const width = 1120, height = 230;
    const { canvas } = chartFrame(s, 'traffic-chart', 'Swap and recompute traffic',
      "Bytes each job's footprint plan copied per second (out to host memory and back), stacked. " +
      'The results count copies per iteration, so each iteration\'s bytes are spread over its span; ' +
      'hover for the bytes and the seconds spent recomputing.', width, height);
    const plot = { x: TIME_PLOT_X, y: 10, w: width - TIME_PLOT_X - 14, h: height - 10 - 30 };
    const buckets = 1000, bucketS = view.full[1] / buckets;
    const spread = (values, from, to, amount) => {
      if (!(to > from)) { values[Math.min(buckets - 1, Math.floor(from / bucketS))] += amount; return; }
      const rate = amount / (to - from);
      for (let b = Math.max(0, Math.floor(from / bucketS)); b < buckets && b * bucketS < to; b++) {
        const overlap = Math.min(to, (b + 1) * bucketS) - Math.max(from, b * bucketS);
        if (overlap > 0) values[b] += rate * overlap;
      }
    };
    const layers = rows.map((row) => {
      const bytes = new Float64Array(buckets), recompute = new Float64Array(buckets);
      for (const [i, moved] of row.marks.traffic) {
        spread(bytes, row.bars.start[i], row.bars.end[i], moved.out + moved.in);
        spread(recompute, row.bars.start[i], row.bars.end[i], moved.recompute);
      }
      for (let b = 0; b < buckets; b++) { bytes[b] /= bucketS; recompute[b] /= bucketS; }
      return { row, bytes, recompute };
    });
    let top = 0;
    for (let b = 0; b < buckets; b++) {
      let sum = 0;
      for (const layer of layers) sum += layer.bytes[b];
      top = Math.max(top, sum);
    }
    top = top > 0 ? top * 1.05 : 1;
    const group = svg('g', {}, canvas);
    const y = (rate) => plot.y + plot.h - (rate / top) * plot.h;
    const draw = () => {
      group.replaceChildren();
      const x = bytePlot(group, plot, y, top, 4, '/s');
      const b0 = Math.max(0, Math.floor(view.t0 / bucketS)), b1 = Math.min(buckets, Math.ceil(view.t1 / bucketS));
      const base = new Float64Array(buckets);
      for (const layer of layers) {
        const upper = [], lower = [];
        for (let b = b0; b < b1; b++) {
          const x0 = x(b * bucketS).toFixed(1), x1 = x((b + 1) * bucketS).toFixed(1);
          upper.push(x0 + ',' + y(base[b] + layer.bytes[b]).toFixed(1), x1 + ',' + y(base[b] + layer.bytes[b]).toFixed(1));
          lower.push(x1 + ',' + y(base[b]).toFixed(1), x0 + ',' + y(base[b]).toFixed(1));
          base[b] += layer.bytes[b];
        }
        if (!upper.length) continue;
        lower.reverse();
        svg('path', { d: 'M' + upper.join('L') + 'L' + lower.join('L') + 'Z', fill: jobColor(layer.row.index, 0),
                      'data-job': layer.row.job.name }, group);
      }
      timeAxis(group, plot);
      canvas.appendChild(overlay);
    };
    const overlay = addZoom(canvas, plot, (t) => {
      const b = Math.min(buckets - 1, Math.max(0, Math.floor(t / bucketS)));
      const lines = ['t = ' + fmtTime(b * bucketS) + ' to ' + fmtTime((b + 1) * bucketS)];
      for (const layer of layers) {
        if (!layer.bytes[b] && !layer.recompute[b]) continue;
        lines.push(layer.row.job.name + ': copied ' + fmtBytes(layer.bytes[b]) + '/s, recomputing ' +
                   fmtFixed(100 * layer.recompute[b], 1) + '% of the time');
      }
      return lines.join('\n');
    });
    timeCharts.push({ draw });
    const legend = el('div', { class: 'legend' });
    for (const layer of layers) {
      legend.append(el('span', {}, el('span', { class: 'swatch', style: 'background:' + jobColor(layer.row.index, 0) }),
                       document.createTextNode(layer.row.job.name)));
    }
    s.append(legend);
  }

  // --- the schedule ------------------------------------------------------------------------------

  /** A job's iterations from its delta-coded bars: requested, start and end in seconds. */
  function decodeBars(bars) {
    const n = bars.length / 3;
    const requested = new Float64Array(n), start = new Float64Array(n), end = new Float64Array(n);
    let value = 0;
    for (let i = 0; i < n; i++) {
      value += bars[3 * i]; requested[i] = value / 1e6;
      value += bars[3 * i + 1]; start[i] = value / 1e6;
      value += bars[3 * i + 2]; end[i] = value / 1e6;
    }
    return { requested, start, end, n };
  }
  /** The first index whose end is at or after t. */
  function firstEndingAfter(ends, t) {
    let lo = 0, hi = ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ends[mid] < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  /**
   * What a job's iterations did beyond running (report_data.cpp, add_iteration_marks): the plan
   * of each iteration (-1: none), its waits mid-way and its traffic by iteration, and the tries
   * cut short as [start, end] in seconds.
   */
  function decodeMarks(job, n) {
    const planOf = new Int32Array(n).fill(-1);
    const runs = job.plan_runs || [];
    for (let r = 0; r + 2 < runs.length; r += 3) {
      for (let i = runs[r]; i < runs[r] + runs[r + 1] && i < n; i++) planOf[i] = runs[r + 2];
    }
    const waits = new Map(), traffic = new Map();
    const w = job.waits || [];
    for (let k = 0; k + 2 < w.length; k += 3) waits.set(w[k], { memory: w[k + 1] / 1e6, group: w[k + 2] / 1e6 });
    const t = job.traffic || [];
    for (let k = 0; k + 3 < t.length; k += 4) traffic.set(t[k], { out: t[k + 1], in: t[k + 2], recompute: t[k + 3] / 1e6 });
    const restarted = [];
    const c = job.restarted || [];
    for (let k = 0; k + 1 < c.length; k += 2) restarted.push([c[k] / 1e6, c[k + 1] / 1e6]);
    return { plans: job.plans || [], planOf, waits, traffic, restarted };
  }

  function scheduleChart(jobs, system) {
    const s = section(null);
    const rows = jobs.map((job, index) => {
      const bars = decodeBars(job.bars);
      const setupStart = job.first_start_s - job.setup_s;
      return { job, index, bars, marks: decodeMarks(job, bars.n), setupStart,
               hasSetup: job.setup_s > 0 && (bars.n > 0 || job.status === 'completed') };
    });
    const anyPlan = rows.some((row) => row.marks.plans.length);
    const anyMemoryWait = rows.some((row) => [...row.marks.waits.values()].some((w) => w.memory > 0));
    const anyGroupWait = rows.some((row) => [...row.marks.waits.values()].some((w) => w.group > 0));
    const anyWait = anyMemoryWait || anyGroupWait;
    const anyRestart = rows.some((row) => row.marks.restarted.length);
    const rowHeight = Math.max(4, Math.min(24, Math.floor(520 / Math.max(1, jobs.length))));
    const labels = rowHeight >= 10;
    const width = 1120, plotX = TIME_PLOT_X;
    const height = 10 + rowHeight * jobs.length + 30;
    const { canvas } = chartFrame(s, 'schedule-chart', 'Schedule',
      'One row per job: each iteration a bar in the job\'s colour (alternate shades), grey while it ' +
      'waited for the policy, amber while the job was set up, red where it failed' +
      (anyRestart ? ', purple where a try was cut short and run again' : '') +
      (anyPlan ? '; a dark band along the bottom: the iteration ran under a footprint plan' : '') +
      (anyWait ? '; an orange (memory) or teal (group boundary) band along the top: it waited mid-way, for as long as the tooltip says' : '') +
      '. Policy: ' + system.policy + '.', width, height);
    const plot = { x: plotX, y: 10, w: width - plotX - 14, h: rowHeight * jobs.length };
    const group = svg('g', {}, canvas);
    const gap = rowHeight >= 8 ? 1.5 : 0.5;

    const draw = () => {
      group.replaceChildren();
      const span = view.t1 - view.t0;
      const x = (t) => plot.x + ((t - view.t0) / span) * plot.w;
      const clip = (t) => Math.min(Math.max(x(t), plot.x), plot.x + plot.w);
      svg('rect', { x: plot.x, y: plot.y, width: plot.w, height: plot.h, fill: '#fbfbfc' }, group);
      for (const row of rows) {
        const top = plot.y + row.index * rowHeight;
        const paths = { run0: [], run1: [], waiting: [], setup: [], failed: [], restarted: [],
                        planned: [], memwait: [], groupwait: [] };
        // Marks drawn as bands over the bars: [offset, height] as fractions of the row.
        const bands = { planned: [0.6, 0.4], memwait: [0, 0.3], groupwait: [0, 0.3] };
        const rect = (kind, a, b) => {
          const band = bands[kind] || [0, 1];
          const y0 = (top + band[0] * (rowHeight - gap)).toFixed(1), bh = (band[1] * (rowHeight - gap)).toFixed(1);
          return 'M' + a.toFixed(1) + ' ' + y0 + 'h' + (b - a).toFixed(1) + 'v' + bh + 'h' + (a - b).toFixed(1) + 'Z';
        };
        // Bars closer than a pixel merge: at a wide span a job's iterations become one band.
        const open = {};
        const add = (kind, from, to) => {
          if (to < view.t0 || from > view.t1 || to < from) return;
          const a = clip(from), b = Math.max(clip(to), a + 0.6);
          const current = open[kind];
          if (current && a - current[1] < 0.8) { current[1] = Math.max(current[1], b); return; }
          if (current) paths[kind].push(rect(kind, current[0], current[1]));
          open[kind] = [a, b];
        };
        if (row.hasSetup) add('setup', row.setupStart, row.job.first_start_s);
        const { requested, start, end, n } = row.bars;
        const narrow = n > 0 && (end[n - 1] - start[0]) / n / span * plot.w < 3;
        for (let i = Math.max(0, firstEndingAfter(end, view.t0) - 1); i < n; i++) {
          if (requested[i] > view.t1) break;
          const waitEnd = i === 0 && row.hasSetup ? row.setupStart : start[i];
          if (waitEnd > requested[i]) add('waiting', requested[i], waitEnd);
          add(narrow ? 'run0' : (i % 2 ? 'run1' : 'run0'), start[i], end[i]);
          if (row.marks.planOf[i] >= 0) add('planned', start[i], end[i]);
          const waited = row.marks.waits.get(i);
          if (waited) add(waited.memory >= waited.group ? 'memwait' : 'groupwait', start[i], end[i]);
        }
        for (const [from, to] of row.marks.restarted) add('restarted', from, to);
        if (row.job.status !== 'completed') {
          const from = row.job.unfinished_start_s !== null && row.job.unfinished_start_s !== undefined
            ? row.job.unfinished_start_s : row.job.end_s;
          add('failed', from, row.job.end_s);
        }
        for (const kind of Object.keys(open)) paths[kind].push(rect(kind, open[kind][0], open[kind][1]));
        const fills = { run0: jobColor(row.index, 0), run1: jobColor(row.index, 1),
                        waiting: STATE_COLORS.waiting, setup: STATE_COLORS.setup,
                        failed: row.job.status === 'stopped' ? STATE_COLORS.stopped : STATE_COLORS.failed,
                        restarted: STATE_COLORS.restarted, planned: STATE_COLORS.planned,
                        memwait: STATE_COLORS.memwait, groupwait: STATE_COLORS.groupwait };
        for (const kind of ['waiting', 'setup', 'run0', 'run1', 'restarted', 'planned', 'memwait', 'groupwait', 'failed']) {
          if (paths[kind].length) svg('path', { d: paths[kind].join(''), fill: fills[kind], 'data-job': row.job.name, 'data-state': kind }, group);
        }
        if (labels) {
          svg('text', { x: plot.x - 6, y: top + rowHeight / 2 + 4, 'text-anchor': 'end', fill: '#333',
                        text: row.job.name.length > 18 ? row.job.name.slice(0, 17) + '\u2026' : row.job.name }, group);
        }
      }
      if (!labels) {
        svg('text', { x: plot.x - 8, y: plot.y + plot.h / 2, 'text-anchor': 'middle', fill: '#444',
                      transform: 'rotate(-90 ' + (plot.x - 8) + ' ' + (plot.y + plot.h / 2) + ')',
                      text: jobs.length + ' jobs (hover for names)' }, group);
      }
      timeAxis(group, plot);
      canvas.appendChild(overlay);
    };
    const overlay = addZoom(canvas, plot, (t, py) => {
      const index = Math.floor((py - plot.y) / rowHeight);
      const row = rows[index];
      if (!row) return null;
      const { requested, start, end, n } = row.bars;
      const job = row.job;
      const head = job.name + ' (' + (job.model || '') + ', ' + job.status + ')';
      if (row.hasSetup && t >= row.setupStart && t <= job.first_start_s)
        return head + '\nsetup ' + fmtTime(row.setupStart) + ' to ' + fmtTime(job.first_start_s) + ' (' + fmtTime(job.setup_s) + ')';
      const cut = row.marks.restarted.find(([from, to]) => t >= from && t <= to);
      if (cut) return head + '\na try cut short and run again: ' + fmtTime(cut[0]) + ' to ' + fmtTime(cut[1]) +
        ' (no wait would have brought the memory it asked for; it let go)';
      const i = firstEndingAfter(end, t);
      if (i < n && t >= requested[i]) {
        const lines = [head, 'iteration ' + i];
        if (start[i] > requested[i]) lines.push('waited ' + fmtTime(start[i] - requested[i]) + ' from ' + fmtTime(requested[i]));
        lines.push('ran ' + fmtTime(start[i]) + ' to ' + fmtTime(end[i]) + ' (' + fmtTime(end[i] - start[i]) + ')');
        const marks = row.marks;
        if (marks.planOf[i] >= 0) lines.push('under the plan ' + marks.plans[marks.planOf[i]]);
        const waited = marks.waits.get(i);
        if (waited && waited.memory > 0) lines.push('of which waiting for memory ' + fmtTime(waited.memory));
        if (waited && waited.group > 0) lines.push('of which waiting at group boundaries ' + fmtTime(waited.group));
        const moved = marks.traffic.get(i);
        if (moved) lines.push('swapped out ' + fmtBytes(moved.out) + ', in ' + fmtBytes(moved.in) + ', recomputed for ' + fmtTime(moved.recompute));
        return lines.join('\n');
      }
      if (job.status !== 'completed' && t <= job.end_s + (view.t1 - view.t0) / plot.w * 2 &&
          t >= (job.unfinished_start_s ?? job.end_s) - (view.t1 - view.t0) / plot.w * 2)
        return head + '\n' + job.status + ' at ' + fmtTime(job.end_s) + (job.error ? ': ' + job.error.slice(0, 200) : '');
      return head + '\n' + n + ' iterations';
    });
    timeCharts.push({ draw });
    const legend = el('div', { class: 'legend' });
    const item = (color, text) => legend.append(el('span', {}, el('span', { class: 'swatch', style: 'background:' + color }), document.createTextNode(text)));
    item(jobColor(0, 0), 'iteration (job colour)');
    item(STATE_COLORS.waiting, 'waiting for the policy');
    item(STATE_COLORS.setup, 'setup');
    item(STATE_COLORS.failed, 'failed');
    if (anyRestart) item(STATE_COLORS.restarted, 'try cut short (restarted)');
    if (anyPlan) item(STATE_COLORS.planned, 'under a footprint plan');
    if (anyMemoryWait) item(STATE_COLORS.memwait, 'waited for memory mid-iteration');
    if (anyGroupWait) item(STATE_COLORS.groupwait, 'waited at a group boundary');
    s.append(legend);
  }

  // --- tables ----------------------------------------------------------------------------------

  /** A table whose cells carry data-row and data-field, so that tests can find each value. */
  function table(parent, id, columns, rows) {
    const head = el('tr', {});
    for (const c of columns) head.append(el('th', { class: c.text ? 'text' : null, text: c.title, title: c.help || null }));
    const tbody = el('tbody', {});
    for (const row of rows) {
      const tr = el('tr', { 'data-row': row.key });
      for (const c of columns) {
        const value = c.value(row.item);
        tr.append(el('td', { class: c.cls || (c.text ? 'text' : null), 'data-field': c.field,
                             text: c.format ? c.format(value, row.item) : value }));
      }
      tbody.append(tr);
    }
    parent.append(el('div', { class: 'table-wrap' }, el('table', { id }, el('thead', {}, head), tbody)));
  }
  const field = (name) => (item) => item[name];
  function col(field_, title, format, extra) {
    return Object.assign({ field: field_, title, value: field(field_), format }, extra || {});
  }

  function facts(parent, id, entries) {
    const list = el('dl', { class: 'facts', id });
    for (const [key, title, text] of entries) {
      list.append(el('dt', { text: title }), el('dd', { 'data-field': key, text }));
    }
    parent.append(list);
  }

  function runTables(system, jobs) {
    const s = section('System');
    const switches = system.switches || {};
    facts(s, 'system-table', [
      ['policy', 'policy', system.policy],
      ['device', 'device', system.device],
      ['capacity_bytes', 'capacity', fmtBytes(system.capacity_bytes)],
      ['budget_bytes', 'budget at the start', fmtBytes(system.budget_bytes)],
      ['makespan_s', 'makespan', fmtSeconds(system.makespan_s)],
      ['aggregate_samples_per_s', 'samples/s (all jobs)', fmtFixed(system.aggregate_samples_per_s, 1)],
      ['peak_live_bytes', 'peak live (all jobs)', fmtBytes(system.peak_live_bytes)],
      ['peak_reserved_bytes', 'peak held (all jobs)', fmtBytes(system.peak_reserved_bytes)],
      ['failed_jobs', 'failed jobs', String(system.failed_jobs) + ' of ' + jobs.length],
      ['completed_training_jobs', 'completed training jobs', String(system.completed_training_jobs)],
      ['mean_queuing_s', 'mean queuing', fmtSeconds(system.mean_queuing_s)],
      ['mean_jct_s', 'mean JCT', fmtSeconds(system.mean_jct_s)],
      ['p95_jct_s', '95th percentile JCT', fmtSeconds(system.p95_jct_s)],
      ['switches', 'job switches', switches.count ? switches.count + ' (p50 ' + fmtTime(switches.p50_s) + ', p95 ' + fmtTime(switches.p95_s) + ', max ' + fmtTime(switches.max_s) + ')' : '0'],
    ].concat((system.budget_changes || []).length
      ? [['budget_changes', 'budget changes', system.budget_changes.map((c) => fmtBytes(c.bytes) + ' at ' + fmtTime(c.at_s)).join(', ')]] : []));
    if ((system.warnings || []).length) s.append(el('p', { class: 'note', text: 'warnings: ' + system.warnings.join('; ') }));

    const j = section('Jobs');
    const loss = (value) => fmtFixed(value, 3);
    table(j, 'jobs-table', [
      col('name', 'job', null, { text: true }),
      col('model', 'model', null, { text: true }),
      col('kind', 'kind', null, { text: true }),
      col('batch_size', 'batch', String),
      col('status', 'status', null, { text: true }),
      col('iterations', 'iters', String),
      col('iterations_per_s', 'iter/s', (v) => fmtFixed(v, 2)),
      col('samples_per_s', 'samples/s', (v) => fmtFixed(v, 1)),
      col('arrival_s', 'arrival', fmtSeconds),
      col('first_start_s', 'first start', fmtSeconds),
      col('end_s', 'end', fmtSeconds),
      col('setup_s', 'setup', fmtSeconds),
      col('wait_s', 'wait', fmtSeconds, { help: 'time spent waiting for the policy' }),
      col('peak_live_bytes', 'peak live', fmtBytes),
      col('peak_reserved_bytes', 'peak held', fmtBytes),
      col('persistent_bytes', 'persistent', fmtBytes),
      col('first_loss', 'first loss', loss),
      col('last_loss', 'last loss', loss),
      col('error', 'error', null, { cls: 'error' }),
    ], jobs.map((job) => ({ key: job.name, item: job })));

    const served = jobs.filter((job) => job.latency);
    if (served.length) {
      const l = section('Inference latency');
      const lat = (name) => ({ field: name, title: name.replace('_s', ''), value: (job) => job.latency[name], format: (v) => v === null ? '-' : toFixedC(v * 1e3, 2) + ' ms' });
      table(l, 'latency-table', [col('name', 'job', null, { text: true }),
        { field: 'requests', title: 'requests', value: (job) => job.latency.requests, format: String },
        lat('mean_s'), lat('p50_s'), lat('p95_s'), lat('p99_s'), lat('max_s')],
        served.map((job) => ({ key: job.name, item: job })));
    }

    const statsJobs = jobs.filter((job) => job.policy_stats && Object.keys(job.policy_stats).length);
    const systemStats = system.policy_stats || {};
    if (statsJobs.length || Object.keys(systemStats).length) {
      const p = section('Policy statistics', 'What ' + system.policy + ' reports of its decisions (docs/results-schema.md, policy_stats).');
      const keys = [];
      for (const job of statsJobs) for (const key of Object.keys(job.policy_stats)) if (!keys.includes(key)) keys.push(key);
      if (keys.length) {
        table(p, 'policy-stats-table', [col('name', 'job', null, { text: true })].concat(keys.map((key) => ({
          field: key, title: key, value: (job) => job.policy_stats[key], format: (v) => fmtStatistic(key, v) }))),
          statsJobs.map((job) => ({ key: job.name, item: job })));
      }
      if (Object.keys(systemStats).length) {
        facts(p, 'policy-system-stats', Object.entries(systemStats).map(([key, value]) => [key, key + ' (all jobs)', fmtStatistic(key, value)]));
      }
    }

    const planned = jobs.filter((job) => job.footprint);
    if (planned.length) {
      const f = section('Footprint plans', 'Jobs run under a swap/recompute plan: the cost model\'s predictions and what the executor measured (TENSILE\'s MSR, EOR, CBR). The traffic chart above spreads each iteration\'s copies over its span.');
      const fp = (name, title, format) => ({ field: name, title, value: (job) => job.footprint[name], format });
      const ratio = (v) => fmtFixed(v, 3);
      table(f, 'footprint-table', [col('name', 'job', null, { text: true }),
        fp('planner', 'planner', String), fp('budget_bytes', 'plan budget', (v) => v ? fmtBytes(v) : 'own'),
        fp('swapped_tensors', 'swapped', String), fp('recomputed_tensors', 'recomputed', String),
        fp('predicted_peak_bytes', 'predicted peak', fmtBytes), fp('vanilla_peak_bytes', 'vanilla peak', fmtBytes),
        fp('planned_peak_bytes', 'planned peak', fmtBytes), fp('msr', 'MSR', ratio), fp('eor', 'EOR', ratio),
        fp('cbr', 'CBR', (v) => v === null ? 'inf' : fmtFixed(v, 2)),
        fp('swapped_out_bytes', 'swapped out', fmtBytes), fp('swapped_in_bytes', 'swapped in', fmtBytes),
        fp('recomputations', 'recomputations', String), fp('stall_s', 'stall', fmtSeconds),
        fp('recompute_s', 'recompute', fmtSeconds)],
        planned.map((job) => ({ key: job.name, item: job })));
    }
  }

  // --- bar charts: comparisons and largest batches ---------------------------------------------

  /**
   * Grouped bars: `groups` along x, one bar per series within each; values[g][s] (null: none).
   */
  function barChart(parent, id, title, note, groups, series, values, format, axisFormat) {
    const width = 1120, height = 320;
    const { canvas } = chartFrame(parent, id, title, note, width, height);
    const plot = { x: 78, y: 16, w: width - 78 - 14, h: height - 16 - 34 };
    let top = 0;
    for (const row of values) for (const v of row) if (v !== null && v > top) top = v;
    top = top > 0 ? top * 1.12 : 1;
    const y = (v) => plot.y + plot.h - (v / top) * plot.h;
    svg('rect', { x: plot.x, y: plot.y, width: plot.w, height: plot.h, fill: '#fbfbfc' }, canvas);
    for (const t of ticks(0, top, 6)) {
      svg('line', { x1: plot.x, x2: plot.x + plot.w, y1: y(t), y2: y(t), stroke: '#e6e8eb' }, canvas);
      svg('text', { x: plot.x - 6, y: y(t) + 4, 'text-anchor': 'end', fill: '#444', text: axisFormat(t) }, canvas);
    }
    const groupW = plot.w / groups.length;
    const barW = Math.min(60, (groupW * 0.8) / series.length);
    groups.forEach((group, g) => {
      const left = plot.x + g * groupW + (groupW - barW * series.length) / 2;
      series.forEach((name, k) => {
        const v = values[g][k];
        if (v === null || v === undefined) return;
        const bar = svg('rect', { x: left + k * barW + 1, y: y(v), width: Math.max(1, barW - 2),
                                  height: Math.max(0, plot.y + plot.h - y(v)), fill: jobColor(k, 0),
                                  'data-group': group, 'data-series': name, 'data-value': v }, canvas);
        bar.addEventListener('mousemove', (event) => showTip(event, group + '\n' + name + ': ' + format(v)));
        bar.addEventListener('mouseleave', hideTip);
        if (barW >= 26) {
          svg('text', { x: left + k * barW + barW / 2, y: y(v) - 4, 'text-anchor': 'middle', fill: '#333',
                        'font-size': 10, text: format(v) }, canvas);
        }
      });
      svg('text', { x: plot.x + g * groupW + groupW / 2, y: plot.y + plot.h + 18, 'text-anchor': 'middle',
                    fill: '#333', text: group }, canvas);
    });
    svg('line', { x1: plot.x, x2: plot.x + plot.w, y1: plot.y + plot.h, y2: plot.y + plot.h, stroke: '#888' }, canvas);
    const legend = el('div', { class: 'legend' });
    series.forEach((name, k) => legend.append(el('span', {}, el('span', { class: 'swatch', style: 'background:' + jobColor(k, 0) }), document.createTextNode(name))));
    parent.append(legend);
  }

  function comparison(model) {
    const rows = model.rows;
    const batches = [...new Set(rows.map((r) => r.batch))];
    const policies = [...new Set(rows.map((r) => r.policy))];
    const find = (b, p) => rows.find((r) => r.batch === b && r.policy === p);
    const labels = batches.map((b) => (b === 'file' ? 'workload batches' : 'batch ' + b));
    const s = section(null);
    barChart(s, 'throughput-chart', 'Samples/s per policy' + (batches.length > 1 ? ' and batch' : ''),
      'All jobs\' samples per second over the makespan; hover a bar for its value.', labels, policies,
      batches.map((b) => policies.map((p) => (find(b, p) ? find(b, p).aggregate_samples_per_s : null))),
      (v) => toFixedC(v, 1), (v) => String(Number(v.toPrecision(4))));
    const m = section(null);
    barChart(m, 'makespan-chart', 'Makespan per policy', 'From the start to the last job\'s end.', labels, policies,
      batches.map((b) => policies.map((p) => (find(b, p) ? find(b, p).makespan_s : null))),
      (v) => fmtTime(v), fmtTime);
    const t = section('Runs');
    const perJob = rows[0].jobs.length <= 6;
    const columns = [col('batch', 'batch', null, { text: true }), col('policy', 'policy', null, { text: true }),
      col('aggregate_samples_per_s', 'samples/s', (v) => fmtFixed(v, 1)),
      col('ratio', 'ratio', (v) => (v === null ? '-' : toFixedC(v, 2) + 'x'), { help: 'against the first policy of the same batch' }),
      col('makespan_s', 'makespan', fmtSeconds), col('mean_queuing_s', 'mean queuing', fmtSeconds),
      col('mean_jct_s', 'mean JCT', fmtSeconds), col('p95_jct_s', '95% JCT', fmtSeconds),
      col('peak_reserved_bytes', 'peak held', fmtBytes), col('failed_jobs', 'failed', String)];
    if (perJob) {
      rows[0].jobs.forEach((job, k) => columns.push({ field: 'job:' + job.name, title: job.name + ' samples/s',
        value: (row) => (row.jobs[k] ? row.jobs[k].samples_per_s : null), format: (v) => fmtFixed(v, 1) }));
    }
    table(t, 'runs-table', columns, rows.map((row) => ({ key: row.batch + '/' + row.policy, item: row })));
  }

  function maxbatch(model) {
    const rows = model.rows;
    const s = section(null);
    const labels = rows.map((r) => r.label);
    barChart(s, 'maxbatch-chart', 'Largest batch: ' + model.jobs + ' co-located copies against one alone',
      model.model + ' on ' + model.device + ' (' + (model.simulated ? 'simulated' : 'real runs') + ')' +
      (model.planner ? ', planner ' + model.planner : '') + '; a + marks a bound the search could not pass.',
      labels, ['alone (exclusive)', 'co-located'],
      rows.map((r) => [model.solo.max_batch, r.max_batch]), String, (v) => String(Number(v.toPrecision(4))));
    const t = section(null);
    barChart(t, 'maxbatch-throughput-chart', 'Samples/s at the largest batch', 'All jobs together.', labels,
      ['alone (exclusive)', 'co-located'],
      rows.map((r) => [model.solo.samples_per_s, r.samples_per_s]), (v) => toFixedC(v, 1), (v) => String(Number(v.toPrecision(4))));
    table(t, 'maxbatch-table', [col('label', 'policy', null, { text: true }),
      col('max_batch', 'co-located max', (v, row) => String(v) + (row.no_failure_found ? '+' : '')),
      { field: 'solo_max', title: 'solo max', value: () => model.solo.max_batch, format: (v) => String(v) + (model.solo.no_failure_found ? '+' : '') },
      col('ratio_percent', 'ratio', (v) => (v === null ? '-' : toFixedC(v, 1) + '%')),
      col('samples_per_s', 'samples/s', (v) => fmtFixed(v, 1)),
      { field: 'solo_samples_per_s', title: 'solo samples/s', value: () => model.solo.samples_per_s, format: (v) => fmtFixed(v, 1) }],
      rows.map((row) => ({ key: row.label, item: row })));
  }

  // --- the page --------------------------------------------------------------------------------

  function render() {
    document.getElementById('report-title').textContent = data.title;
    const subtitle = document.getElementById('report-subtitle');
    if (data.kind === 'run') {
      const system = data.system;
      subtitle.textContent = 'policy ' + system.policy + ' on ' + system.device + '; ' + data.jobs.length +
        ' jobs, makespan ' + fmtTime(system.makespan_s) + (system.stopped ? ' (stopped before the end)' : '');
      let end = system.makespan_s;
      for (const job of data.jobs) end = Math.max(end, job.end_s);
      if (data.memory) end = Math.max(end, data.memory.end_s);
      view.full = [0, end > 0 ? end : 1];
      view.t0 = 0;
      view.t1 = view.full[1];
      if (data.memory) memoryChart(data.memory, system, data.jobs);
      else section('Memory', 'No timeline was given: `tandem report RESULTS --timeline TIMELINE.csv` (or --report on tandem run and tandem sim) draws it.');
      if (data.jobs.length) trafficChart(data.jobs, system);
      if (data.jobs.length) scheduleChart(data.jobs, system);
      runTables(system, data.jobs);
      for (const chart of timeCharts) chart.draw();
    } else if (data.kind === 'comparison') {
      subtitle.textContent = data.rows.length + ' runs on ' + data.device;
      comparison(data);
    } else if (data.kind === 'maxbatch') {
      subtitle.textContent = 'tandem maxbatch: ' + data.jobs + ' copies of ' + data.job + ' (' + data.model + '), budget ' + fmtBytes(data.budget_bytes);
      maxbatch(data);
    } else {
      throw new Error('unknown report kind ' + data.kind);
    }
  }

  try {
    render();
  } catch (error) {
    window.reportErrors.push(String(error && error.stack ? error.stack : error));
  }
  // For tests and benchmarks: where the charts are, how long drawing took, what went wrong.
  const charts = [...document.querySelectorAll('.chart')].map((node) => {
    const box = node.getBoundingClientRect();
    return { id: node.id, x: Math.round(box.left + window.scrollX), y: Math.round(box.top + window.scrollY),
             w: Math.round(box.width), h: Math.round(box.height) };
  });
  body.setAttribute('data-charts', JSON.stringify(charts));
  body.setAttribute('data-render-ms', performance.now().toFixed(1));
  body.setAttribute('data-errors', String(window.reportErrors.length));
  if (window.reportErrors.length) {
    const box = document.getElementById('report-errors');
    box.hidden = false;
    box.textContent = 'The report could not be drawn whole:\n' + window.reportErrors.join('\n');
  }
  body.setAttribute('data-render-state', 'done');
})();
