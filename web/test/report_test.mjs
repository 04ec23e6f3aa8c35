// Browser tests of `cutrace report` (run by test/browser/run.sh report, i.e. `make test`): a synthetic
// 4-rank job (test/report/trace_gen.cpp) is reported, the page is opened in headless chromium,
// and what the page SHOWS (DOM text) is compared with `cutrace summary --json` of the same job; a
// sampled recording of test/e2e/paced_launches on the fake driver checks the Est. total column, and
// one of test/e2e/nvtx_app in three capture windows the windows table, one of test/e2e/sync_sites
// the synchronisation call sites.
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import {mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {after, before, test} from 'node:test';
import {launch, openReport} from './browser.mjs';

const build = process.env.CUTRACE_BUILD || path.resolve('build');
const cutrace = path.join(build, 'bin/cutrace');
const EVIL = '<img src=x onerror=alert(1)>';

let dir, summary, browser, page, errors, dialogs = [];

// "12.35 ms" -> ns, with the half-unit of its last digit as the tolerance.
function parseNs(text) {
  const m = /^(-?[\d.]+) (ns|us|ms|s)$/.exec(text.trim());
  assert.ok(m, `not a duration: "${text}"`);
  const unit = {ns: 1, us: 1e3, ms: 1e6, s: 1e9}[m[2]];
  const decimals = (m[1].split('.')[1] || '').length;
  return {value: Number(m[1]) * unit, tol: 0.5 * Math.pow(10, -decimals) * unit + 1e-9};
}
function assertNs(text, expected, what) {
  const {value, tol} = parseNs(text);
  assert.ok(Math.abs(value - expected) <= tol, `${what}: page shows "${text}", summary --json says ${expected} ns`);
}
const parseCount = (t) => Number(t.replace(/,/g, ''));
function assertPct(text, fraction, what) {
  const v = Number(text.replace('%', ''));
  assert.ok(Math.abs(v - 100 * fraction) <= 0.05 + 1e-9, `${what}: page shows "${text}", summary --json says ${fraction}`);
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cutrace-report-test-'));
  const job = path.join(dir, 'job');
  execFileSync('mkdir', ['-p', job]);
  execFileSync(path.join(build, 'test/report_trace_gen'), [job, '4', '30', '40']);
  execFileSync(cutrace, ['report', job, '-o', path.join(dir, 'report.html'), '-q']);
  summary = JSON.parse(execFileSync(cutrace, ['summary', job, '--json'], {maxBuffer: 1 << 28}).toString());
  browser = await launch();
  ({page, errors} = await openReport(browser, path.join(dir, 'report.html')));
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
});

after(async () => {
  if (browser) await browser.close();
  if (dir) rmSync(dir, {recursive: true, force: true});
});

const text = (sel) => page.locator(sel).first().textContent();

test('report opens from disk with no console errors and no network access', async () => {
  await page.waitForTimeout(300);  // charts draw on the next frames
  assert.deepEqual(errors, []);
});

test('dashboard figures equal cutrace summary --json', async () => {
  const k = summary.kernel_totals;
  assert.equal(parseCount(await text('[data-stat="kernel_count"]')), k.count);
  assertNs(await text('[data-stat="kernel_total_ns"]'), k.total_ns, 'kernel GPU time');
  assertPct(await text('[data-stat="gpu_utilization"]'), summary.gpu_total.utilization, 'GPU busy');
  assert.equal(parseCount(await text('[data-stat="step_count"]')), summary.steps.count);
  assert.equal(parseCount(await text('[data-stat="ranks"]')), summary.ranks.length);
  assert.ok(summary.ranks.every((r) => r.complete));  // so no rank is flagged under the count
  assert.equal(await page.locator('[data-stat="ranks"] + .stat-sub').count(), 0);
  assertNs(await text('[data-stat="step_median"]'), summary.steps.cpu.median_ns, 'median step');
  assertNs(await text('[data-stat="step_p90"]'), summary.steps.cpu.p90_ns, 'p90 step');
  // Pies: GPU active/idle, precision, memory operations.
  assertNs(await text('[data-legend="gpu_active"] [data-value="active"]'), summary.gpu_total.busy_ns, 'GPU active');
  assertNs(await text('[data-legend="gpu_active"] [data-value="idle"]'), summary.gpu_total.idle_ns, 'GPU idle');
  for (const [name, p] of Object.entries(summary.kernel_precision)) {
    if (p.total_ns > 0) assertNs(await text(`[data-legend="precision"] [data-value="${name}"]`), p.total_ns, 'precision ' + name);
  }
  assertNs(await text('[data-legend="memory_ops"] [data-value="HtoD"]'), summary.memory_ops.HtoD.total_ns, 'HtoD time');
  assertNs(await text('[data-legend="gpu_activity"] [data-value="kernels"]'), summary.gpu_total.kernel_ns, 'kernel activity');
  const host = summary.ranks.reduce((x, r) => x + r.cpu.host_util_mean, 0) / summary.ranks.length;
  assert.equal(await text('[data-legend="cpu_active"] [data-value="active"]'), host.toFixed(1) + '%');
  assert.equal(await text('[data-stat="cpu_host_util"]'), host.toFixed(1) + '%');
});

