"""The HTML report's inline CSS and JavaScript (runner/htmlreport.py).

The page is whole without the script: every scenario is in the markup, the search box and the
status filter are `hidden` until the script shows them, and a <noscript> line says so. The
script reads no data but the page's own text (`textContent`, never `innerHTML`), so nothing from a
results file can run; the page's Content-Security-Policy forbids every fetch besides.

Search and filter must answer in a page of 20,000 scenarios (benchmarks/bench_html.py):
- the status filter is one class on <body> that CSS rules read (`body.failed-only
  details.scenario:not(.failed)`), never a write per scenario;
- the search index is one lowercased string per scenario in an array, built from the page's text
  while the browser is idle after loading (or at the first key, when that comes first); a key
  that extends the query tests only the scenarios still shown, and a scenario's class changes
  only when its match does;
- which groups are empty and how many scenarios are shown are counted in the arrays, not read
  back from the page;
- `content-visibility:auto` lets the browser lay out only the scenarios on screen.
A turn that links to a shared system text (runner/htmlscenario.py) is filled in with that text
when its scenario is opened.
"""

from __future__ import annotations

CSS = """
:root{--ok:#176b2c;--bad:#a4161a;--warn:#8a6d00;--line:#d0d7de;--soft:#f6f8fa;--ink:#1f2328}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:var(--ink);
background:#fff;line-height:1.4}
main{max-width:82rem;margin:0 auto;padding:1rem 2rem 3rem}
h1{font-size:1.5rem;margin:.2rem 0 .6rem}h2{font-size:1.15rem;margin:1.2rem 0 .4rem}
h3{font-size:1rem;margin:.8rem 0 .3rem}
table{border-collapse:collapse;margin:.4rem 0 1rem}
td,th{border:1px solid var(--line);padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
.pass{color:var(--ok);font-weight:bold}.fail{color:var(--bad);font-weight:bold}
.good{color:var(--ok)}.average{color:var(--warn)}.poor,.not-scored{color:var(--bad)}
pre{white-space:pre-wrap;word-break:break-word;margin:0;font-size:.88em}
.cards{display:flex;flex-wrap:wrap;gap:.6rem;margin:.6rem 0 1rem}
.card{border:1px solid var(--line);border-radius:8px;padding:.55rem .9rem;min-width:7.5rem;
background:var(--soft)}
.card .value{font-size:1.45rem;font-weight:700}.card .label{font-size:.8rem;color:#57606a;
text-transform:uppercase;letter-spacing:.03em}
.card.bad .value{color:var(--bad)}.card.ok .value{color:var(--ok)}
.tools{position:sticky;top:0;z-index:2;background:#fffe;border-bottom:1px solid var(--line);
padding:.5rem 0;display:flex;flex-wrap:wrap;gap:.8rem;align-items:center}
.tools input[type=search]{font:inherit;padding:.35rem .6rem;min-width:22rem;
border:1px solid #8c959f;border-radius:6px}
.tools fieldset{border:0;margin:0;padding:0;display:flex;gap:.2rem}
.tools label.status{border:1px solid var(--line);border-radius:6px;padding:.25rem .6rem;
cursor:pointer;user-select:none}
.tools label.status:has(input:checked){background:#ddf4ff;border-color:#54aeff}
.tools label.status input{margin:0 .3rem 0 0}
#shown-count{color:#57606a;font-size:.9em}
table.regressions td.now{color:var(--bad);font-weight:600}
details.scenario{border:1px solid var(--line);border-radius:6px;margin:.35rem 0;
padding:.35rem .7rem}
details.scenario.failed{border-left:4px solid var(--bad)}
details.scenario.passed{border-left:4px solid var(--ok)}
details.scenario>summary{cursor:pointer}
details.scenario{content-visibility:auto;contain-intrinsic-size:auto 2.4rem}
section.tenant{content-visibility:auto}
details.scenario>p,[data-testid=call],summary small{color:#57606a;font-size:.9em;margin:.2rem 0}
details.scenario>p{margin:.3rem 0}
.tag{display:inline-block;font-size:.75em;border-radius:10px;padding:0 .45rem;margin-left:.3rem;
background:#fff1e5;color:#953800;border:1px solid #ffd8b5}
[data-role]{border-left:3px solid #bbb;margin:.3rem 0;padding:.1rem .5rem}
[data-role]::before{content:attr(data-role) attr(data-note);display:block;font-size:.8em;
text-transform:uppercase;color:#555}
[data-role=system]{border-color:#888}[data-role=user]{border-color:#2a6fdb}
[data-role=assistant]{border-color:#176b2c}[data-role=tool]{border-color:#8a6d00}
.shared{background:var(--soft)}
body.failed-only details.scenario:not(.failed),body.failed-only .group.all-passed,
body.regressed-only details.scenario:not(.regressed),
body.missed-only details.scenario:not(.missed),.nomatch,.empty{display:none}
[hidden]{display:none!important}
.meta{color:#57606a;font-size:.9em}svg{vertical-align:middle}
.note{margin:.2rem 0}
""".strip()

