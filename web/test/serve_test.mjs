// Browser tests of `cutrace serve` (run by test/browser/run.sh serve, i.e. `make test`): jobs recorded on
// the fake driver are served, and headless chromium uses the pages as a person would: the job
// list (filters, a job directory named like an <img> tag shown as text), open a job (dashboard
// and timeline), back, unload it, open another; zooming the timeline of a large job fetches a
// finer piece of it. No console error and no dialog on any page.
import assert from 'node:assert/strict';
import {execFileSync, spawn} from 'node:child_process';
import {mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {after, before, test} from 'node:test';
import {launch} from './browser.mjs';

const build = process.env.CUTRACE_BUILD || path.resolve('build');
const cutrace = path.join(build, 'bin/cutrace');
const prog = (name) => path.join(build, 'test/e2e', name);
const EVIL_JOB = '<img src=x onerror=alert(9)>';
const EVIL_KERNEL = '<img/src=x/onerror=alert(1)>';
const BIG_LAUNCHES = 20000;

let dir, server, base, tokenUrl, browser, page;
const errors = [], dialogs = [];

function record(job, argv) {
  const env = {...process.env, CUTRACE_SAMPLE_HZ: '0',
               LD_LIBRARY_PATH: path.join(build, 'test/fake_cuda') + ':' + (process.env.LD_LIBRARY_PATH || '')};
  execFileSync(cutrace, ['record', '-o', path.join(dir, job), '--', ...argv], {env, stdio: 'ignore'});
}

function kernelCount(job) {
  const j = JSON.parse(execFileSync(cutrace, ['summary', path.join(dir, job), '--json'], {maxBuffer: 1 << 28}).toString());
  return j.kernel_totals.count;
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cutrace-serve-test-'));
  record('alpha', [prog('fault_app'), 'exit', '200']);
  record('beta', [prog('fault_app'), 'exit', '300']);
  record(EVIL_JOB, [prog('hostile_names')]);
  record('big', [prog('fault_app'), 'many', String(BIG_LAUNCHES)]);
  server = spawn(cutrace, ['serve', dir, '--port', '0'], {stdio: ['ignore', 'pipe', 'inherit']});
  // The printed URL carries the token; opening it sets the cookie the pages' requests send.
  [base, tokenUrl] = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /(http:\/\/127\.0\.0\.1:\d+\/)(\?token=[0-9a-f]{48})/.exec(out);
      if (m) resolve([m[1], m[1] + m[2]]);
    });
    server.on('exit', (code) => reject(new Error(`cutrace serve exited ${code}: ${out}`)));
  });
  browser = await launch();
  page = await browser.newPage({viewport: {width: 1500, height: 1000}});
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console (${page.url()}): ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`pageerror (${page.url()}): ${e.message}`));
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  page.on('request', (r) => { if (!r.url().startsWith(base)) errors.push('request outside the server: ' + r.url()); });
  await page.goto(tokenUrl);
  assert.equal(page.url(), base, 'the printed URL redirects to the address without the token');
});

after(async () => {
  if (browser) await browser.close();
  if (server) server.kill('SIGTERM');
  if (dir) rmSync(dir, {recursive: true, force: true});
});

// Polls fn in the page until it returns true. (page.waitForFunction evaluates a string in the
// page, which the server's Content-Security-Policy forbids; evaluate() goes through the devtools
// protocol instead.)
async function until(fn, arg, timeout = 30000) {
  const end = Date.now() + timeout;
  while (!(await page.evaluate(fn, arg))) {
    if (Date.now() > end) throw new Error('timed out waiting for ' + fn.toString());
    await page.waitForTimeout(50);
  }
}

const rowNames = () => page.locator('#jobs tbody tr td.name').allTextContents();
const row = (name) => page.locator('#jobs tbody tr', {has: page.locator('td.name', {hasText: name})}).first();

async function openList() {
  await page.goto(base);
  await until(() => document.querySelectorAll('#jobs tbody tr').length > 0);
}

async function openJob(name) {
  await openList();
  await Promise.all([page.waitForURL(/\/job\/[0-9a-f]{16}\/$/, {timeout: 60000}), row(name).locator('button.open').click()]);
  await page.waitForSelector('body[data-ready="true"]', {timeout: 60000});
}

