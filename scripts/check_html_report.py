#!/usr/bin/env python3
"""Browser check of the HTML batch report: render a sample, open it in headless Chromium.

Why a script and not a test: CI has no browser. This renders a realistic report (real
proofs of a few catalogue cases, plus a hand-made disagreement and a failed case), takes
full-page screenshots (unfiltered, and filtered through the URL hash) and dumps the DOM
after the page's script ran, to check that the table rendered and the filter works.

    python scripts/check_html_report.py [--out DIR] [--records FILE] [--all]

``--records FILE`` caches the proof records (JSON) so a second run skips the proofs;
``--all`` proves the first case of every covered op (slow) instead of the sample.
Exit 0 when every check passes, 1 when one fails, 2 when no Chromium is installed.
"""
from __future__ import annotations

import argparse
import copy
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = ["reshape_basic", "floor_basic", "topk_values_indices", "conv2d_bias",
          "gather_index_select", "where_bool_condition", "concat_three", "split_sizes",
          "hardmax_last", "mod_fmod_float", "gridsample_bilinear", "layernormalization_affine",
          "reversesequence_time_major", "attention_float_mask", "clip_min_only"]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def prove_records(names: list[str] | None) -> list[dict]:
    from torch_prover.cases import all_cases
    from torch_prover.engine.prove import prove_case
    cases = all_cases()
    if names is None:  # --all: first case of each op
        seen: dict[str, object] = {}
        for c in cases:
            seen.setdefault(c.op, c)
        chosen = list(seen.values())
    else:
        by_name = {c.name: c for c in cases}
        chosen = [by_name[n] for n in names if n in by_name]
    records = []
    for i, case in enumerate(chosen, 1):
        print(f"[{i}/{len(chosen)}] proving {case.op}/{case.name}", file=sys.stderr)
        try:
            records.append(prove_case(case).record())
        except Exception as e:  # noqa: BLE001 - a failed case is part of the report
            records.append({"format": 1, "op": case.op, "case": case.name, "status": "error",
                            "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                            "parameters": []})
    return records


def hand_made(records: list[dict]) -> list[dict]:
    """A disagreement nobody declared, and a case that failed to run."""
    extra = []
    base = next((r for r in records if r.get("op") == "TopK" and r.get("parameters")), None)
    if base is not None:
        fake = copy.deepcopy(base)
        fake["case"] = "topk_handmade_disagreement"
        fake["status"] = "disagree"
        for p in fake["parameters"]:
            if p["io"] == "output" and p["index"] == 1:
                p.update(tag="differentiable", verdict="disagree",
                         reason="output 1 is int64 & cannot carry a gradient, but the schema says "
                                "differentiable (hand-made for the <report> check)")
        extra.append(fake)
    extra.append({"format": 1, "op": "Einsum", "case": "einsum_handmade_failure",
                  "status": "error", "parameters": [],
                  "error": "export failed: torch.onnx.export raised UnsupportedOperatorError "
                           "for aten::einsum with <script>alert('x')</script> in its message"})
    return extra


def op_status(recs: list[dict]) -> tuple[str, str]:
    """Sample-only aggregation (batch.py owns the real one)."""
    verdicts = [p["verdict"] for r in recs for p in r.get("parameters") or ()]
    names = ", ".join(r["case"] for r in recs)
    if "disagree" in verdicts:
        bad = [f"{p['io']} {p['index']} {p['name']}" for r in recs for p in r["parameters"]
               if p["verdict"] == "disagree"]
        return "disagrees", f"{', '.join(sorted(set(bad)))} disagree with the schema ({names})"
    if all(r.get("status") == "error" for r in recs):
        return "error", recs[0].get("error", "")
    if any(r.get("invalid") for r in recs):
        return "invalid", next(r["invalid"] for r in recs if r.get("invalid"))
    if "proposed" in verdicts:
        return "proposed", f"unknown tags; evidence proposes them ({names})"
    if verdicts and all(v == "inconclusive" for v in verdicts):
        return "inconclusive", f"nothing decided ({names})"
    return "proved", f"every exercised tag agrees ({names})"


def build_report(records: list[dict], wall: float) -> dict:
    from torch_prover.cases import all_missing
    from torch_prover.tags.schema import all_ops
    by_op: dict[str, list[dict]] = {}
    for r in records:
        by_op.setdefault(r["op"], []).append(r)
    missing = all_missing()
    ops = []
    for op in all_ops():
        if op in by_op:
            st, why = op_status(by_op[op])
        elif op in missing:
            st, why = "missing", f"{missing[op][0]}: {missing[op][1]}"
        else:
            st, why = "missing", "not run in this sample"
        ops.append({"op": op, "status": st, "reason": why})
    params = {v: 0 for v in ("agree", "disagree", "proposed", "inconclusive")}
    for r in records:
        for p in r.get("parameters") or ():
            params[p["verdict"]] += 1
    return {"format": 1, "summary": {
        "ops_total": len(ops), "ops_covered": len(by_op), "cases": len(records),
        "parameters": params, "invalid_cases": sum(bool(r.get("invalid")) for r in records),
        "failed_cases": sum(r.get("status") == "error" for r in records),
        "wall_time_s": round(wall, 1)}, "cases": records, "ops": ops}


def find_browser() -> str | None:
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def chromium(browser: str, url: str, *extra: str, timeout: int = 90) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="tp-chromium-")
    try:
        return subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars",
             "--virtual-time-budget=3000", *extra, url],
            capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def _op_rows(dom: str) -> list[dict]:
    """Attributes of every <tbody class="op"> (one per op) in the dumped DOM."""
    from html.parser import HTMLParser
    rows: list[dict] = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "tbody" and a.get("class") == "op":
                rows.append(a)
    P().feed(dom)
    return rows


