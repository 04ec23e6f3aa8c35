// The diff page: `cutrace diff --html` embeds the `cutrace diff --json` document as #cutrace-diff
// (docs/DIFF.md), `cutrace serve` has it fetch diff.json; names reach the page as text only (CT.el).
'use strict';
(function (CT) {
  const el = CT.el;
  Chart.defaults.animation = false;
  Chart.defaults.font.size = 11;

  const signedNs = (v) => (Math.round(v) === 0 ? '0' : (v > 0 ? '+' : '-') + CT.fmtNs(Math.abs(v)));
  const ratio = (r) => (r ? r.toFixed(2) + 'x' : '-');
  function card(title, id, ...body) {
    return el('div', {class: 'card full', 'data-card': id}, el('h3', {}, title), ...body);
  }
  function stat(label, value, key) {
    return el('div', {class: 'stat'}, el('div', {class: 'stat-label'}, label),
              el('div', {class: 'stat-value', 'data-stat': key}, value));
  }
  function chart(config, h) {
    const c = el('canvas');
    const box = el('div', {class: 'chart', style: `height:${h}px`}, c);
    requestAnimationFrame(() => new Chart(c, config));
    return box;
  }

  function steps(d) {
    const rows = [];
    for (const [label, key] of [['CPU (wall)', 'cpu'], ['GPU (span)', 'gpu']]) {
      const s = d.steps[key];
      if (!s.a || !s.b) continue;
      rows.push({what: label, a_median: s.a.median_ns, a_p90: s.a.p90_ns, b_median: s.b.median_ns, b_p90: s.b.p90_ns,
                 change: s.median_change_ns, ratio: s.ratio, beyond: s.beyond_spread ? 'yes' : 'no'});
    }
    return card('Step time', 'steps', CT.table([
      {key: 'what', title: ''}, {key: 'a_median', title: 'A median', num: true, fmt: CT.fmtNs},
      {key: 'a_p90', title: 'A p90', num: true, fmt: CT.fmtNs}, {key: 'b_median', title: 'B median', num: true, fmt: CT.fmtNs},
      {key: 'b_p90', title: 'B p90', num: true, fmt: CT.fmtNs}, {key: 'change', title: 'Change', num: true, fmt: signedNs},
      {key: 'ratio', title: 'Ratio', num: true, fmt: ratio}, {key: 'beyond', title: 'Beyond spread'}], rows, {id: 'steps'}),
    el('p', {class: 'note'}, 'Beyond spread: ' + d.spread_rule));
  }

  function gpu(d) {
    const keys = [['busy_ns', 'Busy'], ['compute_ns', 'Compute'], ['communication_ns', 'Communication'],
                  ['memory_ns', 'Memory'], ['overlap_ns', 'Comm/comp overlap'], ['idle_ns', 'Idle']];
    const share = (g, k) => (g.elapsed_ns ? g[k] / g.elapsed_ns : 0);
    return card('GPU activity (% of elapsed)', 'gpu', chart({
      type: 'bar',
      data: {labels: keys.map((k) => k[1]),
             datasets: [{label: 'A', data: keys.map((k) => 100 * share(d.gpu.a, k[0])), backgroundColor: '#4e79a7'},
                        {label: 'B', data: keys.map((k) => 100 * share(d.gpu.b, k[0])), backgroundColor: '#f28e2b'}]},
      options: {maintainAspectRatio: false, scales: {y: {ticks: {callback: (v) => v + '%'}}}},
    }, 220), CT.table([{key: 'what', title: ''}, {key: 'a', title: 'A', num: true, fmt: CT.fmtPct},
                       {key: 'b', title: 'B', num: true, fmt: CT.fmtPct}],
                      keys.map((k) => ({what: k[1], a: share(d.gpu.a, k[0]), b: share(d.gpu.b, k[0])})), {id: 'gpu'}));
  }

  function kernels(d) {
    const rows = d.kernels.rows.map((k) => ({
      name: k.name, match: k.match, a_time: k.a ? k.a.per_step_ns : null, b_time: k.b ? k.b.per_step_ns : null,
      change: k.change_ns, ratio: k.ratio, a_count: k.a ? k.a.count_per_step : null, b_count: k.b ? k.b.count_per_step : null}));
    const top = rows.slice(0, 20);
    const unit = d.per_step ? ' per step' : '';
    return card(`Kernels: change ${signedNs(d.kernels.change_ns)}${unit}`, 'kernels', chart({
      type: 'bar',
      data: {labels: top.map((r) => r.name),
             datasets: [{label: 'Change' + unit, data: top.map((r) => r.change),
                         backgroundColor: top.map((r) => (r.change > 0 ? '#e15759' : '#59a14f'))}]},
      options: {indexAxis: 'y', maintainAspectRatio: false, plugins: {legend: {display: false}},
                scales: {x: {ticks: {callback: (v) => CT.fmtNs(v)}}}},
    }, 40 + 22 * top.length), CT.table([
      {key: 'name', title: 'Name'}, {key: 'match', title: 'Match'},
      {key: 'a_count', title: 'A count', num: true, fmt: (v) => (v === null ? '-' : v.toFixed(2))},
      {key: 'b_count', title: 'B count', num: true, fmt: (v) => (v === null ? '-' : v.toFixed(2))},
      {key: 'a_time', title: 'A time', num: true, fmt: CT.fmtNs}, {key: 'b_time', title: 'B time', num: true, fmt: CT.fmtNs},
      {key: 'change', title: 'Change', num: true, fmt: signedNs}, {key: 'ratio', title: 'Ratio', num: true, fmt: ratio}],
    rows, {id: 'kernels'}));
  }

  function ranges(d) {
    const rows = d.ranges.map((r) => ({name: (r.domain ? r.domain + ': ' : '') + r.name, count_a: r.count_a,
                                      count_b: r.count_b, a: r.cpu_median_ns_a, b: r.cpu_median_ns_b, change: r.cpu_change_ns}));
    return card('NVTX ranges (CPU)', 'ranges', CT.table([
      {key: 'name', title: 'Name'}, {key: 'count_a', title: 'A count', num: true, fmt: CT.fmtCount},
      {key: 'count_b', title: 'B count', num: true, fmt: CT.fmtCount}, {key: 'a', title: 'A median', num: true, fmt: CT.fmtNs},
      {key: 'b', title: 'B median', num: true, fmt: CT.fmtNs}, {key: 'change', title: 'Change', num: true, fmt: signedNs}],
    rows, {id: 'ranges'}));
  }

  // The document is embedded (`cutrace diff --html`) or, from `cutrace serve`'s "compare", fetched
  // from diff.json beside the page; an error answer ({"error": why}) is the message shown.
  async function load() {
    const e = document.getElementById('cutrace-diff');
    if (e) return JSON.parse(e.textContent);
    const r = await fetch('diff.json');
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }

  function draw(d) {
    document.getElementById('job').textContent = `A: ${d.a.path}   B: ${d.b.path}`;
    const root = document.getElementById('diff');
    root.appendChild(el('div', {class: 'stats'}, stat('A steps', CT.fmtCount(d.a.steps), 'a_steps'),
                        stat('B steps', CT.fmtCount(d.b.steps), 'b_steps'),
                        stat('Kernel change' + (d.per_step ? ' per step' : ''), signedNs(d.kernels.change_ns), 'kernel_change')));
    root.appendChild(el('div', {class: 'grid'}, steps(d), gpu(d), kernels(d), ranges(d)));
  }

  load().then(draw, (err) => {
    document.getElementById('diff').appendChild(el('p', {class: 'error', 'data-error': 'true'}, 'Cannot compare: ' + err.message));
  }).finally(() => requestAnimationFrame(() => document.body.setAttribute('data-ready', 'true')));
})(window.CT);