JS = """
(function () {
  var body = document.body;
  var search = document.getElementById('search');
  var count = document.getElementById('shown-count');
  var hierarchy = document.getElementById('hierarchy');
  var scenarios = Array.prototype.slice.call(document.querySelectorAll('details.scenario'));
  var groups = Array.prototype.slice.call(document.querySelectorAll('section.group'));
  var rows = Array.prototype.slice.call(document.querySelectorAll('table.matrix tr.row'));
  var n = scenarios.length;
  var where = new Map(groups.map(function (g, i) { return [g, i]; }));
  var up = scenarios.map(function (s) {  // the tenant's and the agent's section
    return [where.get(s.parentNode), where.get(s.parentNode && s.parentNode.parentNode)];
  });
  var marks = scenarios.map(function (s) { return ' ' + s.className + ' '; });
  var matched = new Uint8Array(n).fill(1);
  var empty = new Uint8Array(groups.length);
  var texts = new Array(n);
  var built = 0;
  var last = '';
  var later = window.requestIdleCallback || function (f) {
    return setTimeout(function () { f({timeRemaining: function () { return 50; }}); }, 1);
  };
  document.getElementById('tools').hidden = false;
  function index(upTo) {
    for (; built < upTo; built++) {
      var s = scenarios[built];
      texts[built] = (s.id.slice(2) + ' ' + s.textContent).toLowerCase();
    }
  }
  function idle(deadline) {
    while (built < n && deadline.timeRemaining() > 3) { index(Math.min(n, built + 250)); }
    if (built < n) { later(idle); }
  }
  function status() {
    var checked = document.querySelector('input[name="status"]:checked');
    return checked ? checked.value : 'all';
  }
  function match(query) {
    if (query === last) { return; }
    index(query ? n : 0);
    var narrower = last !== '' && query.indexOf(last) !== -1;
    for (var i = 0; i < n; i++) {
      if (narrower && !matched[i]) { continue; }
      var ok = !query || texts[i].indexOf(query) !== -1 ? 1 : 0;
      if (ok !== matched[i]) { matched[i] = ok; scenarios[i].classList.toggle('nomatch', !ok); }
    }
    last = query;
  }
  function apply() {
    var query = search.value.trim().toLowerCase();
    var st = status();
    match(query);
    body.className = st === 'all' ? '' : st + '-only';
    var shown = 0;
    var per = new Uint32Array(groups.length);
    var mark = ' ' + st + ' ';
    for (var i = 0; i < n; i++) {
      if (matched[i] && (st === 'all' || marks[i].indexOf(mark) !== -1)) {
        shown++;
        if (up[i][0] !== undefined) { per[up[i][0]]++; }
        if (up[i][1] !== undefined) { per[up[i][1]]++; }
      }
    }
    for (var g = 0; g < groups.length; g++) {
      var none = per[g] === 0 ? 1 : 0;
      if (none !== empty[g]) { empty[g] = none; groups[g].classList.toggle('empty', !!none); }
    }
    for (var r = 0; r < rows.length; r++) {
      var keep = !query || rows[r].getAttribute('data-search').indexOf(query) !== -1;
      if (rows[r].hidden === keep) { rows[r].hidden = !keep; }
    }
    count.textContent = shown + ' of ' + n + ' scenarios shown';
  }
  function fill(links) {  // a shared system text, where a turn links to it
    for (var k = 0; k < links.length; k++) {
      var source = document.getElementById(links[k].getAttribute('href').slice(1));
      if (!source) { continue; }
      var pre = document.createElement('pre');
      pre.textContent = source.textContent;
      links[k].parentNode.replaceChild(pre, links[k]);
    }
  }
  if (hierarchy) {
    hierarchy.addEventListener('toggle', function (e) {
      if (e.target.open && e.target.classList.contains('scenario')) {
        fill(e.target.querySelectorAll('a.same'));
      }
    }, true);
  }
  search.addEventListener('input', apply);
  document.querySelectorAll('input[name="status"]').forEach(function (box) {
    box.addEventListener('change', apply);
  });
  var fromHash = document.getElementById('status-' + location.hash.slice(1));
  if (fromHash) { fromHash.checked = true; }
  apply();
  window.addEventListener('load', function () {
    later(function () {
      fill(document.querySelectorAll('details.scenario[open] a.same'));
      later(idle);
    });
  });
})();
""".strip()
