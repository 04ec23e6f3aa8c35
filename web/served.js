// Served mode of the report page (`cutrace serve` adds this script to /job/ID/): links back to
// the job list, and an Unload button that frees the job on the server and returns to the list.
'use strict';
(function () {
  const m = /^\/job\/([0-9a-f]{16})\/$/.exec(location.pathname);
  if (!m || document.getElementById('cutrace-dashboard')) return;
  const id = m[1];
  const nav = document.createElement('div');
  nav.className = 'served-nav';
  const back = document.createElement('a');
  back.href = '/';
  back.textContent = '\u2190 all jobs';
  back.dataset.control = 'jobs';
  const unload = document.createElement('button');
  unload.type = 'button';
  unload.textContent = 'Unload';
  unload.dataset.control = 'unload';
  unload.addEventListener('click', async () => {
    try {
      const r = await fetch(`/api/jobs/${id}/unload`, {method: 'POST'});
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      location.href = '/';
    } catch (e) {
      unload.textContent = 'Unload failed: ' + e.message;
    }
  });
  nav.style.whiteSpace = 'nowrap';
  back.style.color = '#c9d3e3';  // on the page's dark header
  nav.append(back, ' ', unload);
  document.getElementById('top').appendChild(nav);
})();
