// Frame time of the report's timeline with a large trace, in headless chromium:
//   node bench/report_fps.mjs REPORT.html [frames]
// Opens the report (time to the dashboard, then to the timeline), then drives the view with
// requestAnimationFrame through a pan/zoom sweep: 40% of the frames zoom in 1.06x each (300
// frames: ~1,000x, from the whole trace to ~1/1000 of it), 20% pan, 40% zoom back out. Prints the draw time per frame (the timeline's own draw(),
// measured with performance.now()) and the interval between animation frames.
import path from 'node:path';

const {launch, openReport} = await import(new URL('../web/test/browser.mjs', import.meta.url));

const [report, framesArg] = process.argv.slice(2);
if (!report) {
  console.error('usage: node bench/report_fps.mjs REPORT.html [frames]');
  process.exit(2);
}
const browser = await launch();
const t0 = Date.now();
const {page, errors} = await openReport(browser, path.resolve(report), {width: 1600, height: 1000});
const tDash = Date.now() - t0;
await page.click('.tab[data-view="timeline"]');
await page.waitForFunction(() => window.cutraceTimeline);
const tTimeline = Date.now() - t0;
const result = await page.evaluate(async (frames) => {
  const tl = window.cutraceTimeline;
  const events = tl.tracks().reduce((a, t) => a + t.events, 0);
  const [a0, b0] = tl.view();
  const draws = [], gaps = [];
  let last = performance.now();
  for (let f = 0; f < frames; f++) {
    await new Promise((r) => requestAnimationFrame(r));
    const now = performance.now();
    gaps.push(now - last);
    last = now;
    const phase = f / frames;
    if (phase < 0.4) tl.zoom(1 / 1.06, 0.37);
    else if (phase < 0.6) tl.pan(0.02);
    else tl.zoom(1.06, 0.5);
    const t = performance.now();
    tl.draw();  // synchronous draw of the new view, timed here
    draws.push(performance.now() - t);
  }
  const stats = (xs) => {
    const s = xs.slice().sort((x, y) => x - y);
    return {mean: s.reduce((x, y) => x + y, 0) / s.length, p50: s[Math.floor(s.length / 2)],
            p95: s[Math.floor(s.length * 0.95)], max: s[s.length - 1]};
  };
  return {events, extent_ns: b0 - a0, frames, draw_ms: stats(draws), frame_interval_ms: stats(gaps.slice(1))};
}, Number(framesArg) || 300);
await browser.close();
const r2 = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v * 100) / 100]));
console.log(`events in the timeline: ${result.events}`);
console.log(`open to dashboard ready: ${tDash} ms; timeline built: ${tTimeline - tDash} ms more`);
console.log(`frames: ${result.frames} (zoom in x1.06/frame, pan, zoom out)`);
console.log('draw() per frame, ms:', JSON.stringify(r2(result.draw_ms)));
console.log('rAF interval, ms:', JSON.stringify(r2(result.frame_interval_ms)));
console.log(`fps from the mean frame interval: ${(1000 / result.frame_interval_ms.mean).toFixed(1)}`);
if (errors.length) { console.error(errors.join('\n')); process.exit(1); }