def check_dom(dom: str, report: dict, status: str | None) -> list[str]:
    problems = []
    if 'data-js="on"' not in dom:
        problems.append("the page's script did not run (no data-js=on on <body>)")
    rows = _op_rows(dom)
    if len(rows) != len(report["ops"]):
        problems.append(f"{len(rows)} op rows rendered, expected {len(report['ops'])}")
    visible = [r for r in rows if "hidden" not in r]
    if status:
        wrong = [r for r in visible if r.get("data-status") != status]
        want = sum(o["status"] == status for o in report["ops"])
        if wrong or len(visible) != want:
            problems.append(f"filter status={status}: {len(visible)} rows visible "
                            f"({len(wrong)} of another status), expected {want}")
    elif len(visible) != len(rows):
        problems.append(f"unfiltered page hides {len(rows) - len(visible)} rows")
    if dom.count("<svg") < len({r['op'] for r in report['cases'] if r.get('parameters')}):
        problems.append("fewer SVG diagrams than covered ops")
    return problems


# Appended to a copy of the page (never to the page written for readers): measures what only
# a browser knows -- layout, computed colours, where following the navigation's link lands --
# and leaves it as JSON in <pre id="tp-probe"> for --dump-dom.
PROBE = """<script>(function(){
  var out={}, sec=document.getElementById('versions');
  out.section=!!sec;
  if(sec){
    var st=getComputedStyle(sec), r=sec.getBoundingClientRect();
    out.visible=st.display!=='none'&&st.visibility!=='hidden'&&r.height>0&&r.width>0;
    out.inMain=!!sec.closest('main');
    var link=document.querySelector('header nav a[href="#versions"]');
    out.navLink=!!link;
    if(link){link.click(); out.afterClickTop=sec.getBoundingClientRect().top;
             out.scrollY=window.scrollY; out.hash=location.hash;}
    var lg=sec.querySelector('.vlegend');
    out.legend=lg?[].map.call(lg.querySelectorAll('.vc'),function(e){return e.textContent;}):[];
    out.tables=sec.querySelectorAll('table.vtable').length;
    out.cells={};
    [].forEach.call(sec.querySelectorAll('td.vc'),function(td){
      var k=[].filter.call(td.classList,function(c){return c.indexOf('vc-')===0;})[0];
      if(!(k in out.cells)){var cs=getComputedStyle(td), b=td.getBoundingClientRect();
        out.cells[k]={bg:cs.backgroundColor,color:cs.color,w:b.width,h:b.height,
                      text:td.textContent};}
    });
  }
  var pre=document.createElement('pre'); pre.id='tp-probe';
  pre.textContent=JSON.stringify(out); document.body.appendChild(pre);
})();</script>"""


def probe_copy(page: str) -> str:
    """The page with PROBE run after its own script (a copy for the check only)."""
    at = page.rindex("</body>")
    return page[:at] + PROBE + page[at:]


def section_copy(page: str, keep: str) -> str:
    """The page with every section of <main> but ``keep`` hidden, for a screenshot of that
    section under the header (headless Chromium paints a page scrolled 10,000 px down
    blank)."""
    at = page.index("</head>")
    return page[:at] + f"<style>main>section:not(#{keep}){{display:none}}</style>" + page[at:]


def probe_result(dom: str) -> dict | None:
    """What PROBE measured, read back from the dumped DOM (None: it did not run)."""
    import html
    import re
    m = re.search(r'<pre id="tp-probe">(.*?)</pre>', dom, flags=re.S)
    return json.loads(html.unescape(m.group(1))) if m else None


TRANSPARENT = ("rgba(0, 0, 0, 0)", "transparent", "")