test('kernels table rows equal the summary kernels, and sort by a clicked column', async () => {
  const rows = await page.$$eval('[data-table="kernels"] tbody tr', (trs) => trs.map((tr) => {
    const cell = (c) => tr.querySelector(`[data-col="${c}"]`).textContent;
    return {name: cell('name'), count: cell('count'), total: cell('total_ns'), median: cell('median_ns')};
  }));
  assert.equal(rows.length, summary.kernels.length);
  for (const r of rows) {
    const k = summary.kernels.find((x) => x.name === r.name);
    assert.ok(k, `kernel "${r.name}" is not in the summary`);
    assert.equal(parseCount(r.count), k.count);
    assertNs(r.total, k.total_ns, r.name + ' total');
    assertNs(r.median, k.median_ns, r.name + ' median');
  }
  await page.click('[data-table="kernels"] th:has-text("Count")');
  const first = await page.$eval('[data-table="kernels"] tbody tr [data-col="count"]', (td) => td.textContent);
  assert.equal(parseCount(first), Math.max(...summary.kernels.map((x) => x.count)));
});

test('a kernel named like HTML shows as text, nothing runs', async () => {
  const cells = await page.$$eval('[data-table="kernels"] [data-col="name"]', (tds) => tds.map((t) => t.textContent));
  assert.ok(cells.includes(EVIL), 'the kernel name is shown verbatim');
  assert.equal(await page.$$eval('img', (x) => x.length), 0);
  assert.deepEqual(dialogs, []);
});

test('top-k control and the new histogram of an annotation', async () => {
  await page.fill('[data-control="topk"]', '3');
  await page.dispatchEvent('[data-control="topk"]', 'change');
  const legend = await page.$$eval('[data-legend="kernel_topk"] tr', (trs) => trs.map((t) => t.textContent));
  assert.equal(legend.length, 4);
  assert.match(legend[3], /^other \(\d+ names?\)/);
  await page.fill('[data-control="hist-name"]', 'step_*');
  await page.click('[data-control="hist-add"]');
  const note = await text('[data-card="hist-step_*"] h3 .note');
  assert.equal(parseCount(note.split(' ')[0]), summary.steps.count);
});

test('per-rank comparison lists every rank', async () => {
  const ranks = await page.$$eval('[data-table="ranks"] tbody tr', (trs) => trs.length);
  assert.equal(ranks, summary.ranks.length);
});

