#!/usr/bin/python3
"""Opens a tandem report in headless Chromium and checks what a reader would see.

  browser_check.py --tandem TANDEM --case CASE --work DIR [--source-dir DIR]

Makes the report of CASE with TANDEM (a simulated run, a simulated comparison, a maxbatch
search, the checked-in real-run fixture, or a real run in a libtorch build), then opens it in
headless Chromium twice: once to read the page as drawn (--dump-dom), once for a screenshot.
It fails when the page logged anything to the console or caught an error while drawing, when a
chart region of the screenshot is blank, or when a number the tables or charts show differs from
the results JSON. Exit status 77 (ctest SKIP_RETURN_CODE) when Chromium is not installed.

Only the Python standard library and Debian's chromium: no Selenium, no DevTools client.
"""

import argparse
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
WINDOW = (1280, 2600)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def find_chromium():
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


# --- what tandem's page prints (src/report/assets/report.js) ---------------------------------

def fmt_bytes(value):
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    value = float(value)
    unit = 0
    while value >= 1024 and unit + 1 < len(units):
        value /= 1024
        unit += 1
    return "%d B" % round(value) if unit == 0 else "%.2f %s" % (value, units[unit])


def fmt_fixed(value, digits):
    return "-" if value is None else "%.*f" % (digits, value)


def fmt_seconds(value):
    return "-" if value is None else "%.3f s" % value


# --- the page --------------------------------------------------------------------------------

class Page(html.parser.HTMLParser):
    """Collects the body's attributes, every table cell by (table, row, field), and SVG bars."""

    def __init__(self):
        super().__init__()
        self.body = {}
        self.cells = {}
        self.bars = []
        self.facts = {}
        self.states = set()  # (job, state) of every schedule path drawn
        self._table = None
        self._row = None
        self._cell = None
        self._fact = None
        self._text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag in ("table", "dl"):
            self._table = a.get("id")
        elif tag == "tr":
            self._row = a.get("data-row")
        elif tag == "td" and "data-field" in a:
            self._cell = (self._table, self._row, a["data-field"])
            self._text = []
        elif tag == "dd" and "data-field" in a:
            self._fact = (self._table, a["data-field"])
            self._text = []
        elif tag == "rect" and "data-series" in a:
            self.bars.append(a)
        elif tag == "path" and "data-state" in a:
            self.states.add((a.get("data-job"), a["data-state"]))

    def handle_data(self, data):
        if self._cell or self._fact:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell:
            self.cells[self._cell] = "".join(self._text)
            self._cell = None
        elif tag == "dd" and self._fact:
            self.facts[self._fact] = "".join(self._text)
            self._fact = None


def chromium_run(chromium, profile, args, url):
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
               "--force-device-scale-factor=1", "--hide-scrollbars",
               "--window-size=%d,%d" % WINDOW] + args + [url]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    if console:
        fail("the page wrote to the console:\n" + "\n".join(console))
    if result.returncode != 0:
        fail("chromium exited with %d:\n%s" % (result.returncode, result.stderr[-2000:]))
    return result.stdout


