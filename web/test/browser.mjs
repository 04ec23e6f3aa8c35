// Starts Debian's chromium headless through playwright-core (no browser download: the system
// browser is used). Shared by the browser tests, the screenshot script and bench/report_fps.mjs.
import {existsSync} from 'node:fs';
import {createRequire} from 'node:module';

const require = createRequire(import.meta.url);
const {chromium} = require('playwright-core');

// The browser binary, or null: $CHROMIUM, Debian's chromium, or a chromium/chrome on PATH.
export function findChromium() {
  const candidates = [process.env.CHROMIUM, '/usr/lib/chromium/chromium', '/usr/bin/chromium',
                      '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
  return candidates.find((p) => p && existsSync(p)) || null;
}

export async function launch() {
  const executablePath = findChromium();
  if (!executablePath) throw new Error('no chromium found (apt-get install chromium, or set CHROMIUM)');
  return chromium.launch({executablePath, headless: true,
                          args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']});
}

// Opens a report file; collects console errors and page errors into the returned list.
export async function openReport(browser, file, viewport) {
  const page = await browser.newPage({viewport: viewport || {width: 1500, height: 1000}});
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) errors.push('network: ' + r.url()); });
  await page.goto('file://' + file);
  await page.waitForSelector('body[data-ready="true"]', {timeout: 60000});
  return {page, errors};
}