test('timeline: track tree, zoom keys, select an event, its details and launch link', async () => {
  await page.click('.tab[data-view="timeline"]');
  await page.waitForTimeout(200);
  const tracks = await page.evaluate(() => window.cutraceTimeline.tracks());
  const kinds = new Set(tracks.map((t) => t.kind));
  for (const k of ['host', 'process', 'thread', 'gpu', 'stream', 'counter']) assert.ok(kinds.has(k), 'track kind ' + k);
  assert.equal(tracks.filter((t) => t.kind === 'host').length, 2);  // node-0, node-1
  assert.equal(tracks.filter((t) => t.kind === 'process').length, 4);
  const labels = await page.$$eval('.tl-label', (ls) => ls.map((l) => l.textContent));
  assert.equal(labels.length, tracks.length);
  // Launches on the threads + ranges; kernels, copies and sets on the streams.
  const streamEvents = tracks.filter((t) => t.kind === 'stream').reduce((a, t) => a + t.events, 0);
  const copies = Object.values(summary.memcpy).reduce((a, c) => a + c.count, 0);
  assert.equal(streamEvents, summary.kernel_totals.count + copies + summary.memset.count);

  await page.locator('.tl-canvas').hover();
  const [a0, b0] = await page.evaluate(() => window.cutraceTimeline.view());
  await page.keyboard.press('w');
  await page.waitForTimeout(50);
  const [a1, b1] = await page.evaluate(() => window.cutraceTimeline.view());
  assert.ok(Math.abs((b1 - a1) - 0.8 * (b0 - a0)) < 1e-6 * (b0 - a0), 'w zooms in by 20%');
  await page.keyboard.press('d');
  const [a2] = await page.evaluate(() => window.cutraceTimeline.view());
  assert.ok(a2 > a1, 'd pans right');
  // ctrl+wheel zooms around the pointer.
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -300);
  await page.keyboard.up('Control');
  await page.waitForTimeout(50);
  const [a3, b3] = await page.evaluate(() => window.cutraceTimeline.view());
  assert.ok(b3 - a3 < 0.9 * (b1 - a1), 'ctrl+wheel zooms in');

  // Zoom onto kernel 10 of rank 0's compute stream and click it.
  const stream = tracks.find((t) => t.kind === 'stream');
  const ev = await page.evaluate((id) => window.cutraceTimeline.event(id, 10), stream.id);
  await page.evaluate(([s, d]) => window.cutraceTimeline.setView(s - 20 * d, s + 30 * d), [ev.s, ev.d]);
  await page.waitForTimeout(50);
  const pt = await page.evaluate((id) => window.cutraceTimeline.eventPoint(id, 10), stream.id);
  const box = await page.locator('.tl-canvas').boundingBox();
  await page.mouse.click(box.x + pt.x, box.y + pt.y);
  assert.deepEqual(await page.evaluate(() => window.cutraceTimeline.selected()), {id: stream.id, i: 10});
  assert.equal(await text('[data-field="name"]'), ev.name);
  assert.equal(await text('[data-field="duration"]'), (await page.evaluate((d) => CT.fmtNs(d), ev.d)));
  assertNs(await text('[data-field="duration"]'), ev.d, 'selected duration');
  assert.match(await text('[data-field="detail"]'), /^grid 1024x1x1 {2}block 256x1x1/);
  assert.match(await text('[data-field="backtrace"]'), /not recorded/);
  // The launch on the host is linked by correlation id (the arrow's other end).
  const linked = await page.evaluate(() => window.cutraceTimeline.linked());
  assert.ok(linked, 'the kernel is linked to its launch');
  const launch = await page.evaluate(([id, i]) => window.cutraceTimeline.event(id, i), [linked.id, linked.i]);
  assert.equal(launch.c, ev.c);
  assert.equal(launch.name, 'cuLaunchKernel');
  assert.ok(launch.s < ev.s, 'the launch precedes the kernel');
  assert.match(await text('[data-field="link"]'), /^launched by cuLaunchKernel/);
  // Hovering shows the name and duration.
  await page.mouse.move(box.x + pt.x, box.y + pt.y + 1);
  assert.equal(await text('.tl-tip'), `${ev.name}  ${await page.evaluate((d) => CT.fmtNs(d), ev.d)}`);

  // f zooms to the selection.
  await page.locator('.tl-canvas').hover();
  await page.keyboard.press('f');
  const [fa, fb] = await page.evaluate(() => window.cutraceTimeline.view());
  assert.ok(fa <= ev.s && fb >= ev.s + ev.d && fb - fa < 3 * ev.d + 200, 'f frames the selected kernel');
});

