// Served mode of the report page (`cutrace serve` adds this script to /job/ID/): the timeline is
// fetched a piece at a time. The page first gets timeline.json for the whole job at a coarse
// level of detail (the server aggregates events into about 1024 buckets per track); whenever the
// view moves out of the piece it has, or zooms in past that piece's resolution, this fetches
// timeline.json?t0=&t1=&px= for the view plus one view's width on each side, at about one bucket
// per screen pixel, and hands it to the timeline (CT.replaceTimeline, web/timeline.js). In the
// self-contained report (data embedded) it does nothing.
'use strict';
(function (CT) {
  if (document.getElementById('cutrace-timeline')) return;
  const MAX_PX = 16384;        // the server's limit
  const DEFAULT_PX = 1024;     // what the server uses for a timeline.json without parameters
  let have = null;             // the piece drawn: {a, b, bucket} in ns since the origin
  let timer = null, seq = 0;

  const coarseEnough = (p, v0, v1, width) => v0 >= p.a && v1 <= p.b && p.bucket <= (v1 - v0) / width;

  async function fetchPiece(v0, v1, width, D) {
    const span = v1 - v0;
    const a = Math.max(0, Math.floor(v0 - span)), b = Math.min(D.extent_ns + 1, Math.ceil(v1 + span));
    if (b <= a) return;
    const px = Math.max(1, Math.min(MAX_PX, Math.round(width * (b - a) / span)));
    const t0 = D.origin_ns + a, t1 = D.origin_ns + b;
    const mine = ++seq;
    const r = await fetch(`timeline.json?t0=${t0}&t1=${t1}&px=${px}`);
    if (!r.ok) throw new Error(`timeline piece: HTTP ${r.status}`);
    const doc = await r.json();
    if (mine !== seq) return;  // a later view asked for another piece meanwhile
    const shift = doc.origin_ns - D.origin_ns;  // the same origin unless the job grew (running)
    if (shift) for (const t of doc.tracks) t.s = t.s.map((x) => x + shift);
    // Tracks under the aggregation threshold came whole: a finer view needs nothing new.
    const aggregated = doc.tracks.some((t) => t.lod);
    have = {a, b, bucket: aggregated ? (b - a) / px : 0};
    CT.replaceTimeline(doc);
    document.body.dataset.pieces = String(Number(document.body.dataset.pieces || 0) + 1);
  }

  CT.onViewChange = function (v0, v1, width, D) {
    if (!have) have = {a: -Infinity, b: Infinity, bucket: D.extent_ns / DEFAULT_PX};  // the first document
    if (!width || coarseEnough(have, v0, v1, width)) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      fetchPiece(v0, v1, width, D).catch((e) => console.warn('cutrace: ' + e.message));
    }, 120);
  };
})(window.CT);
