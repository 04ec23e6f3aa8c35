// The timeline: a canvas of tracks in a tree (host -> process -> threads, GPUs -> streams,
// counters), drawn from columnar events (timeline document: per track s/d/n/k/r/c/b/x arrays).
// Level of detail: each row keeps its events plus coarser levels in which neighbours closer than
// a threshold (x4 per level) are merged; a frame draws the coarsest level whose threshold is
// below one pixel, so the work per frame follows the pixels on screen, not the event count.
'use strict';
(function (CT) {
  const el = CT.el;
  const ROW_H = 17, TRACK_PAD = 3, GROUP_H = 22, COUNTER_H = 36, LABEL_W = 300, RULER_H = 26;
  const KINDS = ['kernel', 'memcpy', 'memset', 'sync', 'API call', 'range', 'memory', 'mark', 'records missing'];
  const KIND_COLOR = [null, '#f28e2b', '#b07aa1', '#e15759', '#8d99ae', null, '#9c755f', '#333', '#d62728'];

  let D, TL, strings, root, canvas, ctx, ruler, rctx, scroller, labels, details, status, tip;
  let nodes = [];         // every track, tree order: {t, parent, children, collapsed, ev, rows}
  let visible = [];       // laid-out nodes: {node, y, h}
  let totalH = 0;
  let v0 = 0, v1 = 1;     // view, ns since origin
  let selection = null;   // {node, i} (i: event index) or {node, agg: {s, e, cnt, name}}
  let link = null;        // {node, i}: the other end of the selection's correlation
  let searchIds = null;   // Set of string ids matching the search, or null
  let pending = false;
  const frameStats = {frames: 0, drawMs: 0, drawn: 0};

  // ---- data --------------------------------------------------------------------------------

  function buildRows(ev, nrows) {
    const n = ev.s.length;
    const perRow = Array.from({length: nrows}, () => []);
    for (let i = 0; i < n; i++) perRow[Math.min(nrows - 1, ev.r[i] || 0)].push(i);
    return perRow.map((ids) => {
      const m = ids.length;
      const s = new Float64Array(m), e = new Float64Array(m), idx = new Int32Array(m), cnt = new Uint32Array(m);
      let endMax = -Infinity;
      for (let j = 0; j < m; j++) {
        const i = ids[j];
        s[j] = ev.s[i];
        // Ends are made monotonic so a binary search on them finds the first visible item.
        endMax = Math.max(endMax, ev.s[i] + ev.d[i]);
        e[j] = endMax;
        idx[j] = i;
        cnt[j] = ev.cnt ? ev.cnt[i] : 1;
      }
      const levels = [{thr: 0, s, e, idx, cnt}];
      // A level is kept only when it has at least a quarter fewer items than the previous one.
      let last = levels[0];
      for (let thr = 256; last.s.length > 256 && thr < 1e13; thr *= 4) {
        const m = merge(last, thr, ev.d);
        if (m.s.length < 0.75 * last.s.length) levels.push(last = m);
      }
      return levels;
    });
  }
  // Merges neighbours closer than thr while the merged item stays shorter than 4 thr (about 4 px
  // when this level is drawn); longer items stay alone. The merged item shows its longest
  // event's name.
  function merge(L, thr, dur) {
    const n = L.s.length;
    const s = [], e = [], idx = [], cnt = [];
    for (let j = 0; j < n; j++) {
      const k = s.length - 1;
      if (k >= 0 && L.s[j] - e[k] < thr && L.e[j] - s[k] < 4 * thr) {
        if (L.e[j] > e[k]) e[k] = L.e[j];
        cnt[k] += L.cnt[j];
        if (dur[L.idx[j]] > dur[idx[k]]) idx[k] = L.idx[j];
      } else {
        s.push(L.s[j]); e.push(L.e[j]); idx.push(L.idx[j]); cnt.push(L.cnt[j]);
      }
    }
    return {thr, s: Float64Array.from(s), e: Float64Array.from(e), idx: Int32Array.from(idx), cnt: Uint32Array.from(cnt)};
  }

  function buildTree() {
    const byId = new Map();
    const evById = new Map(TL.tracks.map((t) => [t.id, t]));
    nodes = D.tracks.map((t) => {
      const ev = evById.get(t.id) || null;
      const nrows = t.kind === 'thread' ? t.rows || 1 : 1;
      const node = {t, ev, nrows, children: [], collapsed: false, depth: 0, rows: null};
      if (ev && ev.s.length) node.rows = buildRows(ev, nrows);
      if (t.kind === 'counter') {
        node.peak = t.value.reduce((m, v) => Math.max(m, v), 0);  // shown next to the label
        node.max = Math.max(1e-9, node.peak);                      // the track's vertical scale
      }
      byId.set(t.id, node);
      return node;
    });
    for (const n of nodes) {
      const p = byId.get(n.t.parent);
      if (p) { p.children.push(n); n.parentNode = p; n.depth = p.depth + 1; }
    }
  }

  function height(n) {
    const k = n.t.kind;
    if (k === 'thread') return n.nrows * ROW_H + 2 * TRACK_PAD;
    if (k === 'stream') return ROW_H + 2 * TRACK_PAD;
    if (k === 'counter') return COUNTER_H;
    return GROUP_H;
  }
  function shown(n) {
    for (let p = n.parentNode; p; p = p.parentNode) if (p.collapsed) return false;
    return true;
  }
  function layout() {
    visible = [];
    let y = 0;
    for (const n of nodes) {
      if (!shown(n)) continue;
      const h = height(n);
      visible.push({node: n, y, h});
      n.y = y;
      y += h;
    }
    totalH = y;
    labels.textContent = '';
    for (const v of visible) {
      const n = v.node;
      const group = n.children.length > 0;
      const lab = el('div', {class: `tl-label kind-${n.t.kind}`, style: `top:${v.y}px;height:${v.h}px;padding-left:${8 + 14 * n.depth}px`,
                             'data-track': n.t.id, title: n.t.name},
                     group ? el('span', {class: 'twisty'}, n.collapsed ? '\u25b8' : '\u25be') : null,
                     el('span', {class: 'tl-name'}, n.t.name),
                     n.t.kind === 'counter' ? el('span', {class: 'tl-max', title: 'peak'}, fmtCounter(n, n.peak)) : null,
                     n.ev && n.ev.s.length ? el('span', {class: 'tl-count'}, CT.fmtCount(n.ev.s.length)) : null);
      if (group) lab.addEventListener('click', () => { n.collapsed = !n.collapsed; layout(); redraw(); });
      labels.appendChild(lab);
    }
    fitInner();
  }
  function fitInner() {  // the scrolled content: all tracks, at least the canvas' height
    labels.parentNode.style.height = Math.max(totalH, canvas.clientHeight) + 'px';
  }
  const fmtCounter = (n, v) => (n.t.unit === 'bytes' ? CT.fmtBytes(v) : v.toFixed(0) + '%');

  // ---- drawing -----------------------------------------------------------------------------

  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  }
  function resize() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(100, scroller.clientWidth - LABEL_W), h = scroller.clientHeight;
    for (const [c, ch] of [[canvas, h], [ruler, RULER_H]]) {
      c.style.width = w + 'px';
      c.style.height = ch + 'px';
      c.width = Math.round(w * dpr);
      c.height = Math.round(ch * dpr);
    }
    ruler.style.marginLeft = LABEL_W + 'px';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    rctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    fitInner();
    redraw();
  }

  function eventColor(n, i) {
    const k = n.ev.k[i];
    return KIND_COLOR[k] || CT.hashColor(strings[n.ev.n[i]] || '');
  }

  function drawRow(n, levels, y, W, k) {
    const nsPerPx = 1 / k;
    let L = levels[0];
    for (const l of levels) if (l.thr <= nsPerPx) L = l;
    // first item whose (monotonic) end reaches v0
    let lo = 0, hi = L.s.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (L.e[m] < v0) lo = m + 1; else hi = m; }
    let lastEnd = -1;
    const ev = n.ev;
    for (let j = lo; j < L.s.length && L.s[j] <= v1; j++) {
      const i = L.idx[j];
      const end = L.thr === 0 ? ev.s[i] + ev.d[i] : L.e[j];
      let x0 = (L.s[j] - v0) * k, x1 = (end - v0) * k;
      if (x1 < 0) continue;
      if (x0 < 0) x0 = 0;
      if (x1 > W) x1 = W;
      if (x1 - x0 < 1) x1 = x0 + 1;
      if (x1 <= lastEnd) continue;  // inside the pixel already drawn
      if (x0 < lastEnd) x0 = lastEnd;
      lastEnd = x1;
      const dim = searchIds && !searchIds.has(ev.n[i]);
      ctx.globalAlpha = dim ? 0.18 : L.cnt[j] > 1 ? 0.8 : 1;
      ctx.fillStyle = eventColor(n, i);
      ctx.fillRect(x0, y, x1 - x0, ROW_H - 2);
      frameStats.drawn++;
      if (x1 - x0 > 36) {
        ctx.globalAlpha = dim ? 0.4 : 1;
        ctx.fillStyle = '#fff';
        const name = (L.cnt[j] > 1 ? `${L.cnt[j]}\u00d7 ` : '') + (strings[ev.n[i]] || '');
        ctx.save();
        ctx.beginPath();
        ctx.rect(x0 + 2, y, x1 - x0 - 4, ROW_H);
        ctx.clip();
        ctx.fillText(name, x0 + 3, y + ROW_H - 5);
        ctx.restore();
      }
    }
    ctx.globalAlpha = 1;
  }

  // A counter as a step-wise filled area (value held until the next sample).
  function drawCounter(n, y, h, W, k) {
    const t = n.t;
    ctx.fillStyle = '#f4f6fa';
    ctx.fillRect(0, y + 2, W, h - 4);
    let lo = 0, hi = t.ts.length - 1;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (t.ts[m] <= v0) lo = m; else hi = m - 1; }
    const base = y + h - 3, scale = (h - 8) / n.max;
    ctx.beginPath();
    ctx.moveTo(Math.max(0, (t.ts[lo] - v0) * k), base);
    let prevY = base;
    for (let j = lo; j < t.ts.length; j++) {
      const x = Math.max(0, (t.ts[j] - v0) * k);
      if (x > W) break;
      const yv = base - t.value[j] * scale;
      ctx.lineTo(x, prevY);
      ctx.lineTo(x, yv);
      prevY = yv;
    }
    const xEnd = Math.min(W, (D.extent_ns - v0) * k);
    ctx.lineTo(xEnd, prevY);
    ctx.lineTo(xEnd, base);
    ctx.closePath();
    ctx.fillStyle = t.series.startsWith('cpu') ? 'rgba(89,161,79,0.55)' : t.series.includes('mem') ? 'rgba(176,122,161,0.55)' : 'rgba(78,121,167,0.55)';
    ctx.fill();
  }

  function rowCenter(n, i) {  // y (canvas) of an event's row, or null if not laid out
    if (!shown(n) || n.y === undefined) return null;
    const r = n.t.kind === 'thread' ? Math.min(n.nrows - 1, n.ev.r[i] || 0) : 0;
    return n.y + TRACK_PAD + r * ROW_H + ROW_H / 2 - 1 - scroller.scrollTop;
  }

  function draw() {
    const t0 = performance.now();
    const W = canvas.clientWidth, H = canvas.clientHeight;
    const k = W / (v1 - v0);
    const top = scroller.scrollTop;
    ctx.clearRect(0, 0, W, H);
    ctx.font = '11px system-ui, sans-serif';
    for (const v of visible) {
      const y = v.y - top;
      if (y + v.h < 0 || y > H) continue;
      const n = v.node;
      if (n.children.length) {
        ctx.fillStyle = n.t.kind === 'host' ? '#dfe5ee' : n.t.kind === 'process' ? '#e8edf4' : '#eef1f6';
        ctx.fillRect(0, y, W, v.h);
      } else if (n.t.kind === 'counter') {
        drawCounter(n, y, v.h, W, k);
      } else if (n.rows) {
        n.rows.forEach((levels, r) => drawRow(n, levels, y + TRACK_PAD + r * ROW_H, W, k));
      }
      ctx.fillStyle = '#e6e9ef';
      ctx.fillRect(0, y + v.h - 1, W, 1);
    }
    drawSelection(W, k);
    drawRuler(W, k);
    frameStats.frames++;
    frameStats.drawMs += performance.now() - t0;
  }

  function eventSpan(sel) {
    if (sel.agg) return [sel.agg.s, sel.agg.e];
    const ev = sel.node.ev;
    return [ev.s[sel.i], ev.s[sel.i] + ev.d[sel.i]];
  }

  function drawSelection(W, k) {
    if (!selection) return;
    const [s, e] = eventSpan(selection);
    const x0 = (s - v0) * k, x1 = Math.max(x0 + 2, (e - v0) * k);
    const n = selection.node;
    if (!selection.agg) {
      const y = rowCenter(n, selection.i);
      if (y !== null) {
        ctx.strokeStyle = '#111';
        ctx.lineWidth = 2;
        ctx.strokeRect(x0 - 1, y - ROW_H / 2, x1 - x0 + 2, ROW_H);
      }
    }
    if (link) {
      // Arrow from the launch call on the host to the operation on the device.
      const host = n.t.kind === 'thread' ? selection : link, dev = n.t.kind === 'thread' ? link : selection;
      const ya = rowCenter(host.node, host.i), yb = rowCenter(dev.node, dev.i);
      if (ya !== null && yb !== null) {
        const hev = host.node.ev, dev_ev = dev.node.ev;
        const xa = (hev.s[host.i] + hev.d[host.i] - v0) * k, xb = (dev_ev.s[dev.i] - v0) * k;
        arrow(xa, ya, xb, yb);
      }
    }
  }
  function arrow(xa, ya, xb, yb) {
    ctx.strokeStyle = '#d62728';
    ctx.fillStyle = '#d62728';
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.moveTo(xa, ya);
    const mx = (xa + xb) / 2;
    ctx.bezierCurveTo(mx, ya, mx, yb, xb, yb);
    ctx.stroke();
    const ang = Math.atan2(yb - ya, Math.max(1, xb - mx));
    ctx.beginPath();
    ctx.moveTo(xb, yb);
    ctx.lineTo(xb - 8 * Math.cos(ang - 0.4), yb - 8 * Math.sin(ang - 0.4));
    ctx.lineTo(xb - 8 * Math.cos(ang + 0.4), yb - 8 * Math.sin(ang + 0.4));
    ctx.closePath();
    ctx.fill();
  }

  function drawRuler(W, k) {
    rctx.clearRect(0, 0, W, RULER_H);
    rctx.fillStyle = '#f7f8fb';
    rctx.fillRect(0, 0, W, RULER_H);
    const span = v1 - v0;
    const raw = span / Math.max(2, W / 110), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = mag * (raw / mag <= 2 ? 2 : raw / mag <= 5 ? 5 : 10);
    rctx.font = '10px system-ui, sans-serif';
    rctx.fillStyle = '#555';
    rctx.strokeStyle = '#c5cad3';
    // Deep zooms far from time 0 would print the same rounded time at every tick: label the
    // first tick with its time and the others with their offset from it.
    const first = Math.ceil(v0 / step) * step, relative = Math.abs(first) > step * 1000;
    for (let t = first; t <= v1; t += step) {
      const x = (t - v0) * k;
      rctx.beginPath();
      rctx.moveTo(x + 0.5, RULER_H - 8);
      rctx.lineTo(x + 0.5, RULER_H);
      rctx.stroke();
      rctx.fillText(relative && t !== first ? '+' + CT.fmtNs(t - first) : CT.fmtNs(t), x + 3, 12);
    }
    status.textContent = `view ${CT.fmtNs(v0)} \u2013 ${CT.fmtNs(v1)} (${CT.fmtNs(v1 - v0)})`;
  }

  // ---- interaction -------------------------------------------------------------------------

  function setView(a, b) {
    const ext = Math.max(1, D.extent_ns);
    const minSpan = 100;
    if (b - a < minSpan) { const c = (a + b) / 2; a = c - minSpan / 2; b = c + minSpan / 2; }
    const pad = ext * 0.05;
    if (b - a > ext + 2 * pad) { a = -pad; b = ext + pad; }
    if (a < -pad) { b += -pad - a; a = -pad; }
    if (b > ext + pad) { a -= b - ext - pad; b = ext + pad; }
    v0 = a;
    v1 = b;
    redraw();
    if (CT.onViewChange) CT.onViewChange(v0, v1, canvas.clientWidth, D);  // served: web/pieces.js
  }
  function zoom(factor, atFrac) {
    const c = v0 + (v1 - v0) * (atFrac === undefined ? 0.5 : atFrac);
    setView(c - (c - v0) * factor, c + (v1 - c) * factor);
  }
  function pan(frac) {
    const d = (v1 - v0) * frac;
    setView(v0 + d, v1 + d);
  }

  function hit(x, y) {  // {node, i} | {node, agg} | null
    const W = canvas.clientWidth;
    const k = W / (v1 - v0);
    const yy = y + scroller.scrollTop;
    const v = visible.find((v) => yy >= v.y && yy < v.y + v.h);
    if (!v || !v.node.rows) return null;
    const n = v.node;
    const r = Math.floor((yy - v.y - TRACK_PAD) / ROW_H);
    if (r < 0 || r >= n.rows.length) return null;
    const levels = n.rows[r];
    let L = levels[0];
    for (const l of levels) if (l.thr <= 1 / k) L = l;
    const t = v0 + x / k, tol = 3 / k;
    let lo = 0, hi = L.s.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (L.e[m] < t - tol) lo = m + 1; else hi = m; }
    let best = null;
    for (let j = lo; j < L.s.length && L.s[j] <= t + tol; j++) {
      const i = L.idx[j];
      const end = L.thr === 0 ? n.ev.s[i] + n.ev.d[i] : L.e[j];
      if (end >= t - tol) best = j;
    }
    if (best === null) return null;
    if (L.cnt[best] > 1 || n.ev.lod) return {node: n, agg: {s: L.s[best], e: L.e[best], cnt: L.cnt[best], i: L.idx[best]}};
    return {node: n, i: L.idx[best]};
  }

  function findLink(sel) {
    if (!sel || sel.agg) return null;
    const c = sel.node.ev.c && sel.node.ev.c[sel.i];
    if (!c) return null;
    const wantThread = sel.node.t.kind !== 'thread';
    for (const n of nodes) {
      if (!n.ev || !n.ev.c || n === sel.node || n.t.file !== sel.node.t.file) continue;
      if ((n.t.kind === 'thread') !== wantThread) continue;
      const cs = n.ev.c;
      for (let i = 0; i < cs.length; i++) if (cs[i] === c) return {node: n, i};
    }
    return null;
  }

  function trackPath(n) {
    const parts = [];
    for (let p = n; p; p = p.parentNode) parts.unshift(p.t.name);
    return parts.join(' \u203a ');
  }

  function select(sel) {
    selection = sel;
    link = findLink(sel);
    if (link) for (let p = link.node.parentNode; p; p = p.parentNode) if (p.collapsed) { p.collapsed = false; layout(); }
    showDetails();
    redraw();
  }

  function row(label, value, key) {
    return [el('dt', {}, label), el('dd', {'data-field': key}, value)];
  }
  function showDetails() {
    details.textContent = '';
    if (!selection) {
      details.appendChild(el('p', {class: 'muted'}, 'Click an event to see its details. Keys: w/s zoom, a/d pan, f zoom to the selection, Esc clears.'));
      return;
    }
    const n = selection.node, ev = n.ev;
    if (selection.agg) {
      const a = selection.agg;
      details.appendChild(el('dl', {},
        row('Aggregated', `${CT.fmtCount(a.cnt)} events (zoom in to see them)`, 'aggregated'),
        row('Longest', strings[ev.n[a.i]] || '', 'name'),
        row('Span', `${CT.fmtNs(a.s)} \u2013 ${CT.fmtNs(a.e)}`, 'span'),
        row('Track', trackPath(n), 'track')));
      return;
    }
    const i = selection.i;
    const items = [
      row('Name', strings[ev.n[i]] || '', 'name'),
      row('Kind', KINDS[ev.k[i]] || '?', 'kind'),
      row('Start', CT.fmtAt(ev.s[i]), 'start'),
      row('End', CT.fmtAt(ev.s[i] + ev.d[i]), 'end'),
      row('Duration', CT.fmtNs(ev.d[i]), 'duration'),
      row('Track', trackPath(n), 'track'),
    ];
    if (n.t.kind === 'stream') items.push(row('Stream', n.t.name + ', ' + n.parentNode.t.name, 'stream'));
    if (ev.x && ev.x[i]) items.push(row(ev.k[i] === 0 ? 'Launch' : 'Detail', strings[ev.x[i]], 'detail'));
    if (ev.b && ev.b[i]) items.push(row('Bytes', `${CT.fmtBytes(ev.b[i])} (${CT.fmtCount(ev.b[i])} B)`, 'bytes'));
    if (ev.c && ev.c[i]) items.push(row('Correlation', String(ev.c[i]), 'corr'));
    if (link) {
      const le = link.node.ev;
      const go = el('button', {class: 'link', 'data-field': 'link', onclick: () => select(link)},
                    `${link.node.t.kind === 'thread' ? 'launched by' : 'runs as'} ${strings[le.n[link.i]]} at ${CT.fmtNs(le.s[link.i])} on ${link.node.t.name}`);
      items.push([el('dt', {}, 'Linked'), el('dd', {}, go)]);
    }
    // Backtraces: the trace format has none yet; when it has, the timeline document carries a
    // "bt" column of string ids and they show here.
    items.push(row('Backtrace', ev.bt && ev.bt[i] ? strings[ev.bt[i]] : 'not recorded for this event (call stacks: --backtrace sync|all)', 'backtrace'));
    details.appendChild(el('dl', {}, items.flat()));
  }

  function zoomToSelection() {
    if (!selection) return;
    const [s, e] = eventSpan(selection);
    const m = Math.max((e - s) * 0.1, 50);
    setView(s - m, e + m);
  }

  // Search: events whose name contains the text are highlighted; Enter goes to the next one.
  function setSearch(text) {
    text = text.trim().toLowerCase();
    if (!text) { searchIds = null; redraw(); return 0; }
    searchIds = new Set();
    strings.forEach((s, id) => { if (s.toLowerCase().includes(text)) searchIds.add(id); });
    let count = 0;
    for (const n of nodes) if (n.ev) for (let i = 0; i < n.ev.n.length; i++) if (searchIds.has(n.ev.n[i])) count++;
    redraw();
    return count;
  }
  function nextMatch(after) {
    let best = null;
    for (const n of nodes) {
      if (!n.ev) continue;
      const ev = n.ev;
      for (let i = 0; i < ev.n.length; i++) {
        if (!searchIds.has(ev.n[i]) || ev.s[i] <= after) continue;
        if (!best || ev.s[i] < best.node.ev.s[best.i]) best = {node: n, i};
      }
    }
    return best;
  }
  // Jump to a range by exact name (e.g. step_41): zoom to it and select it.
  function jumpTo(name) {
    const id = strings.indexOf(name.trim());
    if (id <= 0) return false;
    for (const n of nodes) {
      if (!n.ev) continue;
      for (let i = 0; i < n.ev.n.length; i++) {
        if (n.ev.n[i] === id) {
          for (let p = n.parentNode; p; p = p.parentNode) p.collapsed = false;
          layout();
          select({node: n, i});
          zoomToSelection();
          scroller.scrollTop = Math.max(0, n.y - 60);
          return true;
        }
      }
    }
    return false;
  }

  function bindInput() {
    let drag = null;
    canvas.addEventListener('mousedown', (e) => { drag = {x: e.offsetX, a: v0, b: v1, moved: false}; });
    window.addEventListener('mousemove', (e) => {
      if (!drag) return;
      const dx = e.clientX - canvas.getBoundingClientRect().left - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      if (drag.moved) {
        const d = -dx * (drag.b - drag.a) / canvas.clientWidth;
        setView(drag.a + d, drag.b + d);
      }
    });
    canvas.addEventListener('mousemove', (e) => {  // hover: name and duration
      const h = drag ? null : hit(e.offsetX, e.offsetY);
      if (!h) { tip.style.display = 'none'; return; }
      const ev = h.node.ev, i = h.agg ? h.agg.i : h.i;
      tip.textContent = h.agg ? `${CT.fmtCount(h.agg.cnt)} events, longest ${strings[ev.n[i]]}`
                              : `${strings[ev.n[i]]}  ${CT.fmtNs(ev.d[i])}`;
      tip.style.display = 'block';
      tip.style.left = Math.min(e.clientX + 12, window.innerWidth - tip.offsetWidth - 8) + 'px';
      tip.style.top = (e.clientY + 14) + 'px';
    });
    canvas.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
    window.addEventListener('mouseup', (e) => {
      if (drag && !drag.moved && e.target === canvas) select(hit(e.offsetX, e.offsetY));
      drag = null;
    });
    canvas.addEventListener('wheel', (e) => {
      if (e.ctrlKey || e.metaKey) {
        e.preventDefault();
        zoom(Math.pow(1.0015, e.deltaY), e.offsetX / canvas.clientWidth);
      } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        e.preventDefault();
        pan((e.shiftKey ? e.deltaY : e.deltaX) / canvas.clientWidth);
      }
    }, {passive: false});
    scroller.addEventListener('scroll', redraw);
    new ResizeObserver(resize).observe(scroller);
    window.addEventListener('keydown', (e) => {
      if (root.classList.contains('hidden') || /INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName)) return;
      const key = e.key.toLowerCase();
      const acts = {w: () => zoom(0.8), arrowup: () => zoom(0.8), s: () => zoom(1.25), arrowdown: () => zoom(1.25),
                    a: () => pan(-0.1), arrowleft: () => pan(-0.1), d: () => pan(0.1), arrowright: () => pan(0.1),
                    f: zoomToSelection, escape: () => select(null), '0': () => setView(-Infinity, Infinity)};
      if (acts[key]) { e.preventDefault(); acts[key](); }
    });
  }

  function toolbar() {
    const search = el('input', {type: 'search', placeholder: 'search names (Enter: next)', 'data-control': 'search'});
    const found = el('span', {class: 'note', 'data-field': 'search-count'});
    search.addEventListener('input', () => {
      const c = setSearch(search.value);
      found.textContent = search.value.trim() ? `${CT.fmtCount(c)} matches` : '';
    });
    search.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' || !searchIds) return;
      const after = selection && !selection.agg ? selection.node.ev.s[selection.i] : v0;
      const m = nextMatch(after) || nextMatch(-Infinity);
      if (m) { select(m); zoomToSelection(); scroller.scrollTop = Math.max(0, m.node.y - 60); }
    });
    const jump = el('input', {type: 'text', placeholder: 'jump to step (step_41)', 'data-control': 'jump'});
    const jmsg = el('span', {class: 'note'});
    jump.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter') return;
      const ok = jumpTo(jump.value);
      jmsg.textContent = ok ? '' : `no range named "${jump.value}"`;
      if (ok) jump.blur();  // the view's keys (w/s/a/d) go to the timeline again, not into the box
    });
    status = el('span', {class: 'tl-status', 'data-field': 'view'});
    return el('div', {class: 'tl-toolbar'}, search, found, jump, jmsg,
              el('button', {onclick: () => setView(-Infinity, Infinity), title: 'key 0'}, 'Reset zoom'),
              el('span', {class: 'help'}, 'drag or a/d/\u2190\u2192 pan \u00b7 w/s/\u2191\u2193 or ctrl+wheel zoom \u00b7 f zoom to selection'),
              status);
  }

  // Served mode (web/pieces.js): a piece of the timeline (same document shape, same track ids)
  // replaces the events drawn; the view, the tree and the search text stay.
  CT.replaceTimeline = function (timeline) {
    TL = timeline;
    strings = TL.strings;
    const evById = new Map(TL.tracks.map((t) => [t.id, t]));
    for (const n of nodes) {
      n.ev = evById.get(n.t.id) || null;
      n.rows = n.ev && n.ev.s.length ? buildRows(n.ev, n.nrows) : null;
    }
    selection = link = null;
    layout();
    showDetails();
    setSearch(root.querySelector('[data-control="search"]').value);
  };

  CT.renderTimeline = function (rootEl, dashboard, timeline) {
    root = rootEl;
    D = dashboard;
    TL = timeline;
    strings = TL.strings;
    root.textContent = '';
    root.appendChild(toolbar());
    ruler = el('canvas', {class: 'tl-ruler'});
    canvas = el('canvas', {class: 'tl-canvas', 'data-testid': 'timeline-canvas'});
    labels = el('div', {class: 'tl-labels'});
    const inner = el('div', {class: 'tl-inner'}, canvas, labels);
    scroller = el('div', {class: 'tl-scroll'}, inner);
    details = el('div', {class: 'tl-details', 'data-testid': 'details'});
    tip = el('div', {class: 'tl-tip'});
    document.body.appendChild(tip);
    root.appendChild(ruler);
    root.appendChild(scroller);
    root.appendChild(details);
    canvas.style.marginLeft = LABEL_W + 'px';
    labels.style.width = LABEL_W + 'px';
    ctx = canvas.getContext('2d');
    rctx = ruler.getContext('2d');
    buildTree();
    layout();
    bindInput();
    showDetails();
    setView(-Infinity, Infinity);
    CT.timelineShown = resize;
    // For tests and the frame-time benchmark (bench/report_fps.mjs).
    window.cutraceTimeline = {
      view: () => [v0, v1], setView, zoom, pan, frameStats, draw,
      tracks: () => visible.map((v) => ({id: v.node.t.id, kind: v.node.t.kind, name: v.node.t.name, y: v.y, h: v.h,
                                         events: v.node.ev ? v.node.ev.s.length : 0})),
      // Canvas point of event i of track id (its middle), to click on it.
      eventPoint: (id, i) => {
        const n = nodes.find((x) => x.t.id === id);
        const k = canvas.clientWidth / (v1 - v0);
        const ev = n.ev;
        return {x: ((ev.s[i] + ev.d[i] / 2) - v0) * k, y: rowCenter(n, i)};
      },
      event: (id, i) => {
        const ev = nodes.find((x) => x.t.id === id).ev;
        return {s: ev.s[i], d: ev.d[i], name: strings[ev.n[i]], c: ev.c ? ev.c[i] : 0, k: ev.k[i]};
      },
      selected: () => (selection && !selection.agg ? {id: selection.node.t.id, i: selection.i} : null),
      linked: () => (link ? {id: link.node.t.id, i: link.i} : null),
    };
  };
})(window.CT);