test('timeline: jump to a step by name, search highlights matches', async () => {
  await page.fill('[data-control="jump"]', 'step_7');
  await page.press('[data-control="jump"]', 'Enter');
  assert.equal(await text('[data-field="name"]'), 'step_7');
  assert.equal(await text('[data-field="kind"]'), 'range');
  const [a, b] = await page.evaluate(() => window.cutraceTimeline.view());
  const sel = await page.evaluate(() => window.cutraceTimeline.selected());
  const ev = await page.evaluate(([id, i]) => window.cutraceTimeline.event(id, i), [sel.id, sel.i]);
  assert.ok(a <= ev.s && b >= ev.s + ev.d);
  // After the jump the view's keys work again: 'w' zooms in, nothing is typed into the box.
  await page.keyboard.press('w');
  const [a2, b2] = await page.evaluate(() => window.cutraceTimeline.view());
  assert.ok(b2 - a2 < b - a, `w after a jump zooms in: ${b - a} -> ${b2 - a2}`);
  assert.equal(await page.inputValue('[data-control="jump"]'), 'step_7');
  await page.fill('[data-control="search"]', 'ncclDevKernel');
  const count = parseCount((await text('[data-field="search-count"]')).split(' ')[0]);
  const nccl = summary.kernels.find((k) => k.name.startsWith('ncclDevKernel'));
  assert.equal(count, nccl.count);
  assert.deepEqual(errors, []);
});

test('a trace cut after its metadata (no operations) still gives a page without errors', async () => {
  const job = path.join(dir, 'job'), cut = path.join(dir, 'cut');
  mkdirSync(cut);
  const first = readdirSync(job).find((f) => f.endsWith('.cutrace'));
  writeFileSync(path.join(cut, first), readFileSync(path.join(job, first)).subarray(0, 600));
  execFileSync(cutrace, ['report', cut, '-o', path.join(dir, 'cut.html'), '-q']);
  const cutSummary = JSON.parse(execFileSync(cutrace, ['summary', cut, '--json']).toString());
  const r = await openReport(browser, path.join(dir, 'cut.html'));
  assert.equal(parseCount(await r.page.locator('[data-stat="kernel_count"]').textContent()), cutSummary.kernel_totals.count);
  const rank = cutSummary.ranks[0];
  assert.equal(rank.complete, false);
  assert.equal((await r.page.locator('[data-stat="ranks"] + .stat-sub').textContent()),
               `${rank.rank >= 0 ? 'rank ' + rank.rank : 'pid ' + rank.pid}: truncated`);
  await r.page.click('.tab[data-view="timeline"]');
  await r.page.waitForTimeout(100);
  assert.ok((await r.page.evaluate(() => window.cutraceTimeline.tracks())).length >= 2);
  assert.deepEqual(r.errors, []);
  await r.page.close();
});

test('a sampled trace (--gpu-sample): the kernels table has Est. total, equal to the summary est_total_ns', async () => {
  const job = path.join(dir, 'sampled');
  const env = {...process.env, CUTRACE_SAMPLE_HZ: '0',
               LD_LIBRARY_PATH: path.join(build, 'test/fake_cuda') + ':' + (process.env.LD_LIBRARY_PATH || '')};
  execFileSync(cutrace, ['record', '-o', job, '--gpu-timing', 'end', '--gpu-sample', '0.25/40', '--',
                         path.join(build, 'test/e2e/paced_launches'), '400'], {env, stdio: 'ignore'});
  execFileSync(cutrace, ['report', job, '-o', path.join(dir, 'sampled.html'), '-q']);
  const s = JSON.parse(execFileSync(cutrace, ['summary', job, '--json']).toString());
  const k = s.kernels.find((x) => x.name === 'k_paced');
  assert.ok(k && k.est_total_ns > k.total_ns, `k_paced in the summary: ${JSON.stringify(k)}`);
  const r = await openReport(browser, path.join(dir, 'sampled.html'));
  const est = await r.page.$$eval('[data-table="kernels"] tbody tr', (trs) => trs.map((tr) => ({
    name: tr.querySelector('[data-col="name"]').textContent,
    est: tr.querySelector('[data-col="est_total_ns"]').textContent})));
  const row = est.find((x) => x.name === 'k_paced');
  assert.ok(row, 'k_paced is in the kernels table');
  assertNs(row.est, k.est_total_ns, 'k_paced Est. total');
  assert.deepEqual(r.errors, []);
  await r.page.close();
  // An unsampled trace has no such column.
  assert.equal(await page.locator('[data-table="kernels"] [data-col="est_total_ns"]').count(), 0);
});