test('job list: every job, hostile directory name as text, no console error', async () => {
  await openList();
  assert.deepEqual((await rowNames()).sort(), [EVIL_JOB, 'alpha', 'beta', 'big'].sort());
  assert.equal(await row('alpha').locator('.status').textContent(), 'completed');
  // The reason beside the status is the API's.
  const api = await page.evaluate(async () => (await (await fetch('/api/jobs')).json()).jobs);
  const alpha = api.find((j) => j.name === 'alpha');
  assert.equal(alpha.reason, 'exit status 0');
  assert.equal(await row('alpha').locator('.reason').textContent(), alpha.reason);
  assert.equal(await row('big').locator('td.ranks').textContent(), '1');
  assert.equal(await page.locator('#jobs img').count(), 0, 'the job name became an element');
  assert.deepEqual(dialogs, []);
  assert.deepEqual(errors, []);
});

test('job list: filters by name and status', async () => {
  await openList();
  await page.fill('#f-name', 'ALP');
  await page.click('#f-apply');
  await until(() => document.querySelectorAll('#jobs tbody tr').length === 1);
  assert.deepEqual(await rowNames(), ['alpha']);
  await page.click('#f-clear');
  await until(() => document.querySelectorAll('#jobs tbody tr').length === 4);
  await page.check('#f-status input[value="failed"]');
  await until(() => document.querySelectorAll('#jobs tbody tr').length === 0);
  await page.check('#f-status input[value="completed"]');
  await until(() => document.querySelectorAll('#jobs tbody tr').length === 4);
  assert.deepEqual(errors, []);
});

test('open a job: dashboard figures and timeline tracks', async () => {
  await openJob('alpha');
  const shown = Number((await page.locator('[data-stat="kernel_count"]').first().textContent()).replace(/,/g, ''));
  assert.equal(shown, kernelCount('alpha'));
  assert.equal(shown, 200);
  await page.click('.tab[data-view="timeline"]');
  await page.waitForSelector('[data-testid="timeline-canvas"]');
  const tracks = await page.evaluate(() => window.cutraceTimeline.tracks());
  const streams = tracks.filter((t) => t.kind === 'stream');
  assert.ok(streams.length > 0, 'no stream track');
  assert.equal(streams.reduce((n, t) => n + t.events, 0), 200, 'kernels on the stream tracks');
  assert.deepEqual(errors, []);
});

test('back to the list: the job is loaded; unload it; open another; unload from its page', async () => {
  await page.click('[data-control="jobs"]');  // the job page's link back to the list
  await until(() => document.querySelectorAll('#jobs tbody tr').length === 4);
  assert.equal(await row('alpha').locator('td.loaded').textContent(), 'yes');
  await row('alpha').locator('button.unload').click();
  await until(() => [...document.querySelectorAll('#jobs tbody tr')]
    .some((r) => r.querySelector('td.name').textContent === 'alpha' && r.querySelector('td.loaded').textContent === 'no'));
  await openJob('beta');
  const shown = Number((await page.locator('[data-stat="kernel_count"]').first().textContent()).replace(/,/g, ''));
  assert.equal(shown, 300);
  await openList();
  assert.equal(await row('alpha').locator('td.loaded').textContent(), 'no');
  assert.equal(await row('beta').locator('td.loaded').textContent(), 'yes');
  await row('beta').locator('button.open').click();
  await page.waitForSelector('body[data-ready="true"]', {timeout: 60000});
  await Promise.all([page.waitForURL(base, {timeout: 30000}), page.click('[data-control="unload"]')]);
  await until(() => document.querySelectorAll('#jobs tbody tr').length === 4);
  assert.equal(await row('beta').locator('td.loaded').textContent(), 'no');
  assert.deepEqual(errors, []);
});

test('hostile kernel and NVTX names are shown as text, never run', async () => {
  await openJob(EVIL_JOB);
  await page.click('.tab[data-view="timeline"]');
  await page.waitForSelector('[data-testid="timeline-canvas"]');
  await page.click('.tab[data-view="dashboard"]');
  const text = await page.evaluate(() => document.body.innerText);
  assert.ok(text.includes(EVIL_KERNEL), 'the hostile kernel name is not on the dashboard as text');
  const injected = await page.evaluate(() => document.querySelectorAll('img, iframe, svg [onload], [onerror], [onmouseover]').length);
  assert.equal(injected, 0, 'an element came from a name');
  assert.deepEqual(dialogs, []);
  assert.deepEqual(errors, []);
});