def read_png(path):
    """An 8-bit RGB or RGBA PNG (what Chromium writes) as (width, height, rows of RGB tuples)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 3
    while pos < len(raw):
        length, kind = struct.unpack(">I4s", raw[pos:pos + 8])
        chunk = raw[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or color not in (2, 6) or interlace:
                fail("unexpected PNG format (depth %d, colour type %d)" % (depth, color))
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
    data = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = data[start], bytearray(data[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            upleft = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - upleft
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upleft)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else upleft)
                line[i] = (line[i] + pred) & 255
        rows.append(line)
        previous = line
    return width, height, rows, channels


def check_chart_pixels(png, charts):
    width, height, rows, channels = read_png(png)
    for chart in charts:
        x0, y0 = max(0, chart["x"]), max(0, chart["y"])
        x1, y1 = min(width, chart["x"] + chart["w"]), min(height, chart["y"] + chart["h"])
        if x1 - x0 < 50 or y1 - y0 < 30:
            fail("chart %s is off the screenshot or too small: %s" % (chart["id"], chart))
        inked, colours, total = 0, set(), 0
        for y in range(y0, y1, 2):
            line = rows[y]
            for x in range(x0, x1, 2):
                r, g, b = line[x * channels], line[x * channels + 1], line[x * channels + 2]
                total += 1
                if min(r, g, b) < 235:  # not white nor the plot's near-white background
                    inked += 1
                colours.add((r >> 4, g >> 4, b >> 4))
        share = inked / total
        print("chart %s: %.1f%% inked, %d colours" % (chart["id"], 100 * share, len(colours)))
        if share < 0.04 or len(colours) < 4:
            fail("chart %s looks blank (%.1f%% inked, %d colours)" % (chart["id"], 100 * share,
                                                                       len(colours)))


# --- the cases -------------------------------------------------------------------------------

def run(command):
    print("+ " + " ".join(command))
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    print(result.stdout[-3000:], result.stderr[-3000:])
    if result.returncode not in (0, 3):
        fail("exit status %d" % result.returncode)


def make_case(args, work):
    """Runs tandem for the case; returns (report, results JSON path, charts expected)."""
    src = args.source_dir
    report = os.path.join(work, args.case + ".html")
    results = os.path.join(work, args.case + ".json")
    timeline = os.path.join(work, args.case + ".csv")
    if args.case == "sim-run":
        run([args.tandem, "sim", os.path.join(src, "examples/paper/rhn_gnmt.toml"), "--gpu",
             "2080ti", "--policy", "scrooge", "--json", results, "--report", report])
        return report, results, ["memory-chart", "schedule-chart"]
    if args.case == "sim-plans":
        # Two jobs that run under tensile's plans and wait for memory mid-iteration.
        run([args.tandem, "sim", os.path.join(src, "examples/paper/nasnet_gnmt.toml"), "--gpu",
             "2080ti", "--policy", "scrooge", "--budget", "5GiB", "--policy-planner", "tensile",
             "--json", results, "--report", report])
        return report, results, ["memory-chart", "traffic-chart", "schedule-chart"]
    if args.case == "sim-compare":
        run([args.tandem, "sim", os.path.join(src, "examples/paper/rhn_gnmt.toml"), "--gpu",
             "2080ti", "--compare", "temporal,scrooge,spatial", "--sweep-batch", "64,128",
             "--json", results, "--report", report])
        return report, results, ["throughput-chart", "makespan-chart"]
    if args.case == "maxbatch":
        run([args.tandem, "maxbatch", os.path.join(src, "tests/cli/maxbatch_sim.toml"), "--sim",
             "--gpu", "v100", "--policy", "scrooge", "--json", results])
        run([args.tandem, "report", results, "--out", report])
        return report, results, ["maxbatch-chart", "maxbatch-throughput-chart"]
    if args.case == "real-run-fixture":
        fixture = os.path.join(src, "tests/report/fixtures/two_jobs_real")
        run([args.tandem, "report", fixture + ".json", "--timeline", fixture + ".csv", "--out",
             report])
        return report, fixture + ".json", ["memory-chart", "schedule-chart"]
    if args.case == "real-run":
        # A budget near the jobs' peaks, so that their memory fills a visible share of the chart.
        run([args.tandem, "run", os.path.join(src, "tests/cli/tiny.toml"), "--quiet",
             "--budget", "8MiB", "--json", results, "--timeline", timeline, "--report", report])
        return report, results, ["memory-chart", "schedule-chart"]
    fail("unknown case " + args.case)


def batch_label(run_result):
    batches = {job.get("batch_size", 0) for job in run_result["jobs"]}
    return str(batches.pop()) if len(batches) == 1 else "file"


def check_numbers(page, results):
    checked = 0

    def expect(key, want, where):
        nonlocal checked
        got = where.get(key)
        if got != want:
            fail("%s shows %r, the JSON says %r" % (key, got, want))
        checked += 1

    if isinstance(results, list):  # a comparison
        for r in results:
            row = batch_label(r) + "/" + r["policy"]
            expect(("runs-table", row, "aggregate_samples_per_s"),
                   fmt_fixed(r["aggregate_samples_per_s"], 1), page.cells)
            expect(("runs-table", row, "makespan_s"), fmt_seconds(r["makespan_s"]), page.cells)
            expect(("runs-table", row, "peak_reserved_bytes"), fmt_bytes(r["peak_reserved_bytes"]),
                   page.cells)
            expect(("runs-table", row, "failed_jobs"), str(r["failed_jobs"]), page.cells)
            group = "workload batches" if batch_label(r) == "file" else "batch " + batch_label(r)
            bars = [b for b in page.bars if b["data-group"] == group
                    and b["data-series"] == r["policy"] and b.get("data-value") is not None]
            values = {float(b["data-value"]) for b in bars}
            if r["aggregate_samples_per_s"] not in values and r["makespan_s"] not in values:
                fail("no bar of %s shows %s" % (row, r["aggregate_samples_per_s"]))
            checked += 1
    elif "solo" in results:  # a maxbatch search
        for r in results["colocated"]:
            bars = [b for b in page.bars if b["data-series"] == "co-located"]
            if not any(float(b["data-value"]) == r["max_batch"] for b in bars):
                fail("no bar shows the co-located max %s" % r["max_batch"])
            rows = [key for key in page.cells if key[0] == "maxbatch-table" and key[2] == "max_batch"]
            if not any(page.cells[key].rstrip("+") == str(r["max_batch"]) for key in rows):
                fail("the table does not show the co-located max %s" % r["max_batch"])
            checked += 2
    else:  # one run
        system = results
        expect(("system-table", "makespan_s"), fmt_seconds(system["makespan_s"]), page.facts)
        expect(("system-table", "aggregate_samples_per_s"),
               fmt_fixed(system["aggregate_samples_per_s"], 1), page.facts)
        expect(("system-table", "peak_reserved_bytes"), fmt_bytes(system["peak_reserved_bytes"]),
               page.facts)
        expect(("system-table", "budget_bytes"), fmt_bytes(system["budget_bytes"]), page.facts)
        for job in system["jobs"]:
            name = job["name"]
            expect(("jobs-table", name, "status"), job["status"], page.cells)
            expect(("jobs-table", name, "iterations"), str(job["iterations"]), page.cells)
            expect(("jobs-table", name, "samples_per_s"), fmt_fixed(job["samples_per_s"], 1),
                   page.cells)
            expect(("jobs-table", name, "end_s"), fmt_seconds(job["end_s"]), page.cells)
            expect(("jobs-table", name, "wait_s"), fmt_seconds(job["wait_s"]), page.cells)
            expect(("jobs-table", name, "peak_live_bytes"), fmt_bytes(job["peak_live_bytes"]),
                   page.cells)
            expect(("jobs-table", name, "peak_reserved_bytes"),
                   fmt_bytes(job["peak_reserved_bytes"]), page.cells)
    print("%d numbers match the JSON" % checked)
    if checked == 0:
        fail("no numbers were found on the page")


def check_marks(page, results):
    """Every job whose iterations ran under a plan, waited mid-way or were cut short has that
    drawn on its schedule row (at the full span, where every iteration is in view)."""
    if isinstance(results, list) or not isinstance(results.get("jobs"), list):
        return  # a comparison or a maxbatch search: no schedule
    for job in results["jobs"]:
        log = job["iteration_log"]
        memory = [it.get("memory_wait_s", 0) for it in log]
        group = [it.get("group_wait_s", 0) for it in log]
        # One band per iteration, of the larger wait.
        wanted = {
            "planned": any("plan" in it for it in log),
            "memwait": any(m > 0 and m >= g for m, g in zip(memory, group)),
            "groupwait": any(g > m for m, g in zip(memory, group)),
            "restarted": bool(job.get("restarted_attempts")),
        }
        for state, expected in wanted.items():
            drawn = (job["name"], state) in page.states
            if expected and not drawn:
                fail("%s: the schedule draws no %s mark" % (job["name"], state))
            if drawn and not expected:
                fail("%s: the schedule draws a %s mark the JSON does not have" % (job["name"], state))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--source-dir", default=os.path.join(os.path.dirname(__file__), "../.."))
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("chromium is not installed (scripts/install-deps.sh installs it): skipped")
        return SKIP
    os.makedirs(args.work, exist_ok=True)
    report, results_path, expected = make_case(args, args.work)
    with open(results_path) as f:
        results = json.load(f)
    url = "file://" + os.path.abspath(report)
    with tempfile.TemporaryDirectory() as profile:
        page = Page()
        page.feed(chromium_run(chromium, profile, ["--dump-dom"], url))
        state = page.body.get("data-render-state")
        if state != "done":
            fail("the page did not finish drawing (state %r)" % state)
        if page.body.get("data-errors") != "0":
            fail("the page caught %s errors while drawing" % page.body.get("data-errors"))
        print("drawn in %s ms" % page.body.get("data-render-ms"))
        charts = json.loads(page.body.get("data-charts", "[]"))
        ids = [chart["id"] for chart in charts]
        for chart_id in expected:
            if chart_id not in ids:
                fail("the page has no chart %s (it has %s)" % (chart_id, ids))
        check_numbers(page, results)
        check_marks(page, results)
        png = os.path.join(args.work, args.case + ".png")
        chromium_run(chromium, profile, ["--screenshot=" + png], url)
        check_chart_pixels(png, [c for c in charts if c["id"] in expected])
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