test('layout: pie legends fit their cards, the step histogram has axis titles', async () => {
  await page.click('.tab[data-view="dashboard"]');
  const overflow = await page.$$eval('[data-legend]', (ls) => ls.map((l) => {
    const card = l.closest('.card').getBoundingClientRect();
    const cells = [...l.querySelectorAll('td.num')].map((td) => td.getBoundingClientRect().right);
    return {key: l.dataset.legend, over: Math.max(0, ...cells) - card.right};
  }));
  assert.ok(overflow.length > 0);
  for (const o of overflow) assert.ok(o.over <= 0, `legend ${o.key}: its numbers end ${o.over}px past the card`);
  const titles = await page.$eval('[data-card="steps"] canvas', (c) => {
    const ch = window.Chart.getChart(c);
    return [ch.options.scales.x.title.text, ch.options.scales.y.title.text];
  });
  assert.deepEqual(titles, ['step duration (CPU, bin start)', 'steps']);
});

test('launch latency, GPU time breakdown, short kernels and sync call sites cards equal summary --json', async () => {
  const val = (card, key) => text(`[data-card="${card}"] [data-val="${key}"]`);
  const ll = summary.launch_latency;
  assert.ok(ll.count > 0, 'the synthetic job has timed launches');
  for (const k of ['median_ns', 'p90_ns', 'p99_ns', 'max_ns', 'mean_ns']) assertNs(await val('launch-latency', k), ll[k], `launch latency ${k}`);
  assert.equal(parseCount(await val('launch-latency', 'negative')), ll.negative);
  const b = summary.gpu_total.breakdown;
  for (const k of ['compute_ns', 'communication_ns', 'memory_ns', 'idle_ns', 'host_wait_ns', 'kernel_wait_ns', 'overlap_ns']) {
    assertNs(await val('gpu-breakdown', k), b[k], `breakdown ${k}`);
  }
  const sk = summary.short_kernels;
  assert.equal(parseCount(await val('short-kernels', 'count')), sk.count);
  assertNs(await val('short-kernels', 'total_ns'), sk.total_ns, 'short kernels GPU time');
  assertPct(await val('short-kernels', 'launch_share'), sk.launch_share, 'short kernels launch share');
  assertPct(await val('short-kernels', 'time_share'), sk.time_share, 'short kernels time share');
  // Sync call sites need call stacks: a recording of test/e2e/sync_sites (three named sites).
  const job = path.join(dir, 'syncsites');
  const env = {...process.env, CUTRACE_SAMPLE_HZ: '0',
               LD_LIBRARY_PATH: path.join(build, 'test/fake_cuda') + ':' + (process.env.LD_LIBRARY_PATH || '')};
  execFileSync(cutrace, ['record', '-o', job, '--', path.join(build, 'test/e2e/sync_sites')], {env, stdio: 'ignore'});
  execFileSync(cutrace, ['report', job, '-o', path.join(dir, 'syncsites.html'), '-q']);
  const sites = JSON.parse(execFileSync(cutrace, ['summary', job, '--json']).toString()).sync_call_sites.sites;
  assert.ok(sites.length >= 3, `sync_sites has its call sites in the summary: ${JSON.stringify(sites)}`);
  const r = await openReport(browser, path.join(dir, 'syncsites.html'));
  const rows = await r.page.$$eval('[data-table="sync-sites"] tbody tr', (trs) => trs.map((tr) => ({
    site: tr.querySelector('[data-col="site"]').textContent, count: tr.querySelector('[data-col="count"]').textContent,
    total: tr.querySelector('[data-col="total_ns"]').textContent})));
  assert.equal(rows.length, sites.length, 'one row per call site');
  for (const x of sites) {
    const row = rows.find((y) => y.site === x.site);
    assert.ok(row, `site ${x.site} in the table`);
    assert.equal(parseCount(row.count), x.count);
    assertNs(row.total, x.total_ns, `site ${x.site} total`);
  }
  assert.deepEqual(r.errors, []);
  await r.page.close();
});

