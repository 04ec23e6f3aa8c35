// The report page's entry point: finds the data (embedded by `cutrace report`, or fetched from
// `cutrace serve` as dashboard.json and timeline.json next to the page), then draws the
// dashboard and, when its tab is first opened, the timeline.
'use strict';
(function (CT) {
  async function loadData() {
    const embedded = (id) => {
      const e = document.getElementById(id);
      return e ? JSON.parse(e.textContent) : null;
    };
    // An error answer of the server ({"error": why}, e.g. 422: no trace of the job reads) is the
    // message shown, not a document to draw.
    const get = async (url) => {
      const r = await fetch(url);
      let body = null;
      try {
        body = await r.json();
      } catch (e) {
        if (r.ok) throw e;
      }
      if (!r.ok) throw new Error((body && body.error) || `HTTP ${r.status} ${r.statusText}`);
      return body;
    };
    let dashboard = embedded('cutrace-dashboard');
    let timeline = embedded('cutrace-timeline');
    if (!dashboard) dashboard = await get('dashboard.json');
    if (!timeline) timeline = await get('timeline.json');
    return {dashboard, timeline};
  }

  function header(d) {
    const job = document.getElementById('job');
    const files = d.files.length;
    const first = d.files[0] || {};
    job.textContent = '';
    job.appendChild(CT.el('span', {class: 'job-path', title: d.job}, d.job));
    job.appendChild(CT.el('span', {class: 'muted'},
      ` \u00b7 ${files} trace file${files === 1 ? '' : 's'} \u00b7 ${first.cmdline || ''}`));
  }

  async function main() {
    let data;
    try {
      data = await loadData();
    } catch (e) {
      const box = document.getElementById('dashboard');
      box.textContent = 'Cannot load the report data: ' + e.message;
      box.classList.add('load-error');
      document.body.dataset.ready = 'error';
      return;
    }
    header(data.dashboard);
    CT.renderDashboard(document.getElementById('dashboard'), data.dashboard);
    let timelineReady = false;
    const show = (view) => {
      for (const b of document.querySelectorAll('.tab')) b.classList.toggle('active', b.dataset.view === view);
      for (const v of document.querySelectorAll('.view')) v.classList.toggle('hidden', v.id !== view);
      if (view === 'timeline') {
        if (!timelineReady) {
          CT.renderTimeline(document.getElementById('timeline'), data.dashboard, data.timeline);
          timelineReady = true;
        }
        CT.timelineShown();
      }
      if (location.hash !== '#' + view) history.replaceState(null, '', '#' + view);
    };
    for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => show(b.dataset.view));
    show(location.hash === '#timeline' ? 'timeline' : 'dashboard');
    document.body.dataset.ready = 'true';
  }
  main();
})(window.CT);
