"""Annotate: keypress-to-next-pair latency in a real browser, keyboard widget (prefetch) vs simple buttons.

    python bench/annotate_latency.py [--presses 20] [--repeats 3] [--read-ms 800] [--standalone]

Starts ``streamlit run app.py`` (or ``pages/annotate.py`` alone with
``--standalone``) on 127.0.0.1 with a fresh annotation database of numbered
pairs, opens the Annotate page in headless Chromium and labels pairs by
keyboard (y / n / s in turn). For each keypress it measures, in the page,
the time from the key event (``event.timeStamp``) to the first frame painted
after the next pair's question is in the DOM (a MutationObserver, then
``requestAnimationFrame`` + ``setTimeout 0``). Between keypresses it waits
``--read-ms`` (an annotator reading the pair). Two interfaces, same run,
same server, fresh database each: ``keyboard`` (the next pairs are already
in the page; the label is saved in the background) and ``simple`` (Streamlit
buttons; the next pair comes with the server's rerun). For the keyboard
widget it also reports keypress-to-saved (the server's acknowledgement).
Prints one JSON object (medians, p90, ratio); progress on stderr. Timing
figures depend on the machine's load: run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

OBSERVER = """
(target) => {
  const L = (window.__lat = window.__lat || {out: [], saved: [], t0: null, tSave: null});
  if (!L.installed) {
    L.installed = true;
    window.addEventListener('keydown', (e) => { L.t0 = e.timeStamp; L.tSave = e.timeStamp; }, true);
    const check = () => {
      if (L.t0 !== null && L.target && document.body.textContent.includes(L.target)) {
        const t0 = L.t0; L.t0 = null;
        requestAnimationFrame(() => setTimeout(() => L.out.push(performance.now() - t0), 0));
      }
      const box = document.querySelector('[data-testid="berds-annotator"]');
      if (L.tSave !== null && box && box.dataset.pending === '0' && L.t0 === null) {
        L.saved.push(performance.now() - L.tSave); L.tSave = null;
      }
    };
    new MutationObserver(check).observe(document.body, {subtree: true, childList: true, characterData: true,
                                                         attributes: true, attributeFilter: ['data-pending']});
  }
  L.target = target;
}
"""


def _db(path: Path, n: int) -> None:
    from berds_core.lab.store import Pair, Store

    with Store(path) as s:
        s.add_pairs([Pair(f"b{i}", f"Bench question number {i}?", f"Passage {i}: " + "words of the passage " * 12,
                          f"Perspective {i}", title=f"Title {i}") for i in range(n)])
        s.tasks.create("bench", {"bench": [f"b{i}" for i in range(n)]})


def run_mode(url: str, mode: str, presses: int, read_ms: int, log) -> dict:
    from browser_harness import chromium_page, wait_for_app, wait_idle

    with chromium_page() as page:
        page.goto(url)
        wait_for_app(page, 300_000)
        page.get_by_text("Bench question number 0?", exact=True).first.wait_for(timeout=300_000)
        ready = '[data-testid="berds-annotator"]' if mode == "keyboard" else ".st-key-btn_yes button"
        page.locator(ready).wait_for(timeout=300_000)  # the key listeners are attached
        wait_idle(page)
        page.wait_for_timeout(500)
        keys = "yns"
        for i in range(presses):
            target = f"Bench question number {i + 1}?"
            page.evaluate(OBSERVER, target)
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press(keys[i % 3])
            page.wait_for_function("(n) => window.__lat.out.length >= n", arg=i + 1, timeout=120_000)
            page.wait_for_timeout(read_ms)
            if mode == "simple":
                wait_idle(page)
        if mode == "keyboard":
            page.wait_for_function("() => document.querySelector('[data-testid=\"berds-annotator\"]')"
                                   ".dataset.pending === '0'", timeout=120_000)
        out = page.evaluate("() => window.__lat")
    log(f"{mode}: {len(out['out'])} presses, median {statistics.median(out['out']):.1f} ms")
    return {"next_pair_ms": out["out"], "saved_ms": out.get("saved", [])}


def _p90(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))] if xs else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presses", type=int, default=20, help="keypresses per repeat and interface")
    ap.add_argument("--repeats", type=int, default=3, help="fresh database and browser per repeat")
    ap.add_argument("--read-ms", type=int, default=800, help="pause between keypresses (reading the pair)")
    ap.add_argument("--modes", default="keyboard,simple", help="interfaces to time (keyboard, simple)")
    ap.add_argument("--standalone", action="store_true", help="run pages/annotate.py alone instead of app.py")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    from browser_harness import skip_reason, streamlit_server

    reason = skip_reason()
    if reason:
        print(json.dumps({"error": reason}))
        return 2

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    results = {m: {"next_pair_ms": [], "saved_ms": []} for m in modes}
    tmp = Path(tempfile.mkdtemp(prefix="berds-annbench-"))
    started = time.time()
    for rep in range(args.repeats):
        for mode in modes:
            db = tmp / f"bench-{rep}-{mode}.db"
            _db(db, args.presses + 10)
            script = ROOT / ("pages/annotate.py" if args.standalone else "app.py")
            query = f"?annotator=bench&task=bench&ui={mode}"
            with streamlit_server(script, env={"BERDS_ANNOTATIONS_DB": str(db)}, timeout=300) as url:
                page_url = f"{url}/{query}" if args.standalone else f"{url}/annotate{query}"
                got = run_mode(page_url, mode, args.presses, args.read_ms, log)
            for k in got:
                results[mode][k] += got[k]
    summary = {"presses_per_mode": {m: len(results[m]["next_pair_ms"]) for m in modes}, "read_ms": args.read_ms,
               "app": "pages/annotate.py" if args.standalone else "app.py", "load_average": os.getloadavg(),
               "cpus": os.cpu_count(), "wall_s": round(time.time() - started, 1)}
    for m in modes:
        xs = results[m]["next_pair_ms"]
        summary[m] = {"median_ms": round(statistics.median(xs), 1), "p90_ms": round(_p90(xs), 1),
                      "min_ms": round(min(xs), 1), "max_ms": round(max(xs), 1)}
        if results[m]["saved_ms"]:
            summary[m]["saved_median_ms"] = round(statistics.median(results[m]["saved_ms"]), 1)
    if "keyboard" in summary and "simple" in summary:
        summary["simple_over_keyboard"] = round(summary["simple"]["median_ms"] / max(summary["keyboard"]["median_ms"], 1e-9), 1)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