test('CPU counters: the dashboard table, IPC and missing list equal summary --json; the timeline has their tracks', async () => {
  const job = path.join(dir, 'counters');
  const env = {...process.env, LD_LIBRARY_PATH: path.join(build, 'test/fake_cuda') + ':' + (process.env.LD_LIBRARY_PATH || '')};
  execFileSync(cutrace, ['record', '-o', job, '--sample-hz', '50', '--gpu-timing', 'none', '--',
                         path.join(build, 'test/e2e/paced_launches'), '500'], {env, stdio: 'ignore'});
  execFileSync(cutrace, ['report', job, '-o', path.join(dir, 'counters.html'), '-q']);
  const s = JSON.parse(execFileSync(cutrace, ['summary', job, '--json']).toString());
  const cc = s.ranks[0].cpu_counters;
  assert.ok(cc.counters.some((c) => c.name === 'task-clock'), `task-clock in the summary: ${JSON.stringify(cc)}`);
  const r = await openReport(browser, path.join(dir, 'counters.html'));
  const rows = await r.page.$$eval('[data-table="cpu-counters-table"] tbody tr', (trs) => trs.map((tr) => ({
    name: tr.querySelector('[data-col="name"]').textContent,
    scope: tr.querySelector('[data-col="scope"]').textContent,
    total: tr.querySelector('[data-col="total"]').textContent})));
  assert.equal(rows.length, cc.counters.length, 'one table row per recorded counter');
  for (const c of cc.counters) {
    const scope = c.scope === 'cpu' ? 'cpu' + c.cpu : 'process';
    const row = rows.find((x) => x.name === c.name && x.scope === scope);
    assert.ok(row, `${c.name} ${scope} is in the table`);
    assert.equal(parseCount(row.total), c.total, `${c.name} ${scope} total`);
  }
  const missing = await r.page.$$eval('[data-card="cpu-counters"] [data-missing]', (li) => li.map((x) => x.textContent));
  assert.equal(missing.length, cc.missing.length, 'one line per missing counter');
  for (const m of cc.missing) assert.ok(missing.some((x) => x.includes(m.name) && x.includes(m.reason)), `${m.name}: ${m.reason}`);
  if (cc.ipc !== null) assert.equal(await r.page.locator('[data-stat="ipc_0"]').textContent(), cc.ipc.toFixed(3));
  else assert.equal(await r.page.locator('[data-card="ipc"]').count(), 0, 'no IPC chart without cycles and instructions');
  await r.page.click('.tab[data-view="timeline"]');
  await r.page.waitForTimeout(100);
  const tracks = await r.page.evaluate(() => window.cutraceTimeline.tracks());
  assert.ok(tracks.some((t) => t.kind === 'counter' && t.name === 'CPU counter task-clock'),
            `timeline tracks: ${tracks.map((t) => t.name).join(' | ')}`);
  assert.deepEqual(r.errors, []);
  await r.page.close();
});

