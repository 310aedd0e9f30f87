"""The HTML report's inline CSS and JavaScript (runner/htmlreport.py).

The page is whole without the script: every scenario is in the markup, the search box and the
status filter are `hidden` until the script shows them, and a <noscript> line says so. The
script reads no data but the page's own text (`textContent`); the one markup it parses is a passed
trial's, kept as text in <noscript> by the renderer (runner/htmlscenario.py `deferred`), escaped
as everywhere else, and parsed in a <template> (inert) when its scenario is opened into the very
elements the parser makes of it with JavaScript off. The page's Content-Security-Policy forbids
every fetch besides.

Search and filter must answer in a page of 20,000 scenarios (benchmarks/bench_html.py):
- the status filter is one class on <body> that CSS rules read (`body.failed-only
  .scenario:not(.failed)`), never a write per scenario;
- the search index is one lowercased string per scenario in an array, built as the script starts,
  before the search box is shown (built at the first key instead, it made that key the slowest);
  a passed trial's part is read from its <noscript> text, tags dropped and entities decoded;
- one pass over the scenarios, tenant by tenant, answers the search and the filter together: a
  key that extends the query tests only the scenarios still shown; a tenant with nothing shown
  is hidden whole (one attribute) and its scenarios' attributes are written only when it is
  shown again; elsewhere a scenario's `hidden` changes only when its match does (the attribute,
  not a class: no `classList` object is made per scenario);
- keys typed within one frame are answered once, in that frame (requestAnimationFrame);
- which groups are empty and how many scenarios are shown are counted in the pass, not read
  back from the page;
- `content-visibility:auto` lets the browser lay out only the sections and scenarios on screen;
- a hidden scenario, tenant or agent (and one the status filter leaves out) is collapsed, not
  `display:none`: `content-visibility:hidden` at no height keeps its boxes and styles, where
  `display:none` destroyed them (and walked its every node) to build them again at the next key;
- a passed scenario is a <div> with a button line, not a <details> (a shadow tree each:
  runner/htmlscenario.py FRAMES), and its trials' elements are made only when it is opened
  (<noscript> above): a page of 20,000 scenarios holds a quarter of the garbage-collected heap it
  did (40 MB, was 185 MB), and V8's major garbage collection, which traces it all and landed in
  one of the first keys after a load, takes a fraction of the time.
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
.scenario{border:1px solid var(--line);border-radius:6px;margin:.35rem 0;
padding:.35rem .7rem}
.scenario.failed{border-left:4px solid var(--bad)}
.scenario.passed{border-left:4px solid var(--ok)}
details.scenario>summary{cursor:pointer}
div.scenario>button{all:unset;display:block;cursor:pointer}
div.scenario>button:focus-visible{outline:2px solid #54aeff}
@media (scripting:enabled){div.scenario>button::before{content:"▸ "}
div.scenario.open>button::before{content:"▾ "}div.scenario:not(.open)>:not(button){display:none}}
details.more>summary{cursor:pointer;color:#57606a;font-size:.85em}
.scenario{content-visibility:auto;contain-intrinsic-size:auto 2.4rem}
section.tenant{content-visibility:auto}
.scenario>p,[data-testid=call],summary small,.scenario>button small{color:#57606a;
font-size:.9em;margin:.2rem 0}
.scenario>p{margin:.3rem 0}
.tag{display:inline-block;font-size:.75em;border-radius:10px;padding:0 .45rem;margin-left:.3rem;
background:#fff1e5;color:#953800;border:1px solid #ffd8b5}
[data-role]{border-left:3px solid #bbb;margin:.3rem 0;padding:.1rem .5rem}
[data-role]::before{content:attr(data-role) attr(data-note);display:block;font-size:.8em;
text-transform:uppercase;color:#555}
[data-role=system]{border-color:#888}[data-role=user]{border-color:#2a6fdb}
[data-role=assistant]{border-color:#176b2c}[data-role=tool]{border-color:#8a6d00}
.shared{background:var(--soft)}
[hidden]{display:none!important}
#hierarchy .scenario[hidden],#hierarchy section[hidden],
body.failed-only .scenario:not(.failed),body.failed-only .group.all-passed,
body.regressed-only .scenario:not(.regressed),
body.missed-only .scenario:not(.missed){display:block!important;
content-visibility:hidden!important;contain-intrinsic-size:0 0!important;margin:0!important;
padding:0!important;border:0!important}
.meta{color:#57606a;font-size:.9em}svg{vertical-align:middle}
.note{margin:.2rem 0}
""".strip()

# The re-record review's rules (reviewviews: a section of this page with --compare, or a page of
# its own).
REVIEW_CSS = """
table.answers{width:100%;table-layout:fixed}table.answers td{width:50%}
table.answers tr.same td{color:#555}
del{background:#ffd7d5;text-decoration:line-through}ins{background:#ccffd8;text-decoration:none}
.change{margin:.4rem 0 .8rem}details.reviewed{border:1px solid #ddd;border-radius:4px;
margin:.3rem 0;padding:.3rem .6rem}details.reviewed>summary{cursor:pointer}
""".strip()

