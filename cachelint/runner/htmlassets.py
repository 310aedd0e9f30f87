"""The HTML report's inline CSS and JavaScript (runner/htmlreport.py).

The page is whole without the script: every scenario is in the markup, the search box and the
status filter are `hidden` until the script shows them, and a <noscript> line says so. The
script reads no data but the page's own text (`textContent`, never `innerHTML`), so nothing from a
results file can run; the page's Content-Security-Policy forbids every fetch besides.

Search and filter must answer in a page of 20,000 scenarios: the scenarios' text is lowered once,
on the first search, and each keystroke is one pass that sets `hidden` only where it changes.
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
.tag{display:inline-block;font-size:.75em;border-radius:10px;padding:0 .45rem;margin-left:.3rem;
background:#fff1e5;color:#953800;border:1px solid #ffd8b5}
.msg{border-left:3px solid #bbb;margin:.3rem 0;padding:.1rem .5rem}
.msg .role{font-size:.8em;text-transform:uppercase;color:#555}
.msg.system{border-color:#888}.msg.user{border-color:#2a6fdb}.msg.assistant{border-color:#176b2c}
.msg.tool{border-color:#8a6d00}
body.failed-only details.scenario.passed,body.failed-only .group.all-passed{display:none}
[hidden]{display:none!important}
.meta{color:#57606a;font-size:.9em}svg{vertical-align:middle}
.note{margin:.2rem 0}
""".strip()

JS = """
(function () {
  var body = document.body;
  var tools = document.getElementById('tools');
  var search = document.getElementById('search');
  var count = document.getElementById('shown-count');
  var scenarios = Array.prototype.slice.call(document.querySelectorAll('details.scenario'));
  var groups = Array.prototype.slice.call(document.querySelectorAll('section.group'));
  var rows = Array.prototype.slice.call(document.querySelectorAll('table.matrix tr.row'));
  var texts = null;
  tools.hidden = false;
  function status() {
    var checked = document.querySelector('input[name="status"]:checked');
    return checked ? checked.value : 'all';
  }
  function wanted(s, st) {
    if (st === 'all') { return true; }
    return s.classList.contains(st);
  }
  function apply() {
    var query = search.value.trim().toLowerCase();
    var st = status();
    if (query && texts === null) {
      texts = scenarios.map(function (s) { return s.textContent.toLowerCase(); });
    }
    var shown = 0;
    for (var i = 0; i < scenarios.length; i++) {
      var s = scenarios[i];
      var ok = wanted(s, st) && (!query || texts[i].indexOf(query) !== -1);
      if (s.hidden === ok) { s.hidden = !ok; }
      if (ok) { shown++; }
    }
    for (var g = 0; g < groups.length; g++) {
      var empty = groups[g].querySelector('details.scenario:not([hidden])') === null;
      if (groups[g].hidden !== empty) { groups[g].hidden = empty; }
    }
    for (var r = 0; r < rows.length; r++) {
      var keep = !query || rows[r].getAttribute('data-search').indexOf(query) !== -1;
      if (rows[r].hidden === keep) { rows[r].hidden = !keep; }
    }
    body.classList.toggle('failed-only', st === 'failed');
    count.textContent = shown + ' of ' + scenarios.length + ' scenarios shown';
  }
  search.addEventListener('input', apply);
  document.querySelectorAll('input[name="status"]').forEach(function (box) {
    box.addEventListener('change', apply);
  });
  var fromHash = document.getElementById('status-' + location.hash.slice(1));
  if (fromHash) { fromHash.checked = true; }
  apply();
})();
""".strip()
