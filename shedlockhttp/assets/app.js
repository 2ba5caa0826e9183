// The dashboard's live updates and actions: it fetches the live part of the
// page every data-refresh milliseconds and swaps it in, and sends actions as
// POSTs carrying the page's CSRF token. No framework; nothing inline.
(function () {
  'use strict';
  var body = document.body;
  var refresh = Number(body.dataset.refresh) || 2000;
  var token = document.querySelector('meta[name="csrf-token"]').content;
  var live = document.getElementById('live');
  var statusEl = document.getElementById('status');
  var flash = document.getElementById('flash');
  var filter = document.getElementById('filter');
  var pauseFor = document.getElementById('pause-for');
  var busy = false;
  var updates = 0;

  function setStatus(text, cls) {
    statusEl.textContent = text;
    statusEl.className = 'status' + (cls ? ' ' + cls : '');
  }

  function update() {
    if (busy) { return Promise.resolve(); }
    busy = true;
    return fetch('live' + location.search, { credentials: 'same-origin', cache: 'no-store' })
      .then(function (res) {
        if (!res.ok) { throw new Error('HTTP ' + res.status); }
        return res.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        live.replaceChildren.apply(live, Array.prototype.slice.call(doc.body.childNodes).map(function (n) {
          return document.adoptNode(n);
        }));
        updates++;
        body.dataset.updates = String(updates);
        setStatus('live', '');
      })
      .catch(function (e) { setStatus('offline: ' + e.message, 'offline'); })
      .finally(function () { busy = false; });
  }

  function show(message, ok) {
    flash.textContent = message;
    flash.className = ok ? 'ok' : 'error';
  }

  document.addEventListener('submit', function (e) {
    var form = e.target.closest('form.act');
    if (!form) { return; }
    e.preventDefault();
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) { return; }
    var data = new URLSearchParams(new FormData(form));
    if (form.dataset.kind === 'pause' && pauseFor) { data.set('for', pauseFor.value); }
    fetch(form.getAttribute('action'), {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'X-CSRF-Token': token, 'Accept': 'application/json' },
      body: data
    }).then(function (res) {
      return res.json().then(function (j) { show(j.message, res.ok); }, function () {
        show('HTTP ' + res.status, false);
      });
    }).catch(function (err) { show(err.message, false); }).then(update);
  });

  if (filter) {
    var debounce = null;
    var apply = function () {
      var params = new URLSearchParams(new FormData(filter));
      ['q', 'state'].forEach(function (k) { if (!params.get(k)) { params.delete(k); } });
      var qs = params.toString();
      history.replaceState(null, '', qs ? '?' + qs : location.pathname);
      update();
    };
    filter.addEventListener('submit', function (e) { e.preventDefault(); apply(); });
    filter.addEventListener('input', function (e) {
      if (e.target.id === 'pause-for') { return; }
      clearTimeout(debounce);
      debounce = setTimeout(apply, 250);
    });
  }

  setInterval(function () { if (!document.hidden) { update(); } }, refresh);
  body.dataset.updates = '0';
  body.classList.add('js');
})();
