// The dashboard: every figure comes from the `cutrace summary --json` document embedded as
// dashboard.summary (the same code computes both), the time series from the counter tracks.
'use strict';
(function (CT) {
  const el = CT.el;
  let D = null;   // dashboard document
  let S = null;   // its summary
  Chart.defaults.animation = false;
  Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
  Chart.defaults.font.size = 11;
  Chart.defaults.color = '#3a4150';
  Chart.defaults.plugins.legend.labels.boxWidth = 12;

  function card(title, opts, ...body) {
    opts = opts || {};
    return el('div', {class: 'card' + (opts.wide ? ' wide' : '') + (opts.full ? ' full' : ''), 'data-card': opts.id || null},
              el('h3', {}, title, opts.note ? el('span', {class: 'note'}, opts.note) : null), ...body);
  }
  function chartBox(config, h) {
    const c = el('canvas');
    const box = el('div', {class: 'chart', style: `height:${h || 220}px`}, c);
    requestAnimationFrame(() => new Chart(c, config));
    return box;
  }
  // A labelled figure, e.g. stat('GPU busy', '73.1%', 'gpu_busy'): data-stat lets tests find it.
  function stat(label, value, key, sub) {
    return el('div', {class: 'stat'}, el('div', {class: 'stat-label'}, label),
              el('div', {class: 'stat-value', 'data-stat': key}, value),
              sub ? el('div', {class: 'stat-sub'}, sub) : null);
  }
  const nsTick = {callback: (v) => CT.fmtNs(v)};
  const nsTooltip = {callbacks: {label: (c) => `${c.label || c.dataset.label}: ${CT.fmtNs(c.raw)}`}};

  function pie(labels, values, colors, fmt) {
    return {
      type: 'doughnut',
      data: {labels, datasets: [{data: values, backgroundColor: colors || CT.palette, borderWidth: 1}]},
      options: {maintainAspectRatio: false, cutout: '55%',
                plugins: {legend: {display: false},  // pieLegend() lists the slices as text
                          tooltip: {callbacks: {label: (c) => {
                            const tot = c.dataset.data.reduce((a, b) => a + b, 0);
                            return `${c.label}: ${fmt(c.raw)} (${CT.fmtPct(tot ? c.raw / tot : 0)})`;
                          }}}}},
    };
  }
  // Legend lines under a pie, as text (tests read them): label, value, share.
  function pieLegend(key, labels, values, fmt) {
    const tot = values.reduce((a, b) => a + b, 0);
    return el('table', {class: 'legend', 'data-legend': key}, labels.map((l, i) =>
      el('tr', {}, el('td', {class: 'swatch'}, el('i', {style: `background:${CT.palette[i % CT.palette.length]}`})),
         el('td', {}, l), el('td', {class: 'num', 'data-value': l}, fmt(values[i])),
         el('td', {class: 'num muted'}, CT.fmtPct(tot ? values[i] / tot : 0)))));
  }
  function pieCard(title, key, labels, values, fmt, opts) {
    const keep = values.map((v, i) => i).filter((i) => values[i] > 0);
    const ls = keep.map((i) => labels[i]), vs = keep.map((i) => values[i]);
    if (!vs.length) return card(title, opts, el('p', {class: 'empty'}, 'nothing recorded'));
    return card(title, Object.assign({id: key}, opts), chartBox(pie(ls, vs, null, fmt), 170), pieLegend(key, ls, vs, fmt));
  }
  function barChart(labels, datasets, opts) {
    opts = opts || {};
    return {
      type: 'bar',
      data: {labels, datasets},
      options: {maintainAspectRatio: false, indexAxis: opts.horizontal ? 'y' : 'x',
                scales: {[opts.horizontal ? 'x' : 'y']: {ticks: opts.ticks || {}, stacked: !!opts.stacked, beginAtZero: true,
                                                         title: {display: !!opts.valueTitle, text: opts.valueTitle || ''}},
                         [opts.horizontal ? 'y' : 'x']: {stacked: !!opts.stacked,
                           title: {display: !!opts.labelTitle, text: opts.labelTitle || ''},
                           ticks: opts.horizontal ? {callback: function (v) { const s = this.getLabelForValue(v); return s.length > 48 ? s.slice(0, 45) + '...' : s; }} : {}}},
                plugins: {legend: {display: datasets.length > 1}, tooltip: opts.tooltip || {}}},
    };
  }
  function lineChart(datasets, unitFmt, opts) {
    opts = opts || {};
    for (const d of datasets) d.pointRadius = d.data.length <= 40 ? 3 : 0;  // few samples: show them
    return {
      type: 'line',
      data: {datasets},
      options: {maintainAspectRatio: false, parsing: false, normalized: true,
                elements: {point: {radius: 0}, line: {borderWidth: 1.5, stepped: opts.stepped || false}},
                scales: {x: {type: 'linear', min: 0, ticks: {callback: (v) => CT.fmtNs(v)}, title: {display: true, text: 'time since the first event'}},
                         y: {beginAtZero: true, max: opts.max, ticks: {callback: unitFmt}}},
                plugins: {decimation: {enabled: true, algorithm: 'min-max'},
                          tooltip: {mode: 'nearest', intersect: false,
                                    callbacks: {title: (items) => CT.fmtNs(items[0].raw.x),
                                                label: (c) => `${c.dataset.label}: ${unitFmt(c.raw.y)}`}}}},
    };
  }

  const counters = (series) => D.tracks.filter((t) => t.kind === 'counter' && t.series === series);
  const fileLabel = (fi) => {
    const f = D.files[fi] || {};
    return (f.rank >= 0 ? 'rank ' + f.rank : 'pid ' + f.pid) + (D.files.length > 1 && f.host ? ' @' + f.host : '');
  };
  const points = (t) => t.ts.map((x, i) => ({x, y: t.value[i]}));
  const pctFmt = (v) => Number(v).toFixed(0) + '%';

  // ---- sections ----------------------------------------------------------------------------

  // Ranks that did not end cleanly: "rank 1: exit status 3, rank 0: truncated" (null when none).
  function rankTrouble() {
    const bad = S.ranks.filter((r) => !r.complete || r.exit_status > 0);
    if (!bad.length) return null;
    const what = (r) => (r.rank >= 0 ? 'rank ' + r.rank : 'pid ' + r.pid) + ': ' +
      (!r.complete ? 'truncated' : 'exit status ' + r.exit_status);
    const shown = bad.slice(0, 3).map(what).join(', ');
    return bad.length > 3 ? `${shown}, ${CT.fmtCount(bad.length - 3)} more` : shown;
  }

  function overview() {
    const k = S.kernel_totals, g = S.gpu_total, st = S.steps;
    // Over the ranks that sampled the CPU: none sampled is "n/a", not 0%.
    const sampled = S.ranks.filter((r) => r.cpu.samples > 0);
    const hostUtil = sampled.length ? sampled.reduce((a, r) => a + r.cpu.host_util_mean, 0) / sampled.length : null;
    return el('div', {class: 'stats'},
      stat('Elapsed (trace)', CT.fmtNs(D.extent_ns), 'extent'),
      stat('GPU busy', CT.fmtPct(g.utilization), 'gpu_utilization', `${CT.fmtNs(g.busy_ns)} of ${CT.fmtNs(g.elapsed_ns)}`),
      stat('Kernel GPU time', CT.fmtNs(k.total_ns), 'kernel_total_ns', `${CT.fmtCount(k.names)} names`),
      stat('Kernel launches', CT.fmtCount(k.count), 'kernel_count', k.untimed ? `${CT.fmtCount(k.untimed)} untimed` : null),
      stat('Steps', CT.fmtCount(st.count), 'step_count', st.count ? `median ${CT.fmtNs(st.cpu.median_ns)}` : 'no step ranges'),
      stat('Host CPU (mean)', hostUtil === null ? 'n/a' : hostUtil.toFixed(1) + '%', 'cpu_host_util',
           hostUtil === null ? 'no CPU samples' : null),
      stat('Ranks', CT.fmtCount(S.ranks.length), 'ranks', rankTrouble()),
      stat('Events', CT.fmtCount(D.events), 'events'));
  }

  function utilisationCharts() {
    const out = [];
    const busy = counters('gpu_busy'), nvml = counters('gpu_util');
    const gpuSeries = (nvml.length ? nvml : busy);
    const src = nvml.length ? 'NVML utilisation' : 'busy share of each interval, from the trace\'s GPU operations';
    out.push(pieCard('GPU active vs idle', 'gpu_active', ['active', 'idle'], [S.gpu_total.busy_ns, S.gpu_total.idle_ns], CT.fmtNs,
                     {note: 'union of GPU operations, first to last on each device'}));
    if (gpuSeries.length) {
      out.push(card('GPU utilisation over time, per GPU', {wide: true, note: src},
        chartBox(lineChart(gpuSeries.map((t, i) => ({label: `${fileLabel(t.file)} GPU ${t.device}`, data: points(t),
                                                     borderColor: CT.palette[i % CT.palette.length]})), pctFmt, {max: 100}))));
      // Per node: the mean over its GPUs (same bins for the busy series; NVML samples by time).
      const byHost = new Map();
      for (const t of gpuSeries) {
        const h = (D.files[t.file] || {}).host || '(unknown)';
        if (!byHost.has(h)) byHost.set(h, []);
        byHost.get(h).push(t);
      }
      const nodeSets = [...byHost.entries()].map(([h, ts], i) => {
        const base = ts[0];
        const data = base.ts.map((x, j) => ({x, y: ts.reduce((a, t) => a + valueAt(t, x, j), 0) / ts.length}));
        return {label: `node ${h} (${ts.length} GPU${ts.length > 1 ? 's' : ''})`, data, borderColor: CT.palette[i % CT.palette.length]};
      });
      out.push(card('GPU utilisation over time, per node (mean of its GPUs)', {wide: true, note: src},
                    chartBox(lineChart(nodeSets, pctFmt, {max: 100}))));
    }
    const cpuRanks = S.ranks.filter((r) => r.cpu.samples > 0);
    const hostUtil = cpuRanks.length ? cpuRanks.reduce((a, r) => a + r.cpu.host_util_mean, 0) / cpuRanks.length : 0;
    if (cpuRanks.length) {
      out.push(pieCard('CPU active time (host, mean of samples)', 'cpu_active', ['active', 'idle'], [hostUtil, 100 - hostUtil],
                       (v) => v.toFixed(1) + '%'));
      const cpu = counters('cpu_host').concat(counters('cpu_process'));
      out.push(card('CPU utilisation over time', {wide: true, note: 'host: all cores; process: % of one core'},
        chartBox(lineChart(cpu.map((t, i) => ({label: `${fileLabel(t.file)} ${t.series === 'cpu_host' ? 'host' : 'process'}`,
                                               data: points(t), borderColor: CT.palette[i % CT.palette.length]})), pctFmt, {stepped: true}))));
    } else {
      out.push(card('CPU utilisation', {}, el('p', {class: 'empty'}, 'no CPU samples in this trace')));
    }
    const mem = counters('gpu_mem_used').concat(counters('gpu_mem_alloc'));
    if (mem.length) {
      out.push(card('Device memory over time', {wide: true, id: 'memory', note: 'NVML used, and the sum of live cuMemAlloc* allocations'},
        chartBox(lineChart(mem.map((t, i) => ({label: `${fileLabel(t.file)} GPU ${t.device} ${t.series === 'gpu_mem_used' ? 'used (NVML)' : 'allocated'}`,
                                               data: points(t), borderColor: CT.palette[i % CT.palette.length]})), CT.fmtBytes, {stepped: true}))));
    }
    return out;
  }
  function valueAt(t, x, j) {  // t's value at time x (same index when the bins line up)
    if (t.ts[j] === x) return t.value[j];
    let lo = 0, hi = t.ts.length - 1;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (t.ts[m] <= x) lo = m; else hi = m - 1; }
    return t.value[lo] || 0;
  }

  // CPU performance counters: IPC over time (timeline tracks), the counters per rank and the
  // ones that could not be read (summary --json ranks[].cpu_counters).
  function counterCharts() {
    const out = [];
    const ranks = S.ranks.filter((r) => r.cpu_counters && (r.cpu_counters.counters.length || r.cpu_counters.missing.length));
    if (!ranks.length) return out;
    const ipc = counters('cpu_counter').filter((t) => t.unit === 'IPC');
    if (ipc.length) {
      out.push(card('IPC over time (instructions / cycles)', {wide: true, id: 'ipc'},
        chartBox(lineChart(ipc.map((t, i) => ({label: fileLabel(t.file), data: points(t), borderColor: CT.palette[i % CT.palette.length]})),
                           (v) => Number(v).toFixed(2), {stepped: true}))));
    }
    const rate = (c) => (c.unit === 'ns' ? (c.per_second / 1e9).toFixed(2) + ' CPUs' : CT.fmtCount(Math.round(c.per_second)) + '/s');
    const rows = [];
    for (const r of ranks) {
      for (const c of r.cpu_counters.counters) {
        rows.push({rank: r.rank, name: c.name, scope: c.scope === 'cpu' ? 'cpu' + c.cpu : 'process', total: c.total,
                   per_second: c.per_second, shown: rate(c), source: c.source, running: c.min_running});
      }
    }
    const stats = ranks.filter((r) => r.cpu_counters.ipc !== null)
      .map((r) => stat(`IPC rank ${r.rank}`, r.cpu_counters.ipc.toFixed(3), `ipc_${r.rank}`));
    const missing = [];
    for (const r of ranks) {
      for (const m of r.cpu_counters.missing) {
        missing.push(el('li', {'data-missing': m.name}, `rank ${r.rank}: ${m.name}${m.scope === 'cpu' ? ' per CPU' : ''}: ${m.reason}`));
      }
    }
    out.push(card('CPU counters (perf_event_open)', {full: true, id: 'cpu-counters', note: 'totals over the sampled intervals'},
      stats.length ? el('div', {class: 'stats small'}, ...stats) : null,
      rows.length ? CT.table([
        {key: 'rank', title: 'Rank', num: true},
        {key: 'name', title: 'Counter', cls: 'name'},
        {key: 'scope', title: 'Scope'},
        {key: 'total', title: 'Total', num: true, fmt: CT.fmtCount},
        {key: 'per_second', title: 'Rate', num: true, fmt: (v, row) => row.shown},
        {key: 'source', title: 'Source'},
        {key: 'running', title: 'Counting', num: true, fmt: CT.fmtPct},
      ], rows, {id: 'cpu-counters-table'}) : null,
      missing.length ? el('div', {class: 'missing-counters'}, el('p', {}, 'Not recorded:'), el('ul', {}, ...missing)) : null));
    return out;
  }

  // What the terminal summary shows beside the charts: launch latency, the GPU time breakdown,
  // short kernels and the synchronisation call sites (summary --json, same keys).
  function summaryCards() {
    const out = [];
    const row = (label, value, key) => el('tr', {}, el('td', {}, label), el('td', {class: 'num', 'data-val': key}, value));
    const kv = (id, title, note, rows) => card(title, {id, note}, el('table', {class: 'data kv'}, el('tbody', {}, ...rows)));
    const ll = S.launch_latency;
    out.push(kv('launch-latency', 'Launch latency (call return to GPU start)', `${CT.fmtCount(ll.count)} launches`, ll.count ? [
      row('median', CT.fmtNs(ll.median_ns), 'median_ns'), row('p90', CT.fmtNs(ll.p90_ns), 'p90_ns'),
      row('p99', CT.fmtNs(ll.p99_ns), 'p99_ns'), row('max', CT.fmtNs(ll.max_ns), 'max_ns'),
      row('mean', CT.fmtNs(ll.mean_ns), 'mean_ns'), row('started before the call returned', CT.fmtCount(ll.negative), 'negative'),
    ] : [row('no timed launches', '', 'none')]));
    const b = S.gpu_total.breakdown;
    out.push(kv('gpu-breakdown', 'GPU time breakdown', 'all devices, first to last operation', [
      row('compute', CT.fmtNs(b.compute_ns), 'compute_ns'), row('communication', CT.fmtNs(b.communication_ns), 'communication_ns'),
      row('memory', CT.fmtNs(b.memory_ns), 'memory_ns'), row('idle', CT.fmtNs(b.idle_ns), 'idle_ns'),
      row('idle, host waiting (sync)', CT.fmtNs(b.host_wait_ns), 'host_wait_ns'),
      row('idle, waiting for the next kernel', CT.fmtNs(b.kernel_wait_ns), 'kernel_wait_ns'),
      row('communication overlapped with compute', CT.fmtNs(b.overlap_ns), 'overlap_ns'),
    ]));
    const sk = S.short_kernels;
    out.push(kv('short-kernels', `Short kernels (< ${CT.fmtNs(sk.threshold_ns)})`, null, [
      row('launches', CT.fmtCount(sk.count), 'count'), row('GPU time', CT.fmtNs(sk.total_ns), 'total_ns'),
      row('share of timed launches', CT.fmtPct(sk.launch_share), 'launch_share'),
      row('share of kernel GPU time', CT.fmtPct(sk.time_share), 'time_share'),
    ]));
    const sites = (S.sync_call_sites || {}).sites || [];
    out.push(card('Synchronisation call sites (host time blocked)', {full: true, id: 'sync-sites'},
      sites.length ? CT.table([
        {key: 'site', title: 'Call site', cls: 'name'},
        {key: 'count', title: 'Count', num: true, fmt: CT.fmtCount},
        {key: 'total_ns', title: 'Total', num: true, fmt: CT.fmtNs},
        {key: 'mean_ns', title: 'Mean', num: true, fmt: CT.fmtNs},
        {key: 'max_ns', title: 'Max', num: true, fmt: CT.fmtNs},
      ], sites, {id: 'sync-sites'}) : el('p', {class: 'empty'}, 'no synchronisation with a recorded call stack')));
    return out;
  }

  function kernelCharts() {
    const ks = S.kernels;
    const out = [];
    if (!ks.length) return [card('Kernels', {}, el('p', {class: 'empty'}, 'no kernel launches in this trace'))];
    // All kernels' time: top k + other, k adjustable.
    const box = el('div');
    const kInput = el('input', {type: 'number', min: 1, max: 50, value: 8, 'data-control': 'topk', class: 'small'});
    function drawTopK() {
      const k = Math.max(1, Math.min(50, Number(kInput.value) || 8));
      const top = ks.slice(0, k);
      const rest = ks.slice(k).reduce((a, x) => a + x.total_ns, 0);
      const labels = top.map((x) => x.name).concat(ks.length > k ? [`other (${ks.length - k} name${ks.length - k === 1 ? '' : 's'})`] : []);
      const values = top.map((x) => x.total_ns).concat(ks.length > k ? [rest] : []);
      box.textContent = '';
      box.appendChild(chartBox(pie(labels.map((l) => (l.length > 40 ? l.slice(0, 37) + '...' : l)), values, null, CT.fmtNs), 220));
      box.appendChild(pieLegend('kernel_topk', labels, values, CT.fmtNs));
    }
    kInput.addEventListener('change', drawTopK);
    drawTopK();
    out.push(card('Time spent by all kernels', {id: 'kernel_topk'}, el('label', {class: 'control'}, 'top k ', kInput), box));
    const top15 = ks.slice(0, 15);
    out.push(card('Top 15 kernels by GPU time', {wide: true, id: 'top15_time'},
      chartBox(barChart(top15.map((x) => x.name), [{label: 'GPU time', data: top15.map((x) => x.total_ns), backgroundColor: '#4e79a7'}],
                        {horizontal: true, ticks: nsTick, tooltip: nsTooltip}), Math.max(160, 22 * top15.length + 40))));
    const byCount = ks.slice().sort((a, b) => b.count - a.count);
    const k15 = byCount.slice(0, 15);
    out.push(card('Launch counts, top 15 kernels', {wide: true},
      chartBox(barChart(k15.map((x) => x.name), [{label: 'launches', data: k15.map((x) => x.count), backgroundColor: '#59a14f'}],
                        {horizontal: true}), Math.max(160, 22 * k15.length + 40))));
    const restN = byCount.slice(10).reduce((a, x) => a + x.count, 0);
    out.push(pieCard('Launch counts, all kernels', 'kernel_launches',
                     byCount.slice(0, 10).map((x) => x.name).concat(byCount.length > 10 ? [`other (${byCount.length - 10} name${byCount.length - 10 === 1 ? '' : 's'})`] : []),
                     byCount.slice(0, 10).map((x) => x.count).concat(byCount.length > 10 ? [restN] : []), CT.fmtCount));
    const prec = Object.entries(S.kernel_precision).filter(([, p]) => p.count > 0).sort((a, b) => b[1].total_ns - a[1].total_ns);
    out.push(pieCard('Kernel precision (GPU time)', 'precision', prec.map(([n]) => n), prec.map(([, p]) => p.total_ns), CT.fmtNs,
                     {note: 'inferred from kernel names'}));
    return out;
  }

  function gpuCharts() {
    const g = S.gpu_total;
    const syncNs = Object.values(S.syncs).reduce((a, s) => a + s.total_ns, 0);
    const out = [];
    const labels = ['kernels', 'memcpy', 'memset', 'sync (CPU blocked)'];
    const values = [g.kernel_ns, g.memcpy_ns, g.memset_ns, syncNs];
    if (!values.some((v) => v > 0)) return [card('GPU activity distribution', {}, el('p', {class: 'empty'}, 'nothing recorded'))];
    out.push(card('GPU activity distribution', {id: 'gpu_activity', note: 'GPU time (overlaps counted once); sync: host time blocked in synchronisations'},
      chartBox(barChart(labels, [{label: 'time', data: values, backgroundColor: CT.palette.slice(0, 4)}],
                        {ticks: nsTick, tooltip: nsTooltip}), 190),
      pieLegend('gpu_activity', labels, values, CT.fmtNs)));
    const mo = Object.entries(S.memory_ops).filter(([k]) => k !== 'total_ns');
    out.push(pieCard('GPU memory operations (GPU time)', 'memory_ops', mo.map(([k]) => k), mo.map(([, v]) => v.total_ns), CT.fmtNs));
    return out;
  }

  function stepCharts() {
    const st = S.steps;
    const out = [];
    if (!st.count) {
      out.push(card('Step time distribution', {}, el('p', {class: 'empty'}, `no steps (${st.source})`)));
      return out;
    }
    const bins = st.cpu_histogram;
    out.push(card('Step time distribution', {wide: true, id: 'steps', note: `${CT.fmtCount(st.count)} steps, ${st.source}`},
      chartBox(barChart(bins.map((b) => `${CT.fmtNs(b.lo_ns)}`), [{label: 'steps', data: bins.map((b) => b.count), backgroundColor: '#76b7b2',
                                                                    barPercentage: 1, categoryPercentage: 1}],
                        {labelTitle: 'step duration (CPU, bin start)', valueTitle: 'steps'}), 200),
      el('div', {class: 'stats small'},
         stat('mean', CT.fmtNs(st.cpu.mean_ns), 'step_mean'), stat('median', CT.fmtNs(st.cpu.median_ns), 'step_median'),
         stat('p90', CT.fmtNs(st.cpu.p90_ns), 'step_p90'), stat('min', CT.fmtNs(st.cpu.min_ns), 'step_min'),
         stat('max', CT.fmtNs(st.cpu.max_ns), 'step_max'))));
    return out;
  }

  // "New histogram": the duration distribution of any annotation (range) name or glob.
  function histogramControl(grid) {
    const names = D.annotations.map((a) => a.name);
    const list = el('datalist', {id: 'annotation-names'}, names.map((n) => el('option', {value: n})));
    const input = el('input', {type: 'text', list: 'annotation-names', placeholder: 'annotation name or glob (step_*)', 'data-control': 'hist-name'});
    const bins = el('input', {type: 'number', min: 2, max: 200, value: 20, class: 'small', 'data-control': 'hist-bins'});
    const msg = el('span', {class: 'note'});
    const add = () => {
      const pat = input.value.trim();
      if (!pat) return;
      const match = CT.nameMatcher(pat);
      const hit = D.annotations.filter((a) => match(a.name));
      const vals = hit.flatMap((a) => a.durations_ns);
      if (!vals.length) { msg.textContent = `no annotation matches "${pat}"`; return; }
      msg.textContent = '';
      grid.insertBefore(histogramCard(pat, vals, Math.max(2, Math.min(200, Number(bins.value) || 20)), hit.some((a) => a.truncated)),
                        grid.querySelector('[data-card="new-histogram"]').nextSibling);
    };
    input.addEventListener('keydown', (e) => { if (e.key === 'Enter') add(); });
    return card('New histogram', {id: 'new-histogram', note: 'duration distribution of an annotation'},
                el('div', {class: 'controls'}, input, list, el('label', {class: 'control'}, 'bins ', bins),
                   el('button', {onclick: add, 'data-control': 'hist-add'}, 'Plot'), msg),
                el('p', {class: 'muted'}, `${names.length} annotation names in this trace`));
  }
  function histogramCard(pat, vals, n, truncated) {
    let lo = Infinity, hi = -Infinity;
    for (const v of vals) { if (v < lo) lo = v; if (v > hi) hi = v; }
    const w = hi > lo ? (hi - lo) / n : 1;
    const counts = new Array(hi > lo ? n : 1).fill(0);
    for (const v of vals) counts[Math.min(counts.length - 1, Math.floor((v - lo) / w))]++;
    const sorted = vals.slice().sort((a, b) => a - b);
    const med = sorted[Math.ceil(0.5 * sorted.length) - 1];
    return card(`Duration of "${pat}"`, {wide: true, id: 'hist-' + pat,
                note: `${CT.fmtCount(vals.length)} ranges, median ${CT.fmtNs(med)}${truncated ? ' (first 100,000 per name)' : ''}`},
      chartBox(barChart(counts.map((c, i) => CT.fmtNs(lo + i * w)), [{label: 'ranges', data: counts, backgroundColor: '#edc948',
                                                                       barPercentage: 1, categoryPercentage: 1}],
                        {labelTitle: 'duration (bin start)', valueTitle: 'ranges'}), 200));
  }

  function tables() {
    const out = [];
    const ks = S.kernels.map((k) => Object.assign({}, k));
    const sampled = S.kernel_totals.est_total_ns !== undefined;
    out.push(card('Kernels', {full: true, id: 'kernels-table', note: 'click a column to sort'}, CT.table([
      {key: 'name', title: 'Name', cls: 'name'},
      {key: 'count', title: 'Count', num: true, fmt: CT.fmtCount},
      {key: 'total_ns', title: 'Total', num: true, fmt: CT.fmtNs},
      // A sampled trace (--gpu-sample): Total is the timed launches', Est. total all launches'.
      ...(sampled ? [{key: 'est_total_ns', title: 'Est. total', num: true, fmt: CT.fmtNs}] : []),
      {key: 'share', title: 'Time %', num: true, fmt: CT.fmtPct},
      {key: 'mean_ns', title: 'Mean', num: true, fmt: CT.fmtNs},
      {key: 'median_ns', title: 'Median', num: true, fmt: CT.fmtNs},
      {key: 'min_ns', title: 'Min', num: true, fmt: CT.fmtNs},
      {key: 'max_ns', title: 'Max', num: true, fmt: CT.fmtNs},
      {key: 'precision', title: 'Precision'},
    ], ks, {id: 'kernels', sortKey: sampled ? 'est_total_ns' : 'total_ns'})));
    out.push(card('CUDA API calls', {wide: true}, CT.table([
      {key: 'name', title: 'API', cls: 'name'},
      {key: 'count', title: 'Count', num: true, fmt: CT.fmtCount},
      {key: 'total_ns', title: 'Total', num: true, fmt: CT.fmtNs},
      {key: 'mean_ns', title: 'Mean', num: true, fmt: CT.fmtNs},
      {key: 'max_ns', title: 'Max', num: true, fmt: CT.fmtNs},
    ], S.api, {id: 'api', sortKey: 'total_ns'})));
    const copies = Object.entries(S.memcpy).map(([k, c]) => Object.assign({kind: k}, c)).concat([Object.assign({kind: 'memset'}, S.memset)]);
    out.push(card('Memory copies and sets', {wide: true}, CT.table([
      {key: 'kind', title: 'Kind'},
      {key: 'count', title: 'Count', num: true, fmt: CT.fmtCount},
      {key: 'bytes', title: 'Bytes', num: true, fmt: CT.fmtBytes},
      {key: 'total_ns', title: 'GPU time', num: true, fmt: CT.fmtNs},
      {key: 'mean_ns', title: 'Mean', num: true, fmt: CT.fmtNs},
    ], copies, {id: 'copies'})));
    out.push(card('Synchronisation (CPU blocked)', {wide: true}, CT.table([
      {key: 'kind', title: 'Kind'},
      {key: 'count', title: 'Count', num: true, fmt: CT.fmtCount},
      {key: 'total_ns', title: 'Total', num: true, fmt: CT.fmtNs},
      {key: 'mean_ns', title: 'Mean', num: true, fmt: CT.fmtNs},
      {key: 'max_ns', title: 'Max', num: true, fmt: CT.fmtNs},
    ], Object.entries(S.syncs).map(([k, s]) => Object.assign({kind: k}, s)), {id: 'syncs', sortKey: 'total_ns'})));
    // Kernels by the Python line that launched them (--python-stacks launch): only when recorded.
    const py = (S.python_call_sites && S.python_call_sites.sites) || [];
    if (py.length) {
      out.push(card('GPU time by Python call site', {wide: true, note: `innermost frame outside ${S.python_call_sites.skip}`}, CT.table([
        {key: 'site', title: 'Call site', cls: 'name'},
        {key: 'kernels', title: 'Kernels', num: true, fmt: CT.fmtCount},
        {key: 'timed', title: 'Timed', num: true, fmt: CT.fmtCount},
        {key: 'gpu_ns', title: 'GPU time', num: true, fmt: CT.fmtNs},
      ], py, {id: 'pysites', sortKey: 'gpu_ns'})));
    }
    out.push(card('NVTX ranges and annotations', {full: true}, CT.table([
      {key: 'name', title: 'Name', cls: 'name'},
      {key: 'domain', title: 'Domain'},
      {key: 'count', title: 'Count', num: true, fmt: CT.fmtCount},
      {key: 'cpu_total_ns', title: 'CPU total', num: true, fmt: CT.fmtNs},
      {key: 'cpu_mean_ns', title: 'CPU mean', num: true, fmt: CT.fmtNs},
      {key: 'cpu_median_ns', title: 'CPU median', num: true, fmt: CT.fmtNs},
      {key: 'gpu_total_ns', title: 'GPU total', num: true, fmt: CT.fmtNs},
      {key: 'gpu_ops', title: 'GPU ops', num: true, fmt: CT.fmtCount},
    ], S.ranges, {id: 'ranges', sortKey: 'cpu_total_ns'})));
    out.push(card('GPU activity per device', {full: true}, CT.table([
      {key: 'rank', title: 'Rank', num: true},
      {key: 'device', title: 'Device', num: true},
      {key: 'elapsed_ns', title: 'Elapsed', num: true, fmt: CT.fmtNs},
      {key: 'busy_ns', title: 'Busy', num: true, fmt: CT.fmtNs},
      {key: 'utilization', title: 'Util', num: true, fmt: CT.fmtPct},
      {key: 'kernel_ns', title: 'Kernels', num: true, fmt: CT.fmtNs},
      {key: 'memcpy_ns', title: 'Memcpy', num: true, fmt: CT.fmtNs},
      {key: 'memset_ns', title: 'Memset', num: true, fmt: CT.fmtNs},
      {key: 'idle_ns', title: 'Idle', num: true, fmt: CT.fmtNs},
    ], S.devices, {id: 'devices'})));
    return out;
  }

  // Files with more than one capture window (--capture-repeat, cudaProfilerApi, manual): the job
  // window by window, to see how it changed over the run.
  function windowCards() {
    const ranks = S.ranks.filter((r) => r.windows && r.windows.length > 1);
    if (!ranks.length) return [];
    const rows = [];
    for (const r of ranks) {
      const t0 = r.windows[0].begin_ns;
      for (const w of r.windows) {
        rows.push({rank: r.rank, window: w.index, start: w.begin_ns - t0,
                   length: w.end_ns === null ? null : w.end_ns - w.begin_ns, steps: w.steps.count,
                   step_median: w.steps.count ? w.steps.cpu_median_ns : null,
                   step_mean: w.steps.count ? w.steps.cpu_mean_ns : null, kernels: w.kernels, kernel_ns: w.kernel_ns});
      }
    }
    const most = ranks.reduce((a, r) => (r.windows.length > a.windows.length ? r : a));
    const withSteps = rows.some((r) => r.steps > 0);
    const series = ranks.map((r, i) => ({label: 'rank ' + r.rank, backgroundColor: CT.palette[i % CT.palette.length],
                                          data: r.windows.map((w) => (withSteps ? (w.steps.count ? w.steps.cpu_median_ns : null) : w.kernel_ns))}));
    return [card('Capture windows', {full: true, id: 'windows',
                                     note: `${CT.fmtCount(rows.length)} windows; ${withSteps ? 'median step time' : 'kernel GPU time'} per window`},
      chartBox(barChart(most.windows.map((w) => 'window ' + w.index), series, {ticks: nsTick, tooltip: nsTooltip}), 200),
      CT.table([
        {key: 'rank', title: 'Rank', num: true},
        {key: 'window', title: 'Window', num: true},
        {key: 'start', title: 'Start', num: true, fmt: CT.fmtNs},
        {key: 'length', title: 'Length', num: true, fmt: CT.fmtNs},
        {key: 'steps', title: 'Steps', num: true, fmt: CT.fmtCount},
        {key: 'step_median', title: 'Step median', num: true, fmt: CT.fmtNs},
        {key: 'step_mean', title: 'Step mean', num: true, fmt: CT.fmtNs},
        {key: 'kernels', title: 'Launches', num: true, fmt: CT.fmtCount},
        {key: 'kernel_ns', title: 'Kernel time', num: true, fmt: CT.fmtNs},
      ], rows, {id: 'windows'}))];
  }

  // The straggler comes from the collectives (summary.stragglers): a collective ends together on
  // every rank, so step times are equal and cannot name it; without collectives, the summary's
  // slowest rank by its criterion.
  function rankComparison() {
    if (S.ranks.length < 2) return [];
    const st = S.stragglers && S.stragglers.analysed ? S.stragglers : null;
    const byFile = new Map(((st && st.ranks) || []).map((r) => [r.file, r]));
    const rows = S.ranks.map((r) => {
      const x = byFile.get(r.file) || {};
      return {rank: r.rank, host: r.host, steps: r.steps.count, step_mean: r.steps.cpu_mean_ns,
              step_median: r.steps.cpu_median_ns, kernels: r.kernels, compute: r.kernel_ns - r.comm_kernel_ns,
              comm: r.comm_kernel_ns, busy: r.gpu_busy_ns,
              idle: r.gpu_elapsed_ns ? 1 - r.gpu_busy_ns / r.gpu_elapsed_ns : 0,
              last: st ? `${CT.fmtCount(x.last_arrivals || 0)} of ${CT.fmtCount(x.collectives || 0)}` : null,
              waited: st ? x.waited_for_ns : null, host_step: st ? x.host_per_step_ns : null,
              range: x.range ? `${x.range.name} ${CT.fmtNs(x.range.ns)} (others ${CT.fmtNs(x.range.others_ns)})` : ''};
    });
    const slow = S.rank_comparison;
    const note = st ? (st.straggler_rank !== null ? `straggler: rank ${st.straggler_rank}` : 'no straggler')
                    : (slow ? `slowest: rank ${slow.slowest_rank} (${slow.criterion})` : '') +
                      (S.stragglers ? `; ${S.stragglers.verdict}` : '');
    const verdict = S.stragglers ? el('p', {class: 'verdict', 'data-straggler': st && st.straggler_rank !== null ? String(st.straggler_rank) : ''},
                                      S.stragglers.verdict) : null;
    const labels = rows.map((r) => 'rank ' + r.rank);
    const cols = [
      {key: 'rank', title: 'Rank', num: true}, {key: 'host', title: 'Host'},
      {key: 'steps', title: 'Steps', num: true, fmt: CT.fmtCount},
      {key: 'step_mean', title: 'Step mean', num: true, fmt: CT.fmtNs},
      {key: 'step_median', title: 'Step median', num: true, fmt: CT.fmtNs},
      {key: 'kernels', title: 'Launches', num: true, fmt: CT.fmtCount},
      {key: 'compute', title: 'Compute', num: true, fmt: CT.fmtNs},
      {key: 'comm', title: 'Communication', num: true, fmt: CT.fmtNs},
      {key: 'busy', title: 'GPU busy', num: true, fmt: CT.fmtNs},
      {key: 'idle', title: 'Idle %', num: true, fmt: CT.fmtPct},
    ];
    if (st) {
      cols.push({key: 'last', title: 'Last to arrive'}, {key: 'waited', title: 'Others waited', num: true, fmt: CT.fmtNs},
                {key: 'host_step', title: 'Host / step', num: true, fmt: (v) => (v === null || v === undefined ? 'n/a' : CT.fmtNs(v))},
                {key: 'range', title: 'Range above the others'});
    }
    return [card('Per-rank comparison', {full: true, id: 'ranks', note},
      verdict,
      chartBox(barChart(labels, [{label: 'compute kernels', data: rows.map((r) => r.compute), backgroundColor: '#4e79a7'},
                                 {label: 'communication kernels', data: rows.map((r) => r.comm), backgroundColor: '#f28e2b'}],
                        {stacked: true, ticks: nsTick, tooltip: nsTooltip}), 220),
      CT.table(cols, rows, {id: 'ranks'}))];
  }

  CT.renderDashboard = function (root, dashboard) {
    D = dashboard;
    S = dashboard.summary;
    root.textContent = '';
    root.appendChild(overview());
    const drops = S.drops;
    if (drops && drops.records > 0) {  // first: the figures below are lower bounds
      const of = drops.of ? ` of ${CT.fmtCount(drops.of)}` : '';
      const pct = drops.of ? ` (${(100 * drops.records / drops.of).toFixed(1)}%)` : '';
      const kinds = Object.entries(drops.by_kind).filter(([, n]) => n > 0)
        .map(([k, n]) => `${k.replace('_', ' ')} ${CT.fmtCount(n)}`).join(', ');
      const why = drops.records > drops.at_exit && drops.budget_bytes
        ? `: the capture buffer budget (${Math.round(drops.budget_bytes / 1048576)} MB) was reached; record again with a larger --buffer-mb`
        : ': calls in progress when the process ended';
      root.appendChild(el('p', {class: 'warning drops', id: 'drops-banner'},
        `Incomplete capture: ${CT.fmtCount(drops.records)}${of} records dropped${pct}${why}. Missing: ${kinds}. ` +
        'Counts and totals on this page are lower bounds; the timeline marks the intervals in red.'));
    }
    for (const e of D.errors || []) root.appendChild(el('p', {class: 'warning'}, e));
    for (const w of D.clock_warnings || []) root.appendChild(el('p', {class: 'warning', 'data-clock': ''}, 'clock alignment: ' + w));
    for (const n of S.notes || []) root.appendChild(el('p', {class: 'warning'}, n));
    const grid = el('div', {class: 'grid'});
    const add = (cards) => cards.forEach((c) => grid.appendChild(c));
    add(utilisationCharts());
    add(counterCharts());
    add(gpuCharts());
    add(kernelCharts());
    add(stepCharts());
    add(summaryCards());
    grid.appendChild(histogramControl(grid));
    add(windowCards());
    add(rankComparison());
    add(tables());
    root.appendChild(grid);
  };
})(window.CT);