JS = """
(function () {
  var body = document.body;
  var search = document.getElementById('search');
  var count = document.getElementById('shown-count');
  var hierarchy = document.getElementById('hierarchy');
  var scenarios = Array.prototype.slice.call(document.querySelectorAll('#hierarchy .scenario'));
  var rows = Array.prototype.slice.call(document.querySelectorAll('table.matrix tr.row'));
  var n = scenarios.length;
  // The scenarios come tenant by tenant: each run of them under one section is a part, and
  // the agent's section holds its tenants' parts.
  var parts = [];
  var agents = [];
  for (var i = 0; i < n; i++) {
    var section = scenarios[i].parentNode;
    var part = parts[parts.length - 1];
    if (part && part.el === section) { part.to = i + 1; continue; }
    var outer = section.parentNode;
    var agent = agents[agents.length - 1];
    if (!agent || agent.el !== outer) {
      agent = {el: outer, empty: 0, shown: 0, group: outer.classList.contains('group')};
      agents.push(agent);
    }
    parts.push({el: section, agent: agent, from: i, to: i + 1, empty: 0});
  }
  var marks = scenarios.map(function (s) { return ' ' + s.className + ' '; });
  var ENTITIES = {'&lt;': '<', '&gt;': '>', '&quot;': '"', '&#x27;': "'", '&amp;': '&'};
  function entity(m) { return ENTITIES[m]; }
  function shown(s) {  // a scenario's text as the page shows it (a <noscript>: as it would)
    var all = '';
    var walk = document.createTreeWalker(s, NodeFilter.SHOW_TEXT);
    for (var t = walk.nextNode(); t; t = walk.nextNode()) {
      all += t.parentNode.nodeName !== 'NOSCRIPT' ? t.data
        : t.data.replace(/<[^>]*>/g, '').replace(/&(?:lt|gt|quot|#x27|amp);/g, entity);
    }
    return all;
  }
  var matched = new Uint8Array(n).fill(1);
  var hidden = new Uint8Array(n);  // the scenario's `hidden`, as last written
  // One lowercased text per scenario, built before the search box is shown: the first key
  // then costs what every other key does.
  var texts = scenarios.map(function (s) {
    return (s.id.slice(2) + ' ' + shown(s)).toLowerCase();
  });
  var last = '';
  var queued = false;
  document.getElementById('tools').hidden = false;
  function status() {
    var checked = document.querySelector('input[name="status"]:checked');
    return checked ? checked.value : 'all';
  }
  function tenant(p, query, narrower, mark) {  // a tenant's scenarios: how many are shown
    var shown = 0;
    for (var i = p.from; i < p.to; i++) {
      if (query !== last && !(narrower && !matched[i])) {
        matched[i] = !query || texts[i].indexOf(query) !== -1 ? 1 : 0;
      }
      if (matched[i] && (mark === ' all ' || marks[i].indexOf(mark) !== -1)) { shown++; }
    }
    // A section with nothing shown is hidden whole; its scenarios' attributes wait until it
    // is shown again, so a key that hides whole tenants writes one attribute per tenant.
    for (var j = shown ? p.from : p.to; j < p.to; j++) {
      if (hidden[j] === matched[j]) {
        hidden[j] = 1 - matched[j];
        scenarios[j].hidden = !matched[j];
      }
    }
    var none = shown ? 0 : 1;
    if (none !== p.empty) { p.empty = none; p.el.hidden = !!none; }
    return shown;
  }
  function apply() {
    queued = false;
    var query = search.value.trim().toLowerCase();
    var st = status();
    var narrower = last !== '' && query.indexOf(last) !== -1;
    var mark = ' ' + st + ' ';
    var shown = 0;
    var filter = st === 'all' ? '' : st + '-only';
    if (body.className !== filter) { body.className = filter; }
    for (var a = 0; a < agents.length; a++) { agents[a].shown = 0; }
    for (var k = 0; k < parts.length; k++) {
      var got = tenant(parts[k], query, narrower, mark);
      parts[k].agent.shown += got;
      shown += got;
    }
    last = query;
    for (var g = 0; g < agents.length; g++) {
      var none = agents[g].shown ? 0 : 1;
      if (none !== agents[g].empty && agents[g].group) {
        agents[g].empty = none;
        agents[g].el.hidden = !!none;
      }
    }
    for (var r = 0; r < rows.length; r++) {
      var keep = !query || rows[r].getAttribute('data-search').indexOf(query) !== -1;
      if (rows[r].hidden === keep) { rows[r].hidden = !keep; }
    }
    count.textContent = shown + ' of ' + n + ' scenarios shown';
  }
  function later() {  // keys typed within one frame are answered once, before it is drawn
    if (!queued) { queued = true; requestAnimationFrame(apply); }
  }
  function unfold(kept) {  // a passed trial's elements, from its <noscript> (see the top)
    for (var k = kept.length - 1; k >= 0; k--) {
      var made = document.createElement('template');
      made.innerHTML = kept[k].textContent;
      var into = kept[k].parentNode;
      if (into.nodeName === 'P') {  // where the parser put it, the block goes after the line
        into.parentNode.insertBefore(made.content, into.nextSibling);
        into.removeChild(kept[k]);
      } else {
        into.replaceChild(made.content, kept[k]);
      }
    }
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
        unfold(e.target.querySelectorAll('noscript'));
        fill(e.target.querySelectorAll('a.same'));
      }
    }, true);
    hierarchy.addEventListener('click', function (e) {  // a passed scenario's line
      var line = e.target.closest('div.scenario>button');
      if (!line) { return; }
      var s = line.parentNode;
      var open = s.classList.toggle('open');
      line.setAttribute('aria-expanded', open ? 'true' : 'false');
      if (open) {
        unfold(s.querySelectorAll('noscript'));
        fill(s.querySelectorAll('a.same'));
      }
    });
  }
  search.addEventListener('input', later);
  document.querySelectorAll('input[name="status"]').forEach(function (box) {
    box.addEventListener('change', later);
  });
  var fromHash = document.getElementById('status-' + location.hash.slice(1));
  if (fromHash) { fromHash.checked = true; }
  unfold(document.querySelectorAll('details.scenario[open] noscript'));
  apply();
  window.addEventListener('load', function () {
    (window.requestIdleCallback || setTimeout)(function () {
      fill(document.querySelectorAll('details.scenario[open] a.same'));
    });
  });
})();
""".strip()