def check_versions(probe: dict | None, report: dict) -> list[str]:
    """The per-version table of a --versions report: in the page, visible, reached from the
    navigation, its legend complete, its cells coloured by verdict (a disagreement's cell
    not coloured like an agreement's)."""
    from torch_prover.output.html_versions import CODES
    from torch_prover.output.versions_report import notable
    section = report.get("versions")
    if not section:
        return []
    if probe is None:
        return ["the probe script did not run"]
    if not probe.get("section"):
        return ["no <section id=versions> in the page"]
    problems = []
    if not probe.get("visible"):
        problems.append("the versions section is not visible (no size, or hidden)")
    if not probe.get("inMain"):
        problems.append("the versions section is outside <main>")
    if not probe.get("navLink"):
        problems.append("no link to #versions in the header's navigation")
    elif probe.get("hash") != "#versions" or abs(probe.get("afterClickTop", 1e9)) > 2:
        problems.append(f"following the navigation's link lands {probe.get('afterClickTop')} px "
                        f"from the section (hash {probe.get('hash')!r})")
    missing = [code for code, _, _ in CODES if code not in probe.get("legend", [])]
    if missing:
        problems.append(f"the legend lacks the codes {missing}")
    want = sum(bool(notable(o)) for o in section["ops"])
    if probe.get("tables") != want:
        problems.append(f"{probe.get('tables')} version tables, expected {want}")
    cells = probe.get("cells") or {}
    verdicts = {c["verdict"] for o in section["ops"] for e in o["versions"] for c in e["cells"]}
    for verdict in ("agree", "disagree", "proposed"):
        if verdict not in verdicts:
            continue
        cell = cells.get(f"vc-{verdict}")
        if cell is None:
            problems.append(f"no {verdict} cell in the table")
        elif cell["bg"] in TRANSPARENT or not (cell["w"] > 0 and cell["h"] > 0):
            problems.append(f"a {verdict} cell is not coloured or not laid out: {cell}")
    if "vc-agree" in cells and "vc-disagree" in cells and \
            cells["vc-agree"]["bg"] == cells["vc-disagree"]["bg"]:
        problems.append("disagree and agree cells have the same colour")
    return problems


def present_status(report: dict) -> str:
    """The most urgent op status the report holds: the filter is checked on it (a report
    whose every disagreement is declared has no 'disagrees' op to filter on)."""
    from torch_prover.output.batch_report import OP_STATUSES
    held = {o["status"] for o in report["ops"]}
    return next(s for s in OP_STATUSES if s in held)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "torch_prover_html_check"))
    ap.add_argument("--records", help="JSON file caching the proof records (read if present)")
    ap.add_argument("--all", action="store_true", help="prove the first case of every covered op")
    ap.add_argument("--report", help="render this batch report JSON instead of a sample")
    args = ap.parse_args(argv)
    from torch_prover.output.html_report import render_html

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report:
        report = json.loads(Path(args.report).read_text())
    else:
        t0 = time.time()
        cache = Path(args.records) if args.records else None
        if cache and cache.exists():
            cached = json.loads(cache.read_text())
            records, wall = (cached["records"], cached["wall_time_s"]) if isinstance(cached, dict) \
                else (cached, 0.0)
        else:
            records = prove_records(None if args.all else SAMPLE)
            wall = time.time() - t0
            if cache:
                cache.write_text(json.dumps({"records": records, "wall_time_s": wall}, indent=1))
        report = build_report(records + hand_made(records), wall)
        (out / "report.json").write_text(json.dumps(report, indent=1))
    page = out / "report.html"
    page.write_text(render_html(report), encoding="utf-8")   # as verify-all writes it
    print(f"wrote {page}")

    browser = find_browser()
    if browser is None:
        print("no Chromium found: apt-get install -y chromium (the page itself is written)",
              file=sys.stderr)
        return 2
    problems = []
    # the top of the page as a maintainer first sees it; then the whole page (tall window)
    # filtered to the most urgent status through the URL hash; then the versions table
    status = present_status(report)
    views = [("report", "", None, 1800), (f"report_{status.replace(' ', '_')}",
                                          f"#status={status}", status, 6000)]
    if report.get("versions"):
        alone = out / "report_versions_only.html"
        alone.write_text(section_copy(page.read_text(encoding="utf-8"), "versions"),
                         encoding="utf-8")
        views.append(("report_versions", "", None, 2400))
    for name, frag, status, height in views:
        url = (alone if name == "report_versions" else page).resolve().as_uri() + frag
        shot = out / f"{name}.png"
        res = chromium(browser, url, f"--screenshot={shot}", f"--window-size=1400,{height}")
        if not shot.exists():
            problems.append(f"no screenshot for {url}: {res.stderr.strip()[-300:]}")
        else:
            print(f"screenshot {shot}")
        if name == "report_versions":
            continue
        dom = chromium(browser, url, "--dump-dom").stdout
        (out / f"{name}.dom.html").write_text(dom, encoding="utf-8")
        problems += [f"{name}: {p}" for p in check_dom(dom, report, status)]
    if report.get("versions"):
        probe = out / "report_probe.html"
        probe.write_text(probe_copy(page.read_text(encoding="utf-8")), encoding="utf-8")
        dom = chromium(browser, probe.resolve().as_uri(), "--dump-dom",
                       "--window-size=1400,1800").stdout
        result = probe_result(dom)
        print(f"versions probe: {json.dumps(result)[:600]}")
        problems += [f"versions: {p}" for p in check_versions(result, report)]
    else:
        print("versions table: not in this report (give --report of a verify-all --versions "
              "run to check it)")
    for p in problems:
        print(f"FAIL {p}", file=sys.stderr)
    print("browser check: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
