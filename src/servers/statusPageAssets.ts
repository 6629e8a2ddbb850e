// The status page's HTML, CSS and script, served by the control plane itself
// (no CDN: it works offline). The script polls /status-page.json twice a second
// and draws it with DOM text nodes only (never innerHTML): CRD names and
// Envoy's messages are user-controlled data. The Content-Security-Policy
// (adminHttp.ts) allows only these same-origin files.

export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mvproxy status</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/status-page.css">
<script src="/status-page.js" defer></script>
</head>
<body>
<header><h1>mvproxy</h1><span id="replica"></span><span id="updated">loading…</span></header>
<main>
<section><h2>Apiservers</h2><table id="apiservers"></table></section>
<section><h2>Sidecars</h2><table id="sidecars"></table></section>
<section><h2>kubernetes Service</h2><p id="publication"></p><table id="publication-fields"></table><table id="publication-nodes"></table></section>
<section>
<h2>Skew matrix</h2>
<p class="legend">One column per apiserver: whether it serves the resource, and where its sidecar sends it (local, a peer, or 503).
Group-versions with a difference are expanded; click a group-version to expand or collapse it.</p>
<p><input id="filter" type="search" placeholder="filter: group, version or resource" aria-label="filter the matrix">
<label><input id="notable" type="checkbox"> only differences</label> <span id="counts"></span></p>
<table id="matrix"></table>
</section>
<section><h2>Recent events</h2><table id="events"></table></section>
</main>
</body>
</html>
`;

export const STATUS_PAGE_CSS = `body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { display: flex; gap: 1.5em; align-items: baseline; padding: 0.6em 1.2em; background: #1d2330; color: #fff; }
header h1 { font-size: 1.2em; margin: 0; }
#updated.stale { color: #ffb4a8; }
main { padding: 0 1.2em 2em; }
h2 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
table { border-collapse: collapse; background: #fff; min-width: 40em; }
th, td { text-align: left; padding: 0.2em 0.7em; border-bottom: 1px solid #e3e6eb; vertical-align: top; }
th { background: #eceff3; font-weight: 600; }
td.num { text-align: right; }
.bad { color: #b3261e; font-weight: 600; }
.good { color: #1b6e3a; }
.warn { color: #8a5a00; font-weight: 600; }
tr.gv th { background: #f1f3f6; cursor: pointer; font-weight: 500; }
tr.gv.notable th { background: #fff1d6; }
td.cell.local { color: #1b6e3a; }
td.cell.peer { background: #e7f0ff; color: #1a4fa0; font-weight: 600; }
td.cell.unavailable { background: #fde2df; color: #b3261e; font-weight: 600; }
td.cell.unserved .mark { color: #9aa3af; }
.legend { color: #5b6472; margin: 0 0 0.4em; }
#publication-fields { margin-bottom: 0.6em; }
#publication-fields thead { display: none; }
#filter { width: 24em; padding: 0.2em 0.4em; }
#counts { color: #5b6472; }
#events td:nth-child(-n+3) { white-space: nowrap; }
#events td:nth-child(4) { font-family: ui-monospace, monospace; font-size: 0.92em; }
`;

export const STATUS_PAGE_JS = `'use strict';
(function () {
  var REFRESH_MS = 500;
  var last = '';
  var data = null;
  // Group-versions the operator expanded or collapsed by hand: kept across refreshes.
  var toggled = new Map();

  function el(tag, attrs) {
    var node = document.createElement(tag);
    var key;
    for (key in attrs || {}) node.setAttribute(key, String(attrs[key]));
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function fill(id, header, rows) {
    var table = document.getElementById(id);
    table.replaceChildren(el('thead', {}, el.apply(null, ['tr', {}].concat(header.map(function (h) { return el('th', {}, h); })))), el.apply(null, ['tbody', {}].concat(rows)));
  }

  function td(text, cls) {
    return el('td', cls ? { class: cls } : {}, text);
  }

  function drawApiservers(d) {
    fill('apiservers', ['APISERVER', 'VERSION', 'STANDING', 'READY', 'DRAINING', 'LEASE HOLDER', 'ADDRESS', 'RESOURCES'], d.apiservers.map(function (a) {
      return el('tr', { 'data-apiserver': a.name },
        td(a.name), td(a.version || '-'), td(a.standing, a.standing === 'available' ? 'good' : 'bad'),
        td(a.ready || '-', a.ready === 'no' ? 'warn' : ''), td(a.draining ? 'yes' : 'no', a.draining ? 'warn draining' : 'draining'),
        td(a.leaseHolder || '-'), td(a.address), td(a.resources, 'num'));
    }));
  }

  function drawSidecars(d) {
    fill('sidecars', ['SIDECAR', 'CONNECTED', 'IN SYNC', 'TO PEERS', '503', 'LAST NACK'], d.sidecars.map(function (s) {
      return el('tr', { 'data-sidecar': s.node },
        td(s.node), td(s.connected, s.connected === 'no' ? 'bad' : 'good'), td(s.inSync ? 'yes' : 'no', s.inSync ? 'good' : 'warn'),
        td(s.rerouted, 'num'), td(s.unavailable, s.unavailable > 0 ? 'num bad' : 'num'), td(s.lastNack || '-', s.lastNack ? 'bad' : ''));
    }));
  }

  // Drawn from whatever fields the publisher's status has (statusPage.ts kubernetesServicePanel).
  function drawPublication(d) {
    var k = d.kubernetesService;
    var cls = k.state === 'publishing' ? 'good' : k.state === 'failing' ? 'bad' : k.state === 'off' ? '' : 'warn';
    document.getElementById('publication').replaceChildren(el('span', { id: 'publication-state', class: cls }, k.state || '-'), ' \u2014 ', el('span', { id: 'publication-message' }, k.message));
    fill('publication-fields', ['', ''], k.fields.map(function (f) { return el('tr', { 'data-field': f.name }, el('th', {}, label(f.name)), td(f.value)); }));
    var columns = [];
    k.nodes.forEach(function (n) { n.forEach(function (f) { if (columns.indexOf(f.name) < 0) columns.push(f.name); }); });
    fill('publication-nodes', columns.map(label), k.nodes.map(function (n) {
      var values = new Map(n.map(function (f) { return [f.name, f.value]; }));
      return el.apply(null, ['tr', { 'data-node': values.get('apiserver') || '' }].concat(columns.map(function (c) { return td(values.has(c) ? values.get(c) : '-', 'field-' + c); })));
    }));
    document.getElementById('publication-fields').hidden = k.fields.length === 0;
    document.getElementById('publication-nodes').hidden = k.nodes.length === 0;
  }

  function label(name) {
    return name.replace(/_/g, ' ').toUpperCase();
  }

  function cell(served, route) {
    var kind = route === 'local' ? 'local' : route === '503' ? 'unavailable' : route === '' ? 'none' : 'peer';
    var where = kind === 'peer' ? '\\u2192 ' + route : route === '' ? 'no plan' : route;
    return el('td', { class: 'cell ' + kind + (served ? ' served' : ' unserved'), 'data-served': served ? 'yes' : 'no', 'data-route': route },
      el('span', { class: 'mark' }, served ? '\\u2713 serves' : '\\u2014 lacks'), ' \\u00b7 ', where);
  }

  function drawMatrix(d) {
    var filter = document.getElementById('filter').value.trim().toLowerCase();
    var onlyNotable = document.getElementById('notable').checked;
    var columns = d.matrix.columns;
    var versions = new Map(d.apiservers.map(function (a) { return [a.name, a.version]; }));
    var header = ['GROUP/VERSION', 'RESOURCE'].concat(columns.map(function (c) { return c + (versions.get(c) ? ' (' + versions.get(c) + ')' : ''); }));
    var groups = new Map();
    d.matrix.rows.forEach(function (r) {
      var gv = r.group === 'core' ? r.version : r.group + '/' + r.version;
      if (!groups.has(gv)) groups.set(gv, []);
      groups.get(gv).push(r);
    });
    var bodies = [];
    var shown = 0;
    groups.forEach(function (rows, gv) {
      var matching = rows.filter(function (r) {
        return (!onlyNotable || r.notable) && (filter === '' || (gv + ' ' + r.resource).toLowerCase().indexOf(filter) >= 0);
      });
      if (matching.length === 0) return;
      var notable = rows.filter(function (r) { return r.notable; }).length;
      var open = filter !== '' || (toggled.has(gv) ? toggled.get(gv) : notable > 0);
      var head = el('tr', { class: 'gv' + (notable > 0 ? ' notable' : ''), 'data-gv': gv },
        el('th', { colspan: 2 + columns.length }, (open ? '\\u25be ' : '\\u25b8 ') + gv + ' \\u2014 ' + rows.length + ' resource' + (rows.length === 1 ? '' : 's') + (notable > 0 ? ', ' + notable + ' with a difference' : '')));
      head.addEventListener('click', function () {
        toggled.set(gv, !open);
        drawMatrix(data);
      });
      var body = el('tbody', {}, head);
      if (open) {
        matching.forEach(function (r) {
          shown++;
          var row = el('tr', { 'data-gvr': gv + '/' + r.resource }, td(gv), td(r.resource));
          columns.forEach(function (_c, i) { row.appendChild(cell(r.served[i], r.routes[i])); });
          body.appendChild(row);
        });
      }
      bodies.push(body);
    });
    var table = document.getElementById('matrix');
    table.replaceChildren.apply(table, [el.apply(null, ['thead', {}, el.apply(null, ['tr', {}].concat(header.map(function (h) { return el('th', {}, h); })))])].concat(bodies));
    document.getElementById('counts').textContent = d.matrix.rows.length + ' resources in ' + groups.size + ' group-versions; ' + shown + ' rows shown';
  }

  function drawEvents(d) {
    fill('events', ['TIME', 'KIND', 'SUBJECT', 'MESSAGE'], d.events.map(function (e) {
      return el('tr', { 'data-kind': e.kind, 'data-subject': e.subject }, td(e.time.replace('T', ' ').replace('Z', '')), td(e.kind), td(e.subject), td(e.message));
    }));
  }

  function draw(d) {
    data = d;
    document.getElementById('replica').textContent = 'replica ' + d.replica;
    drawApiservers(d);
    drawSidecars(d);
    drawPublication(d);
    drawMatrix(d);
    drawEvents(d);
  }

  function refresh() {
    fetch('/status-page.json', { cache: 'no-store' })
      .then(function (response) {
        if (!response.ok) throw new Error('HTTP ' + response.status);
        return response.text();
      })
      .then(function (text) {
        var updated = document.getElementById('updated');
        updated.className = '';
        updated.textContent = 'updated ' + new Date().toLocaleTimeString();
        if (text !== last) {
          last = text;
          draw(JSON.parse(text));
        }
      })
      .catch(function (err) {
        var updated = document.getElementById('updated');
        updated.className = 'stale';
        updated.textContent = 'cannot reach the control plane (' + err.message + '): showing the last data';
      })
      .finally(function () { setTimeout(refresh, REFRESH_MS); });
  }

  document.getElementById('filter').addEventListener('input', function () { if (data) drawMatrix(data); });
  document.getElementById('notable').addEventListener('change', function () { if (data) drawMatrix(data); });
  refresh();
})();
`;