test('large job: zooming in fetches a finer timeline piece', async () => {
  const pieces = [];
  page.on('response', (r) => { if (r.url().includes('timeline.json?')) pieces.push({url: r.url(), status: r.status()}); });
  await openJob('big');
  await page.click('.tab[data-view="timeline"]');
  await page.waitForSelector('[data-testid="timeline-canvas"]');
  const stream = async () => (await page.evaluate(() => window.cutraceTimeline.tracks())).find((t) => t.kind === 'stream');
  const overview = (await stream()).events;
  assert.ok(overview < BIG_LAUNCHES, `the overview holds ${overview} items: expected aggregated buckets`);
  const [v0, v1] = await page.evaluate(() => window.cutraceTimeline.view());
  const c = (v0 + v1) / 2, w = (v1 - v0) / 200;
  await page.evaluate(([a, b]) => window.cutraceTimeline.setView(a, b), [c - w, c + w]);
  await page.waitForSelector('body[data-pieces="1"]', {timeout: 60000});
  assert.equal(pieces.length, 1);
  assert.equal(pieces[0].status, 200);
  const q = new URL(pieces[0].url).searchParams;
  assert.ok(Number(q.get('px')) > 0 && Number(q.get('t1')) > Number(q.get('t0')));
  // The piece covers three view widths: its kernels are a small part of the job's, at full detail.
  const inPiece = (await stream()).events;
  assert.ok(inPiece > 0 && inPiece < BIG_LAUNCHES / 10, `${inPiece} kernels in the piece`);
  const items = await page.evaluate(() => {
    const t = window.cutraceTimeline.tracks().find((x) => x.kind === 'stream');
    return window.cutraceTimeline.event(t.id, 0);
  });
  assert.equal(items.name, 'k_fault');
  assert.deepEqual(errors, []);
});

// Runs last: it adds a fifth job. Two `cutrace record` runs into one directory: the list marks the
// job "mixed runs", with the server's note as the tooltip; a job of one run has no mark.
test('compare with...: two jobs of the list diffed, the page showing what diff.json says', async () => {
  await openList();
  await row('alpha').locator('button.compare').click();
  assert.equal(await row('alpha').locator('button.compare').textContent(), 'Cancel');
  await Promise.all([page.waitForURL(/\/compare\/[0-9a-f]{16}\/[0-9a-f]{16}\/$/, {timeout: 60000}),
                     row('beta').locator('button.compare').click()]);
  await page.waitForSelector('body[data-ready="true"]', {timeout: 60000});
  const d = await page.evaluate(async () => (await fetch('diff.json')).json());
  assert.equal(d.a.path, 'alpha');
  assert.equal(d.b.path, 'beta');
  assert.equal(await page.locator('#job').textContent(), 'A: alpha   B: beta');
  // fault_app exit 200 against exit 300: the same kernel, 100 launches more in B.
  const k = d.kernels.rows.find((r) => r.match === 'exact');
  assert.ok(k, JSON.stringify(d.kernels));
  assert.equal(k.b.count - k.a.count, 100);
  assert.equal(await page.locator('[data-error]').count(), 0);
  assert.deepEqual(errors, []);
});

test('job list: a directory holding two runs is marked mixed runs', async () => {
  record('mixed', [prog('fault_app'), 'exit', '20']);
  record('mixed', [prog('fault_app'), 'exit', '30']);
  await openList();
  await until(() => document.querySelectorAll('#jobs tbody tr').length === 5);
  const mark = row('mixed').locator('.mixed');
  assert.equal(await mark.textContent(), 'mixed runs');
  assert.match(await mark.getAttribute('title'), /^traces of 2 separate runs/);
  assert.equal(await row('alpha').locator('.mixed').count(), 0);
  assert.deepEqual(errors, []);
});

test('without the token: a page that says to open the printed URL; nothing else answers', async () => {
  const context = await browser.newContext();
  const fresh = await context.newPage();
  const r = await fresh.goto(base);
  assert.equal(r.status(), 401);
  assert.match(await fresh.locator('h1').textContent(), /401 the token is missing or wrong/);
  assert.match(await fresh.locator('body').textContent(), /\?token=/);
  const api = await fresh.evaluate(async () => (await fetch('/api/jobs')).status);
  assert.equal(api, 401);
  await context.close();
});

// A job whose traces are all unreadable: its page shows the server's reason (422), not a blank page.
test('a job whose traces are all unreadable: its page says why', async () => {
  mkdirSync(path.join(dir, 'broken'));
  writeFileSync(path.join(dir, 'broken', 'empty.rank0.pid1.cutrace'), '');
  await openList();
  const id = await page.evaluate(async () => (await (await fetch('/api/jobs')).json()).jobs.find((j) => j.name === 'broken').id);
  const before = errors.length;
  await page.goto(base + 'job/' + id + '/');
  await page.waitForSelector('body[data-ready="error"]', {timeout: 30000});
  const text = await page.locator('#dashboard').textContent();
  assert.match(text, /Cannot load the report data: cannot read job broken/);
  assert.match(text, /empty/);
  // The 422 answer itself is logged by the browser as a failed resource; nothing else may be.
  assert.ok(errors.slice(before).every((e) => /status of 422/.test(e)), errors.slice(before).join('; '));
  errors.length = before;
});
