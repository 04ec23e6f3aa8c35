// Browser test of `cutrace diff --html` (run by test/browser/run.sh diff, i.e. `make test`): two
// runs of test/e2e/diff_app on the fake driver that differ in known ways are diffed, the page is
// opened in headless chromium, and what it SHOWS is compared with `cutrace diff --json`.
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {after, before, test} from 'node:test';
import {launch, openReport} from './browser.mjs';

const build = process.env.CUTRACE_BUILD || path.resolve('build');
const cutrace = path.join(build, 'bin/cutrace');
let dir, diff, browser, page, errors;

// The page's own formatting of a signed time (web/diff.js), from the JSON figure.
function fmtNs(ns) {
  const a = Math.abs(ns);
  if (a < 1e3) return Math.round(ns) + ' ns';
  const [v, u] = a < 1e6 ? [ns / 1e3, 'us'] : a < 1e9 ? [ns / 1e6, 'ms'] : [ns / 1e9, 's'];
  const digits = Math.abs(v) >= 1000 ? 0 : Math.abs(v) >= 100 ? 1 : Math.abs(v) >= 10 ? 2 : 3;
  return v.toFixed(digits) + ' ' + u;
}
const signedNs = (v) => (Math.round(v) === 0 ? '0' : (v > 0 ? '+' : '-') + fmtNs(Math.abs(v)));

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cutrace-diff-test-'));
  const env = {...process.env, LD_LIBRARY_PATH: path.join(build, 'test/fake_cuda') + ':' + (process.env.LD_LIBRARY_PATH || '')};
  const app = path.join(build, 'test/e2e/diff_app');
  const a = path.join(dir, 'a'), b = path.join(dir, 'b');
  execFileSync(cutrace, ['record', '-o', a, '--sample-hz', '0', '--', app, '4', 'ampere_sgemm_128x64_nn', '40000', '0', '1000'], {env, stdio: 'ignore'});
  execFileSync(cutrace, ['record', '-o', b, '--sample-hz', '0', '--', app, '6', 'ampere_sgemm_256x128_nn', '80000', '1', '5000'], {env, stdio: 'ignore'});
  diff = JSON.parse(execFileSync(cutrace, ['diff', '--json', a, b]).toString());
  execFileSync(cutrace, ['diff', '--html', path.join(dir, 'diff.html'), a, b], {stdio: 'ignore'});
  browser = await launch();
  ({page, errors} = await openReport(browser, path.join(dir, 'diff.html')));
});

after(async () => {
  if (browser) await browser.close();
  if (dir) rmSync(dir, {recursive: true, force: true});
});

const text = (sel) => page.locator(sel).first().textContent();

test('diff page opens from disk with no console errors and no network access', async () => {
  await page.waitForTimeout(300);
  assert.deepEqual(errors, []);
});

test('diff page shows the steps and the kernel change of diff --json', async () => {
  assert.equal(await text('[data-stat="a_steps"]'), '4');
  assert.equal(await text('[data-stat="b_steps"]'), '6');
  assert.equal(await text('[data-stat="kernel_change"]'), signedNs(diff.kernels.change_ns));
  const beyond = await page.locator('[data-table="steps"] tbody tr').first().locator('td').last().textContent();
  assert.equal(beyond, diff.steps.cpu.beyond_spread ? 'yes' : 'no');
});

test('diff page lists the kernels as diff --json: normalised match, only in B, changes', async () => {
  const rows = page.locator('[data-table="kernels"] tbody tr');
  assert.equal(await rows.count(), diff.kernels.rows.length);
  const shown = {};
  for (let i = 0; i < diff.kernels.rows.length; ++i) {
    const cells = await rows.nth(i).locator('td').allTextContents();
    shown[cells[0]] = cells;
  }
  for (const k of diff.kernels.rows) {
    const cells = shown[k.name];
    assert.ok(cells, `kernel ${k.name} not on the page`);
    assert.equal(cells[1], k.match);
    assert.equal(cells[6], signedNs(k.change_ns), `${k.name} change`);
  }
  assert.equal(shown['ampere_sgemm_*_nn'][1], 'normalised');
  assert.equal(shown['k_extra'][1], 'only_b');
  assert.equal(shown['k_extra'][2], '-');
});
