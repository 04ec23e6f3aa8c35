// node web/test/screenshot.mjs REPORT.html OUTDIR [PREFIX]: writes OUTDIR/[PREFIX-]dashboard.png
// and OUTDIR/[PREFIX-]timeline.png (used through tools/dev/screenshot.sh).
import {mkdirSync} from 'node:fs';
import path from 'node:path';
import {launch, openReport} from './browser.mjs';

const [report, outdir, prefix] = process.argv.slice(2);
const out = (name) => path.join(outdir, (prefix ? prefix + '-' : '') + name);
if (!report || !outdir) {
  console.error('usage: node web/test/screenshot.mjs REPORT.html OUTDIR [PREFIX]');
  process.exit(2);
}
mkdirSync(outdir, {recursive: true});
const browser = await launch();
const {page, errors} = await openReport(browser, path.resolve(report), {width: 1600, height: 1000});
await page.waitForTimeout(500);
await page.screenshot({path: out('dashboard.png'), fullPage: true});
await page.click('.tab[data-view="timeline"]');
await page.waitForTimeout(300);
// Select the first kernel that has a launch so the details and the arrow show.
await page.evaluate(() => {
  const tl = window.cutraceTimeline;
  const stream = tl.tracks().find((t) => t.kind === 'stream' && t.events > 0);
  if (!stream) return;
  const n = Math.min(stream.events - 1, Math.floor(stream.events / 3));
  const e = tl.event(stream.id, n);
  tl.setView(e.s - 40 * Math.max(e.d, 1000), e.s + 60 * Math.max(e.d, 1000));
});
await page.waitForTimeout(200);
const pt = await page.evaluate(() => {
  const tl = window.cutraceTimeline;
  const stream = tl.tracks().find((t) => t.kind === 'stream' && t.events > 0);
  if (!stream) return null;
  const n = Math.min(stream.events - 1, Math.floor(stream.events / 3));
  return tl.eventPoint(stream.id, n);
});
if (pt && pt.y !== null) {
  const box = await page.locator('.tl-canvas').boundingBox();
  await page.mouse.click(box.x + pt.x, box.y + pt.y);
}
await page.waitForTimeout(300);
await page.screenshot({path: out('timeline.png')});
await browser.close();
for (const e of errors) console.error(e);
console.log(out('dashboard.png'));
console.log(out('timeline.png'));
process.exit(errors.length ? 1 : 0);
