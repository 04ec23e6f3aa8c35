// Shared helpers of the report page: number formatting, safe DOM building, sortable tables.
// Every string from the profiled program reaches the page through textContent (el() below) or
// a canvas, never through innerHTML, so a kernel named "<img src=x onerror=...>" stays text.
'use strict';
window.CT = window.CT || {};

(function (CT) {
  // 4 significant digits: "950 ns", "12.35 us", "4.568 ms", "7.890 s".
  CT.fmtNs = function (ns) {
    if (ns === null || ns === undefined || isNaN(ns)) return '-';
    const a = Math.abs(ns);
    if (a < 1e3) return Math.round(ns) + ' ns';
    const [v, u] = a < 1e6 ? [ns / 1e3, 'us'] : a < 1e9 ? [ns / 1e6, 'ms'] : [ns / 1e9, 's'];
    return CT.sig4(v) + ' ' + u;
  };
  // A point in time to the nanosecond (event details: the ruler's 4 digits would round it away).
  CT.fmtAt = function (ns) {
    if (ns === null || ns === undefined || isNaN(ns)) return '-';
    return (ns / 1e9).toFixed(9) + ' s';
  };
  CT.sig4 = function (v) {
    const a = Math.abs(v);
    const digits = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : 3;
    return v.toFixed(digits);
  };
  CT.fmtCount = (n) => Number(n).toLocaleString('en-US');
  CT.fmtPct = (f) => (isFinite(f) ? (100 * f).toFixed(1) + '%' : '-');
  CT.fmtBytes = function (b) {
    if (!b) return '0 B';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (b >= 1024 && i < u.length - 1) b /= 1024, i++;
    return (i ? b.toFixed(2) : String(b)) + ' ' + u[i];
  };

  // el('div', {class: 'x', onclick: f}, child, 'text', ...): strings become text nodes.
  CT.el = function (tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'class') e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    }
    return e;
  };

  // Palette for names (stable per name) and kinds.
  const palette = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1',
                   '#ff9da7', '#9c755f', '#bab0ac', '#2f6f9f', '#d37295', '#8cd17d', '#a0cbe8',
                   '#ffbe7d', '#86bcb6', '#f1ce63', '#d4a6c8'];
  CT.palette = palette;
  CT.hashColor = function (s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return palette[(h >>> 0) % palette.length];
  };

  // A sortable table: columns [{key, title, fmt, num, cls}], rows of objects. Click a header to
  // sort (numbers descending first). Returns the <table>.
  CT.table = function (columns, rows, opts) {
    opts = opts || {};
    let sortKey = opts.sortKey || null;
    let desc = true;
    const tbody = CT.el('tbody');
    const heads = columns.map((c) =>
      CT.el('th', {class: c.num ? 'num sortable' : 'sortable', title: 'sort by ' + c.title,
                   onclick: () => { desc = sortKey === c.key ? !desc : !!c.num; sortKey = c.key; render(); }},
            c.title));
    function render() {
      const rs = rows.slice();
      if (sortKey) {
        rs.sort((a, b) => {
          const x = a[sortKey], y = b[sortKey];
          const r = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
          return desc ? -r : r;
        });
      }
      tbody.textContent = '';
      const limit = opts.limit || 500;
      for (const r of rs.slice(0, limit)) {
        tbody.appendChild(CT.el('tr', {}, columns.map((c) =>
          CT.el('td', {class: (c.num ? 'num ' : '') + (c.cls || ''), 'data-col': c.key,
                       title: c.num ? null : String(r[c.key])},
                c.fmt ? c.fmt(r[c.key], r) : String(r[c.key])))));
      }
      if (rs.length > limit) {
        tbody.appendChild(CT.el('tr', {}, CT.el('td', {colspan: columns.length, class: 'more'},
          `${CT.fmtCount(rs.length - limit)} more rows (sort to see others; the JSON summary has all)`)));
      }
      heads.forEach((h, i) => h.classList.toggle('sorted', columns[i].key === sortKey));
    }
    render();
    return CT.el('table', {class: 'data', 'data-table': opts.id || null},
                 CT.el('thead', {}, CT.el('tr', {}, heads)), tbody);
  };

  // Glob with '*' and '?', or a plain substring when there is no wildcard.
  CT.nameMatcher = function (pattern) {
    if (!/[*?]/.test(pattern)) return (s) => s === pattern;
    const re = new RegExp('^' + pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$');
    return (s) => re.test(s);
  };
})(window.CT);