test('a capture past its buffer budget (--buffer-mb 1): a banner with the drops, the lost intervals on the timeline', async () => {
  const job = path.join(dir, 'drops');
  const env = {...process.env, CUTRACE_SAMPLE_HZ: '0',
               LD_LIBRARY_PATH: path.join(build, 'test/fake_cuda') + ':' + (process.env.LD_LIBRARY_PATH || '')};
  execFileSync(cutrace, ['record', '-o', job, '--buffer-mb', '1', '--gpu-timing', 'none', '--',
                         path.join(build, 'test/e2e/launch_loop'), '300000'], {env, stdio: 'ignore'});
  execFileSync(cutrace, ['report', job, '-o', path.join(dir, 'drops.html'), '-q']);
  const s = JSON.parse(execFileSync(cutrace, ['summary', job, '--json']).toString());
  assert.ok(s.drops.records > 0 && s.drops.by_kind.kernels > 0, `drops in the summary: ${JSON.stringify(s.drops)}`);
  const r = await openReport(browser, path.join(dir, 'drops.html'));
  const banner = await r.page.locator('#drops-banner').textContent();
  assert.ok(banner.includes(`${s.drops.records.toLocaleString('en-US')} of ${s.drops.of.toLocaleString('en-US')} records dropped`),
            `banner: ${banner}`);
  assert.ok(banner.includes(`kernels ${s.drops.by_kind.kernels.toLocaleString('en-US')}`), `banner: ${banner}`);
  assert.ok(banner.includes('--buffer-mb'), `banner: ${banner}`);
  await r.page.click('.tab[data-view="timeline"]');
  await r.page.waitForTimeout(200);
  const missing = await r.page.evaluate(() => {
    const out = [];
    for (const t of window.cutraceTimeline.tracks())
      for (let i = 0; i < t.events; ++i) {
        const e = window.cutraceTimeline.event(t.id, i);
        if (e.k === 8) out.push(e);
      }
    return out;
  });
  assert.equal(missing.length, s.drops.intervals, 'one timeline mark per interval with missing records');
  const total = missing.reduce((a, e) => a + Number(e.name.split(' ')[0].replace(/,/g, '')), 0);
  assert.equal(total, s.drops.records, 'the marks add up to the dropped records');
  assert.deepEqual(r.errors, []);
  await r.page.close();
  // A complete trace has no banner.
  assert.equal(await page.locator('#drops-banner').count(), 0);
});

test('a trace of three capture windows (--capture-repeat): the windows table equals the summary windows', async () => {
  const job = path.join(dir, 'windows');
  const env = {...process.env, CUTRACE_SAMPLE_HZ: '0',
               LD_LIBRARY_PATH: path.join(build, 'test/fake_cuda') + ':' + (process.env.LD_LIBRARY_PATH || '')};
  execFileSync(cutrace, ['record', '-o', job, '--capture-range', 'nvtx:step_*', '--capture-steps', '0-0',
                         '--capture-repeat', '2', '--', path.join(build, 'test/e2e/nvtx_app')], {env, stdio: 'ignore'});
  execFileSync(cutrace, ['report', job, '-o', path.join(dir, 'windows.html'), '-q']);
  const s = JSON.parse(execFileSync(cutrace, ['summary', job, '--json']).toString());
  const want = s.ranks[0].windows;
  assert.equal(want.length, 3);
  const r = await openReport(browser, path.join(dir, 'windows.html'));
  const rows = await r.page.$$eval('[data-table="windows"] tbody tr', (trs) => trs.map((tr) => ({
    window: tr.querySelector('[data-col="window"]').textContent,
    kernels: tr.querySelector('[data-col="kernels"]').textContent,
    median: tr.querySelector('[data-col="step_median"]').textContent,
    kernel_ns: tr.querySelector('[data-col="kernel_ns"]').textContent})));
  assert.deepEqual(rows.map((x) => Number(x.window)), want.map((w) => w.index));
  rows.forEach((x, i) => {
    assert.equal(parseCount(x.kernels), want[i].kernels, `window ${i} launches`);
    assertNs(x.median, want[i].steps.cpu_median_ns, `window ${i} step median`);
    assertNs(x.kernel_ns, want[i].kernel_ns, `window ${i} kernel time`);
  });
  assert.deepEqual(r.errors, []);
  await r.page.close();
  // A trace of one window has no such card.
  assert.equal(await page.locator('[data-table="windows"]').count(), 0);
});

test('per-rank comparison names the straggler from the collectives, with the time the others waited', async () => {
  // Rank 2 does 1.5 ms more backward CPU work a step; the collectives end together on every rank.
  const job = path.join(dir, 'straggler');
  mkdirSync(job);
  execFileSync(path.join(build, 'test/report_trace_gen'), [job, '4', '20', '10', '2']);
  execFileSync(cutrace, ['report', job, '-o', path.join(dir, 'straggler.html'), '-q']);
  const s = JSON.parse(execFileSync(cutrace, ['summary', job, '--json']).toString()).stragglers;
  assert.equal(s.straggler_rank, 2);
  assert.equal(s.ranks[2].last_arrivals, 20);
  const r = await openReport(browser, path.join(dir, 'straggler.html'));
  const verdict = r.page.locator('[data-card="ranks"] .verdict');
  assert.equal(await verdict.getAttribute('data-straggler'), '2');
  assert.equal(await verdict.textContent(), s.verdict);
  assert.match(s.verdict, /^rank 2 \(node-1\) is the straggler: the other ranks waited /);
  assert.equal(await r.page.locator('[data-card="ranks"] h3 .note').textContent(), 'straggler: rank 2');
  const waited = await r.page.$$eval('[data-table="ranks"] tbody tr', (trs) => trs.map((tr) => tr.querySelector('[data-col="waited"]').textContent));
  s.ranks.forEach((x, i) => assertNs(waited[i], x.waited_for_ns, `rank ${x.rank} others waited`));
  const range = await r.page.$$eval('[data-table="ranks"] tbody tr', (trs) => trs[2].querySelector('[data-col="range"]').textContent);
  assert.match(range, /^backward /);
  assert.deepEqual(r.errors, []);
  await r.page.close();
  // The job whose collectives do not line up: the page says the ranks stay on their wall clocks,
  // and that its slowest rank by step time is no straggler analysis.
  assert.ok((await page.locator('[data-clock]').count()) > 0);
  assert.match(await page.locator('[data-card="ranks"] h3 .note').textContent(),
               /^slowest: rank \d \(median step time\); no straggler analysis: no collective matched across ranks/);
});

test('memory chart: the allocations span the trace, from its start to its last event', async () => {
  await page.waitForTimeout(300);  // charts draw on the next frames
  const got = await page.evaluate(() => {
    const chart = Chart.getChart(document.querySelector('[data-card="memory"] canvas'));
    const alloc = chart.data.datasets.filter((d) => / allocated$/.test(d.label));
    return {min: chart.options.scales.x.min, last: alloc.map((d) => d.data[d.data.length - 1].x),
            first: alloc.map((d) => d.data[0].x)};
  });
  assert.equal(got.min, 0);
  assert.ok(got.last.length > 0, 'no allocation series in the memory chart');
  // The job's ranks run about 30 steps: each series reaches past its first allocation by far.
  for (let i = 0; i < got.last.length; i++) assert.ok(got.last[i] > got.first[i] + 1e6, JSON.stringify(got));
});

test('a Python program recorded with --python-stacks launch: the Python call-site table equals the summary', async () => {
  const job = path.join(dir, 'pystacks');
  const env = {...process.env, CUTRACE_SAMPLE_HZ: '0', PYTHONDONTWRITEBYTECODE: '1',
               LD_LIBRARY_PATH: path.join(build, 'test/fake_cuda') + ':' + (process.env.LD_LIBRARY_PATH || '')};
  const app = path.join(path.dirname(new URL(import.meta.url).pathname), '../../test/python/stack_app.py');
  execFileSync(cutrace, ['record', '-o', job, '--python-stacks', 'launch', '--',
                         process.env.PYTHON || 'python3', app, path.join(dir, 'pystacks.json')], {env, stdio: 'ignore'});
  execFileSync(cutrace, ['report', job, '-o', path.join(dir, 'pystacks.html'), '-q']);
  const s = JSON.parse(execFileSync(cutrace, ['summary', job, '--json']).toString());
  assert.ok(s.python_call_sites.sites.length > 0, `python_call_sites: ${JSON.stringify(s.python_call_sites)}`);
  const r = await openReport(browser, path.join(dir, 'pystacks.html'));
  const rows = await r.page.$$eval('[data-table="pysites"] tbody tr', (trs) => trs.map((tr) => ({
    site: tr.querySelector('[data-col="site"]').textContent,
    kernels: tr.querySelector('[data-col="kernels"]').textContent})));
  assert.deepEqual(rows.map((x) => [x.site, parseCount(x.kernels)]),
                   s.python_call_sites.sites.map((x) => [x.site, x.kernels]));
  assert.deepEqual(r.errors, []);
  await r.page.close();
  // A trace without Python stacks has no such table.
  assert.equal(await page.locator('[data-table="pysites"]').count(), 0);
});
