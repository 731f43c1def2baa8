#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The benchmark's report (tools/bench/run.sh) and two small helpers.

  report.py RAW.jsonl OUT.json      the table on stdout, OUT.json written
  report.py bpfstats CGROUP-PATH    one JSON line per egr_* program attached
                                    to the cgroup: run_time_ns, run_cnt
  report.py policyparse FILE        policy_bench's output as one JSON object

Every value is the median of the rounds with [min-max]; every ratio is
taken per round against the direct baseline of the same round, then the
median and [min-max] of those ratios. A target is judged on the median.
"""
import json
import re
import statistics
import subprocess
import sys

# ----------------------------------------------------------------- helpers


def bpfstats(cgpath):
    out = subprocess.run(["bpftool", "-j", "cgroup", "show", cgpath],
                         capture_output=True, text=True, check=True).stdout
    for p in json.loads(out or "[]"):
        name = p.get("name", "")
        if not name.startswith("egr_"):
            continue
        info = json.loads(subprocess.run(["bpftool", "-j", "prog", "show", "id", str(p["id"])],
                                         capture_output=True, text=True, check=True).stdout)
        print(json.dumps({"name": name, "id": p["id"], "attach_type": p.get("attach_type"),
                          "run_time_ns": info.get("run_time_ns", 0),
                          "run_cnt": info.get("run_cnt", 0)}))


def policyparse(path):
    text = open(path).read()
    d = {}
    m = re.search(r"policy: (\d+) rules built in ([\d.]+) ms", text)
    if m:
        d["rules"], d["build_ms"] = int(m.group(1)), float(m.group(2))
    m = re.search(r"mixed: (\d+) decisions in ([\d.]+) s CPU \(([\d.]+) s wall\): "
                  r"(\d+) decisions/s, (\d+) ns/decision", text)
    if m:
        d.update(decisions=int(m.group(1)), cpu_s=float(m.group(2)), wall_s=float(m.group(3)),
                 per_s=int(m.group(4)), ns=int(m.group(5)))
    d["kinds"] = {k.strip(): int(v) for k, v in
                  re.findall(r"^  (.+?)\s+(\d+) ns/decision", text, re.M)}
    print(json.dumps(d))


def reloadparse(base_paths, reload_path, hup_ns, dout):
    """The reload window: from the SIGHUP (hup_ns) for as long as the daemon
    says it took to build and apply, plus 2 ms; the latency of the
    connections begun in it against the same window (the same offset from
    the run's first connection) of the runs without a reload just before and
    just after it (base_paths, comma-separated). Latency drifts within and
    across these runs (2.6 ms p99 in a run's first 2 s, 3.8 ms after, with no
    reload at all): a window is compared with the same window, and the runs
    on either side cancel the drift from one run to the next."""
    text = open(dout).read()
    m = re.findall(r"reloaded: policies built in ([\d.]+) ms off the event loop, "
                   r"applied in ([\d.]+) ms", text)
    d = {}
    if not m:
        print(json.dumps({"error": "no reload line"}))
        return
    build_ms, apply_ms = float(m[-1][0]), float(m[-1][1])
    d["build_ms"], d["apply_ms"] = build_ms, apply_ms

    def load(path):
        out = []
        for ln in open(path):
            a = ln.split()
            if len(a) == 3:
                out.append((int(a[0]), int(a[1]), a[2] == "1"))
        return out

    def q(v, p):
        v = sorted(v)
        return v[min(len(v) - 1, int(p * len(v)))] / 1e3 if v else None

    rel = load(reload_path)
    if not rel:
        print(json.dumps({"error": "no connections in the reload run"}))
        return
    off0 = int(hup_ns) - min(r[0] for r in rel)
    off1 = off0 + int((build_ms + apply_ms) * 1e6) + 2000000

    def window(run):
        t0 = min(r[0] for r in run) if run else 0
        return [r for r in run if off0 <= r[0] - t0 <= off1]

    win, basewin, base = window(rel), [], []
    for path in base_paths.split(","):
        run = load(path)
        base += run
        basewin += window(run)
    d["base_p99_us"] = q([r[1] for r in basewin if r[2]], 0.99)
    d["base_max_us"] = q([r[1] for r in basewin if r[2]], 1.0)
    d["base_n"] = len(basewin)
    d["win_n"] = len(win)
    d["win_p99_us"] = q([r[1] for r in win if r[2]], 0.99)
    d["win_max_us"] = q([r[1] for r in win if r[2]], 1.0)
    d["refused"] = sum(1 for r in rel if not r[2])
    d["base_refused"] = sum(1 for r in base if not r[2])
    print(json.dumps(d))


def med(v):
    return statistics.median(v) if v else None


def fmt(x, nd=None):
    if x is None:
        return "-"
    if nd is None:
        ax = abs(x)
        nd = 0 if ax >= 100 else 1 if ax >= 10 else 2 if ax >= 1 else 3
    return f"{x:,.{nd}f}"


def span(v, nd=None, ratio=False):
    """median [min-max] of v"""
    if not v:
        return "-"
    if ratio:
        nd = 2
    m = fmt(med(v), nd)
    if len(v) == 1:
        return m + (" ×" if ratio else "")
    s = f"{m} [{fmt(min(v), nd)}–{fmt(max(v), nd)}]"
    return s + (" ×" if ratio else "")


# --------------------------------------------------------------- the report

NAMES = {
    "direct": "direct (no egressctl)",
    "egr_http": "egressctl HTTP proxy (absolute URI)",
    "egr_connect": "egressctl CONNECT",
    "egr_socks5": "egressctl SOCKS5",
    "egr_transparent": "egressctl transparent (kernel redirect)",
    "egr_fast": "egressctl fast path (tcp:// rule)",
    "peer_squid": "squid (CONNECT)",
    "peer_tinyproxy": "tinyproxy (CONNECT)",
    "peer_trafficserver": "trafficserver (CONNECT)",
    "peer_mitmproxy": "mitmproxy (CONNECT)",
    "peer_haproxy": "haproxy (TCP forward)",
    "peer_dante": "dante-server (SOCKS5)",
    "peer_microsocks": "microsocks (SOCKS5)",
    "peer_squid_http": "squid (HTTP, absolute URI)",
    "peer_tinyproxy_http": "tinyproxy (HTTP, absolute URI)",
    "peer_trafficserver_http": "trafficserver (HTTP, absolute URI)",
    "peer_mitmproxy_http": "mitmproxy (HTTP, absolute URI)",
}
EGR_ROWS = ["egr_http", "egr_connect", "egr_socks5", "egr_transparent", "egr_fast"]
PEERS = ["peer_squid", "peer_tinyproxy", "peer_trafficserver", "peer_mitmproxy",
         "peer_haproxy", "peer_dante", "peer_microsocks"]
# the peer rows of the bulk and rate phases: CONNECT / SOCKS5 / TCP forward,
# and absolute-URI HTTP for the HTTP proxies
RATE_PEER_ROWS = [x for p in PEERS for x in (p, p + "_http") if x in NAMES]
BULK_TARGET = {"egr_connect": 0.9, "egr_socks5": 0.9, "egr_transparent": 0.9, "egr_fast": 0.98}
RATE_TARGET_CONCS = (32, 64)
RATE_TARGET = 0.7  # × direct, and above every peer measured
LAT_TARGET_ROWS = ("egr_http", "egr_connect", "egr_socks5", "egr_transparent")
LAT_TARGET_OF_PEER = 0.5  # added p50 <= this × the best peer's added p50
MEM_TARGET_KIB = 4.0
INSPECTED_TARGET_KIB = 64.0  # issue 30: an idle inspected connection
LEAF_HIT_TARGET_NS = 5000.0  # issue 30: a leaf certificate from the cache
CONNECT4_TARGET_NS = 1000
POLICY_TARGET_NS = 1000
USTART_ADDED_MS = 20         # a user's run without sudo: at most root's start + 20 ms
DAEMON_START_MS = 100        # runner mode: a restart to the first decision, 100k rules
DAEMON_RELOAD_ADDED_US = 1000  # runner mode: no decision waits 1 ms longer during a reload
DNS_CACHED_TARGET = 1.2
# issue 32: every proxied path against haproxy's TCP forward, same round
VS_HAPROXY_RATE = 1.1      # new connections/s at 32 and 64 clients, ≥ this × haproxy's
VS_HAPROXY_P50 = 0.5       # added p50 of one request, ≤ this × haproxy's added p50
CPU_PER_CONN_US = 90       # egressctl CPU per proxied connection


HS_N_NOTE = "200 handshakes"


def RATE_CONCS_SEEN(recs):
    """the client counts of the rate records, in order"""
    return sorted({int(r["row"].rsplit("/", 1)[1]) for r in recs if "/" in r["row"]})


class Report:
    def __init__(self, recs):
        self.recs = recs
        self.rows = []
        self.skipped = {r["row"]: r["reason"] for r in recs if r["phase"] == "skip"}
        self.phase_secs = {r["of"]: r["secs"] for r in recs if r["phase"] == "timing"}
        self.meta = next((r for r in recs if r["phase"] == "meta"), {})
        self.meta_end = next((r for r in recs if r["phase"] == "meta_end"), {})

    def row(self, section, name, unit, values, ratios=None, target=None, op=None, note="",
            judge=None, nd=None):
        """values: per-round values; ratios: per-round ratios to the baseline;
        target/op: judged on the median of `judge` ("ratio" or "value")."""
        r = {"section": section, "name": name, "unit": unit, "values": values,
             "median": med(values), "min": min(values) if values else None,
             "max": max(values) if values else None, "note": note}
        if ratios is not None:
            r["ratio"] = {"values": ratios, "median": med(ratios),
                          "min": min(ratios) if ratios else None,
                          "max": max(ratios) if ratios else None}
        if target is not None:
            x = med(ratios) if judge == "ratio" else med(values)
            r["target"] = {"op": op, "value": target, "on": judge}
            if x is None:
                r["met"] = None
            else:
                r["met"] = x >= target if op == ">=" else x <= target if op == "<=" else x < target
        r["_nd"] = nd
        self.rows.append(r)
        return r

    def by_round(self, phase, key, pred=lambda r: True):
        """{round: value} of the records of phase for which key(rec) is not None"""
        out = {}
        for r in self.recs:
            if r["phase"] == phase and pred(r):
                v = key(r)
                if v is not None:
                    out[r["round"]] = v
        return out

    @staticmethod
    def paired(vals, base):
        return [vals[k] / base[k] for k in sorted(vals) if k in base and base[k]]

    def skipped_in(self, phase):
        """the skip records of a phase (records without "during": any phase)"""
        return {r["row"]: r["reason"] for r in self.recs if r["phase"] == "skip"
                and r.get("during", phase) in (phase, "")}

    # ------------------------------------------------------------ sections

    def bulk(self):
        def mibs(r):
            x = r.get("res")
            if not x or x.get("code") != 200 or not x.get("bytes") or r["rc"] not in (0, 28):
                return None
            return x["bytes"] / x["secs"] / 2**20

        rows = [r for r in self.recs if r["phase"] == "bulk"]
        skipped = self.skipped_in("bulk")
        if not rows and not any(k.startswith("peer_") for k in skipped):
            return
        # the baseline of a round: the mean of its direct runs (before and
        # after the egressctl run)
        per = {}
        for r in rows:
            if r["row"] == "direct" and mibs(r) is not None:
                per.setdefault(r["round"], []).append(mibs(r))
        base = {k: statistics.mean(v) for k, v in per.items()}
        order = ["direct"] + EGR_ROWS + RATE_PEER_ROWS
        sec = f"bulk throughput, 1 TCP stream, {self.meta.get('bulk_s')} s per transfer (curl)"
        for name in order:
            if name in skipped:
                self.row(sec, NAMES[name], "MiB/s", [], note="skipped: " + skipped[name])
                continue
            vals = (base if name == "direct" else
                    self.by_round("bulk", mibs, lambda r, n=name: r["row"] == n))
            if not vals and not any(r["row"] == name for r in rows):
                continue
            note = "mean of a run before and one after egressctl's" if name == "direct" else ""
            if not vals:
                bad = next(r for r in rows if r["row"] == name)
                note = f"failed: curl rc {bad['rc']}, {bad.get('res')}"
            else:
                gib = [r["res"]["bytes"] / 2**30 for r in rows if r["row"] == name
                       and r.get("res") and r["res"].get("bytes")]
                note = (note + "; " if note else "") + f"{span(gib, 2)} GiB per transfer"
            cpu = [r["res"]["egr_cpu_ms"] / 1000 / (r["res"]["bytes"] / 2**30)
                   for r in rows if r["row"] == name and r.get("res")
                   and r["res"].get("egr_cpu_ms") is not None and r["res"].get("bytes")]
            util = [r["res"]["egr_cpu_ms"] / 10 / r["res"]["secs"]
                    for r in rows if r["row"] == name and r.get("res")
                    and r["res"].get("egr_cpu_ms") is not None and r["res"].get("secs")]
            if cpu:
                note = (note + "; " if note else "") + (
                    f"egressctl CPU {span(cpu, 2)} s/GiB, {fmt(med(util), 0)}% of a core")
            t = BULK_TARGET.get(name)
            self.row(sec, NAMES[name], "MiB/s", list(vals.values()), self.paired(vals, base),
                     t, ">=" if t else None, note, "ratio")

    def rate(self):
        recs = [r for r in self.recs if r["phase"] == "rate"]
        if not recs:
            return
        concs = sorted({int(r["row"].split("/")[1]) for r in recs})
        skipped = self.skipped_in("rate")
        order = ["direct"] + EGR_ROWS + RATE_PEER_ROWS

        def val(field):
            def f(r):
                x = r.get("res")
                return x.get(field) if x and x.get("ok", 0) > 0 else None
            return f

        def rows_of(key):
            return [r for r in recs if r["row"] == key]

        for c in concs:
            sec = f"new connections/s, {c} client{'s' if c > 1 else ''} (GET 1 KiB, fresh conn.)"
            base = self.by_round("rate", val("rps"), lambda r, c=c: r["row"] == f"direct/{c}")
            pend = []  # (name, vals, ratios, note): peers first known, then the rows
            for name in order:
                key = f"{name}/{c}"
                mine = rows_of(key)
                vals = self.by_round("rate", val("rps"), lambda r, k=key: r["row"] == key)
                if not mine:
                    if name in skipped:
                        pend.append((name, {}, None, "skipped: " + skipped[name]))
                    continue
                errs = sum(r["res"].get("err", 0) for r in mine if r.get("res"))
                oks = sum(r["res"].get("ok", 0) for r in mine if r.get("res"))
                note = ""
                if errs:
                    fe = next((r["res"].get("first_err") for r in mine
                               if r.get("res") and r["res"].get("first_err")), "")
                    note = f"{errs} errors / {oks} ok ({fe})"
                if not vals:
                    rcs = sorted({r["rc"] for r in mine})
                    note = note or "failed: rc " + ", ".join(
                        f"{x}" + (" (timed out)" if x == 124 else "") for x in rcs)
                cpu = [r["res"]["egr_cpu_ms"] * 1000 / r["res"]["ok"] for r in mine
                       if r.get("res") and r["res"].get("ok")
                       and r["res"].get("egr_cpu_ms") is not None]
                if cpu and name not in ("direct", "egr_fast"):
                    note = (note + "; " if note else "") + (
                        f"egressctl CPU {span(cpu, 0)} µs/conn")
                pend.append((name, vals, self.paired(vals, base), note))
            # the best peer at this concurrency: the highest median ratio
            best = max(((n, med(rt)) for n, _, rt, _ in pend
                        if n.startswith("peer_") and rt), key=lambda x: x[1], default=None)
            for name, vals, ratios, note in pend:
                if ratios is None:
                    self.row(sec, NAMES[name], "conn/s", [], note=note)
                    continue
                t = RATE_TARGET if c in RATE_TARGET_CONCS and name.startswith("egr_") else None
                r = self.row(sec, NAMES[name], "conn/s", list(vals.values()), ratios, t,
                             ">=" if t else None, note, "ratio")
                if t is not None:
                    self.vs_peers(r, best, ratios)
        # latency of one request: the 1-client runs
        c = concs[0]
        for q in ("p50_us", "p99_us"):
            sec = f"latency of one request, {q[:3]} (1 client)"
            base = self.by_round("rate", val(q), lambda r: r["row"] == f"direct/{c}")
            pend = []
            for name in order:
                key = f"{name}/{c}"
                vals = self.by_round("rate", val(q), lambda r, k=key: r["row"] == key)
                if not vals:
                    continue
                added = [vals[k] - base[k] for k in sorted(vals) if k in base]
                pend.append((name, vals, added))
            # the best peer: the lowest median added latency
            best = min(((n, med(a)) for n, _, a in pend if n.startswith("peer_") and a),
                       key=lambda x: x[1], default=None)
            for name, vals, added in pend:
                note = "" if name == "direct" else f"added {span(added, 0)} µs"
                r = self.row(sec, NAMES[name], "µs", list(vals.values()),
                             self.paired(vals, base), note=note)
                if name != "direct":
                    r["added"] = {"values": added, "median": med(added),
                                  "min": min(added) if added else None,
                                  "max": max(added) if added else None}
                if q == "p50_us" and name in LAT_TARGET_ROWS:
                    self.lat_vs_peers(r, best, added)

    def vs_haproxy(self):
        """each proxied path's connection rate and added p50 as a ratio to
        haproxy's TCP forward in the same round (issue 32's targets), and
        egressctl's CPU per connection"""
        recs = [r for r in self.recs if r["phase"] == "rate"]
        if not any(r["row"].startswith("peer_haproxy/") for r in recs):
            return

        def get(key, field):
            def f(r):
                x = r.get("res")
                return x.get(field) if x and x.get("ok", 0) > 0 else None
            return self.by_round("rate", f, lambda r: r["row"] == key)

        concs = sorted({int(r["row"].split("/")[1]) for r in recs})
        for c in concs:
            sec = (f"egressctl ÷ haproxy (TCP forward), new connections/s, {c} "
                   f"client{'s' if c > 1 else ''}, per round")
            hap = get(f"peer_haproxy/{c}", "rps")
            for name in LAT_TARGET_ROWS:
                vals = get(f"{name}/{c}", "rps")
                if not vals:
                    continue
                t = VS_HAPROXY_RATE if c in RATE_TARGET_CONCS else None
                self.row(sec, NAMES[name], "conn/s", list(vals.values()),
                         self.paired(vals, hap), t, ">=" if t else None,
                         f"haproxy {span(list(hap.values()), 0)} conn/s", "ratio")
        c = concs[0]
        sec = f"egressctl ÷ haproxy (TCP forward), added p50 of one request ({c} client), per round"
        base = get(f"direct/{c}", "p50_us")
        hap = get(f"peer_haproxy/{c}", "p50_us")
        hadd = {k: hap[k] - base[k] for k in hap if k in base}
        for name in LAT_TARGET_ROWS:
            vals = get(f"{name}/{c}", "p50_us")
            added = {k: vals[k] - base[k] for k in vals if k in base}
            if not added:
                continue
            ratios = [added[k] / hadd[k] for k in sorted(added) if k in hadd and hadd[k] > 0]
            self.row(sec, NAMES[name], "µs added", list(added.values()), ratios,
                     VS_HAPROXY_P50, "<=",
                     f"haproxy added {span(list(hadd.values()), 0)} µs", "ratio")
        sec = "egressctl CPU per proxied connection (rate runs at 32 and 64 clients)"
        for name in LAT_TARGET_ROWS:
            cpu = [r["res"]["egr_cpu_ms"] * 1000 / r["res"]["ok"] for r in recs
                   if r["row"] in (f"{name}/32", f"{name}/64") and r.get("res")
                   and r["res"].get("ok") and r["res"].get("egr_cpu_ms") is not None]
            if cpu:
                self.row(sec, NAMES[name], "µs/conn", cpu, target=CPU_PER_CONN_US, op="<=",
                         judge="value")

    @staticmethod
    def vs_peers(r, best, ratios):
        """rate target: >= RATE_TARGET × direct and above the best peer's
        median ratio; r["met"] becomes both, met_ratio / target.peers the parts"""
        r["met_ratio"] = r["met"]
        r["target"]["text"] = f"≥ {RATE_TARGET} × & > peers"
        x = med(ratios)
        if best is None:
            r["target"]["peers"] = None
            r["note"] = (r["note"] + "; " if r["note"] else "") + "no peer measured"
            return
        beats = None if x is None else x > best[1]
        r["target"]["peers"] = {"best": best[0], "best_name": NAMES[best[0]],
                                "best_ratio": best[1], "beats": beats}
        r["met_vs_peers"] = beats
        if r["met"] is not None and beats is not None:
            r["met"] = r["met"] and beats
        r["note"] = (r["note"] + "; " if r["note"] else "") + (
            f"≥ {RATE_TARGET} ×: {'yes' if r['met_ratio'] else 'no'}; best peer "
            f"{NAMES[best[0]]} {best[1]:.2f} ×: {'beaten' if beats else 'not beaten'}")

    @staticmethod
    def lat_vs_peers(r, best, added):
        """latency target: added p50 <= LAT_TARGET_OF_PEER × the best peer's"""
        frac = f"{LAT_TARGET_OF_PEER * 100:.0f} %"
        x = med(added)
        if best is None:
            r["target"] = {"op": "<=", "value": None, "on": "added",
                           "text": f"added ≤ {frac} of best peer's", "peers": None}
            r["met"] = None
            r["note"] += "; no peer measured"
            return
        lim = LAT_TARGET_OF_PEER * best[1]
        r["target"] = {"op": "<=", "value": lim, "on": "added",
                       "text": f"added ≤ {fmt(lim, 0)} µs",
                       "peers": {"best": best[0], "best_name": NAMES[best[0]],
                                 "best_added_us": best[1], "of_best": LAT_TARGET_OF_PEER}}
        r["met"] = None if x is None else x <= lim
        r["note"] += (f"; target: ≤ {frac} of the best peer's added p50, "
                      f"{NAMES[best[0]]} +{fmt(best[1], 0)} µs")

    def memory(self):
        recs = [r for r in self.recs if r["phase"] == "mem"]
        if not recs:
            return
        sec = "proxy memory, idle CONNECT tunnels"
        per, opened, before, after, req = [], [], [], [], None
        for r in recs:
            x = r.get("res") or {}
            req = x.get("requested", req)
            if r.get("rss_before_kib") is None or r.get("rss_after_kib") is None:
                continue
            before.append(r["rss_before_kib"])
            after.append(r["rss_after_kib"])
            opened.append(x.get("open", 0))
            if x.get("open"):
                per.append((r["rss_after_kib"] - r["rss_before_kib"]) / x["open"])
        note = ""
        if req and opened and max(opened) < req:
            pend = [(r.get("res") or {}).get("pending", 0) for r in recs]
            fail = [(r.get("res") or {}).get("failed", 0) for r in recs]
            said = next((r["egr_err"].splitlines()[-1] for r in recs if r.get("egr_err")), "")
            said = said.removeprefix("egressctl: ")
            note = (f"only {fmt(med(opened), 0)} of {req} opened: {fmt(med(fail), 0)} refused, "
                    f"{fmt(med(pend), 0)} unanswered" + (f"; egressctl: {said}" if said else ""))
        self.row(sec, "tunnels open (of %s requested)" % req, "tunnels", opened, note=note)
        self.row(sec, "egressctl RSS before", "KiB", before)
        self.row(sec, "egressctl RSS with the tunnels open", "KiB", after)
        self.row(sec, "RSS per idle tunnel: (after − before) / open", "KiB", per,
                 target=MEM_TARGET_KIB, op="<=", judge="value", nd=2)
        recs = [r for r in self.recs if r["phase"] == "mem_inspected"]
        sec = "proxy memory, idle inspected HTTPS sessions (TLS ended, one request each)"
        per, opened, req = [], [], None
        for r in recs:
            x = r.get("res") or {}
            req = x.get("requested", req)
            if r.get("rss_before_kib") is None or r.get("rss_after_kib") is None:
                continue
            opened.append(x.get("open", 0))
            if x.get("open"):
                per.append((r["rss_after_kib"] - r["rss_before_kib"]) / x["open"])
        if recs:
            err = next(((r.get("res") or {}).get("error") for r in recs
                        if (r.get("res") or {}).get("error")), "")
            self.row(sec, "sessions open (of %s requested)" % req, "sessions", opened, note=err)
            self.row(sec, "RSS per idle inspected session: (after − before) / open", "KiB",
                     per, target=INSPECTED_TARGET_KIB, op="<=", judge="value", nd=1)

    def leaves(self):
        """HTTPS inspection's leaf certificates (ca_bench, phase policy)"""
        recs = [r for r in self.recs if r["phase"] == "ca" and r.get("res")]
        if not recs:
            return
        sec = "inspection's leaf certificates (ca_bench, userspace, thread CPU time)"
        self.row(sec, "minted (first use of a name: signed by the CA)", "µs",
                 [r["res"]["mint_us"] for r in recs], nd=1)
        self.row(sec, "cache hit (inspect_ca_use on a cached name, SSL_new/free off)", "ns",
                 [r["res"]["hit_ns"] for r in recs], target=LEAF_HIT_TARGET_NS, op="<=",
                 judge="value", nd=0)

    def kernel(self):
        recs = [r for r in self.recs if r["phase"] == "connlat"]
        if recs:
            sec = "connect() latency to a loopback listener"
            f = lambda r: (r.get("res") or {}).get("p50_ns")  # noqa: E731
            base = self.by_round("connlat", f, lambda r: r["row"] == "unconfined")
            for name, label in (("unconfined", "unconfined process (baseline)"),
                                ("fast_path", "confined, fast path (127.0.0.1:PORT rule)"),
                                ("redirect", "confined, redirected to the transparent listener")):
                vals = self.by_round("connlat", f, lambda r, n=name: r["row"] == n)
                if not vals:
                    continue
                v = [x / 1000 for x in vals.values()]
                added = [(vals[k] - base[k]) / 1000 for k in sorted(vals) if k in base]
                note = "" if name == "unconfined" else f"added {span(added, 2)} µs (p50)"
                self.row(sec, label, "µs p50", v, self.paired(vals, base), note=note, nd=2)
        recs = [r for r in self.recs if r["phase"] == "bpf"]
        if recs:
            sec = "BPF programs: run time per call (bpf_stats)"
            names = sorted({r["res"]["name"] for r in recs})
            for n in names:
                per, cnt = [], []
                for r in recs:
                    x = r["res"]
                    if x["name"] == n and x["run_cnt"]:
                        per.append(x["run_time_ns"] / x["run_cnt"])
                        cnt.append(x["run_cnt"])
                if not per:
                    continue
                t = CONNECT4_TARGET_NS if n == "egr_connect4" else None
                self.row(sec, n, "ns/call", per, target=t, op="<=" if t else None,
                         judge="value", note=f"{fmt(med(cnt), 0)} calls/round")

    def policy(self):
        recs = [r for r in self.recs if r["phase"] == "policy" and r.get("res", {}).get("ns")]
        if not recs and "policy decisions" not in self.skipped:
            return
        sec = "policy decisions (policy_bench, userspace)"
        if "policy decisions" in self.skipped:
            self.row(sec, "policy decisions", "ns", [], note="skipped: " +
                     self.skipped["policy decisions"])
            return
        rules = recs[0]["res"].get("rules")
        self.row(sec, f"mixed queries at {rules:,} rules", "ns/decision",
                 [r["res"]["ns"] for r in recs], target=POLICY_TARGET_NS, op="<",
                 judge="value", note="thread CPU time")
        self.row(sec, "decisions per second (one core)", "1/s",
                 [r["res"]["per_s"] for r in recs])
        worst = {}
        for r in recs:
            for k, v in r["res"].get("kinds", {}).items():
                worst.setdefault(k, []).append(v)
        for k, v in worst.items():
            self.row(sec, "  " + k, "ns/decision", v)

    def dns(self):
        recs = [r for r in self.recs if r["phase"] == "dns"]
        if not recs:
            return
        for mode in ("cached", "uncached"):
            for q, unit, label in (("p50_us", "µs", "latency p50"), ("p99_us", "µs",
                                   "latency p99"), ("qps", "queries/s", "queries/s, 32 in flight")):
                sec = f"DNS, {mode} answers: {label}"
                f = lambda r, q=q: (r.get("res") or {}).get(q)  # noqa: E731
                base = self.by_round("dns", f, lambda r, m=mode: r["row"] == f"upstream/{m}")
                for name, lab in (("upstream", "upstream resolver directly"),
                                  ("egressctl", "egressctl's responder (confined client)")):
                    key = f"{name}/{mode}"
                    vals = self.by_round("dns", f, lambda r, k=key: r["row"] == key)
                    if not vals:
                        continue
                    lost = sum((r.get("res") or {}).get("lat_lost", 0) +
                               (r.get("res") or {}).get("q_lost", 0)
                               for r in recs if r["row"] == key)
                    note = f"{lost} queries lost" if lost else ""
                    t = (DNS_CACHED_TARGET if mode == "cached" and q == "p50_us"
                         and name == "egressctl" else None)
                    if q != "qps" and name == "egressctl":
                        added = [vals[k] - base[k] for k in sorted(vals) if k in base]
                        note = (note + "; " if note else "") + f"added {span(added, 0)} µs"
                    self.row(sec, lab, unit, list(vals.values()), self.paired(vals, base),
                             t, "<=" if t else None, note, "ratio")

    def daemon(self):
        recs = [r for r in self.recs if r["phase"] == "daemon"]
        if not recs:
            return
        sec = "runner mode (egressctl daemon), 100,000-rule policies"
        # the target is a restart's (the pins taken over); a first
        # start also loads and verifies every program: a figure, no target
        for kind, lab in (("fresh", "first start (programs loaded) to the first decision"),
                          ("takeover", "restart (pins taken over) to the first decision")):
            v = [r["us"] / 1e3 for r in recs if r.get("row") == "start/" + kind and r.get("us")]
            if kind == "fresh":
                self.row(sec, lab, "ms", v)
            else:
                self.row(sec, lab, "ms", v, target=DAEMON_START_MS, op="<", judge="value")
        rl = [r["res"] for r in recs if r.get("row") == "reload" and "build_ms" in r.get("res", {})]
        if not rl:
            return
        self.row(sec, "reload: policy built (off the event loop)", "ms", [r["build_ms"] for r in rl])
        self.row(sec, "reload: new policy applied (on the loop)", "ms", [r["apply_ms"] for r in rl])
        added = [r["win_p99_us"] - r["base_p99_us"] for r in rl
                 if r.get("win_p99_us") is not None and r.get("base_p99_us") is not None]
        self.row(sec, "reload: p99 added to connections begun during it", "µs", added,
                 target=DAEMON_RELOAD_ADDED_US, op="<=", judge="value",
                 note="32 clients, transparent path; %s connections in the windows" %
                 "/".join(str(r["win_n"]) for r in rl))
        addmax = [r["win_max_us"] - r["base_max_us"] for r in rl
                  if r.get("win_max_us") is not None and r.get("base_max_us") is not None]
        self.row(sec, "reload: max added during it", "µs", addmax)
        self.row(sec, "reload: connections refused that both policies allow", "", [r["refused"] for r in rl],
                 target=0, op="<=", judge="value")

    def ustart(self):
        recs = [r for r in self.recs if r["phase"] == "ustart" and r.get("us") is not None]
        if not recs:
            return
        sec = "run without sudo (the daemon's user socket)"
        per = {}  # {round: {kind: [ms]}}
        for r in recs:
            per.setdefault(r["round"], {}).setdefault(r["row"].split("/")[1], []).append(r["us"] / 1e3)
        root = {k: med(v["root"]) for k, v in per.items() if v.get("root")}
        user = {k: med(v["user"]) for k, v in per.items() if v.get("user")}
        self.row(sec, "root's run: start to CMD's first instruction", "ms", list(root.values()))
        self.row(sec, "a user's run (no sudo): start to CMD's first instruction", "ms",
                 list(user.values()), self.paired(user, root))
        self.row(sec, "a user's run: added to root's", "ms",
                 [user[k] - root[k] for k in sorted(user) if k in root],
                 target=USTART_ADDED_MS, op="<=", judge="value",
                 note="medians of 5 each a round, alternating")

    # ------------------------------------------------------------- output

    def table(self):
        head = ("measurement", "median [min–max]", "× baseline", "target", "")
        lines, sect = [], None
        body = []
        for r in self.rows:
            val = span(r["values"], r.get("_nd")) + (" " + r["unit"] if r["values"] else "")
            if not r["values"]:
                val = "-"
            rat = span(r["ratio"]["values"], ratio=True) if r.get("ratio") else ""
            tgt, verdict = "", ""
            if r.get("target"):
                t = r["target"]
                op = {">=": "≥", "<=": "≤", "<": "<"}[t["op"]]
                tgt = t.get("text") or (
                    f"{op} {t['value']}" + (" ×" if t["on"] == "ratio" else " " + r["unit"]))
                verdict = {True: "met", False: "MISSED", None: "n/a"}[r["met"]]
            body.append((r["section"], r["name"], val, rat, tgt, verdict, r["note"]))
        w = [max(len(head[0]), *(len(b[1]) + 2 for b in body)) if body else 20,
             max(len(head[1]), *(len(b[2]) for b in body)) if body else 10,
             max(len(head[2]), *(len(b[3]) for b in body)) if body else 10,
             max(len(head[3]), *(len(b[4]) for b in body)) if body else 6, 6]
        fmtl = lambda c: "  ".join(str(x).ljust(w[i]) for i, x in enumerate(c[:5])).rstrip()  # noqa
        lines.append(fmtl(head))
        lines.append("  ".join("-" * x for x in w))
        md = ["| measurement | median [min–max] | × baseline | target | | note |",
              "|---|---|---|---|---|---|"]
        for b in body:
            if b[0] != sect:
                sect = b[0]
                lines.append(sect)
                md.append(f"| **{sect}** | | | | | |")
            ln = fmtl(("  " + b[1],) + b[2:6])
            if b[6]:
                ln += "  (" + b[6] + ")"
            lines.append(ln)
            md.append("| " + " | ".join((b[1].strip(), b[2], b[3], b[4], b[5], b[6])) + " |")
        return "\n".join(lines), "\n".join(md)

    def https(self):
        """HTTPS by name, direct vs the kernel-verified path, the
        transparent proxy, CONNECT and HTTPS inspection; ratios per round to
        direct_https"""
        recs = [r for r in self.recs if r["phase"] == "https"]
        if not recs:
            return
        names = {"direct_https": "direct (no egressctl)",
                 "egr_kv_https": "egressctl kernel-verified (SNI checked, direct)",
                 "egr_transparent_https": "egressctl transparent proxy",
                 "egr_connect_https": "egressctl CONNECT",
                 "egr_fast_https": "egressctl fast path (tcp://: confined, no check)",
                 "egr_inspected_https": "egressctl inspected (TLS ended, each request judged)",
                 "peer_mitmproxy_https": "mitmproxy (CONNECT, TLS ended, each request seen)",
                 "peer_mitmproxy_rev_https": "mitmproxy (reverse, TLS ended, a new TLS upstream)"}

        def mibs(r):
            x = r.get("res")
            if not x or x.get("code") != 200 or not x.get("bytes") or r["rc"] not in (0, 28):
                return None
            return x["bytes"] / x["secs"] / 2**20

        def get(kind_rows, row, f):
            return self.by_round("https", f, lambda r: r["row"] == row and r in kind_rows)

        bulk = [r for r in recs if r.get("res") and "bytes" in r["res"]]
        sec = f"HTTPS bulk, 1 TLS stream, {self.meta.get('bulk_s')} s per transfer (curl)"
        base = get(bulk, "direct_https", mibs)
        for row, label in names.items():
            vals = get(bulk, row, mibs)
            if not vals:
                continue
            t = 0.98 if row == "egr_kv_https" else None
            self.row(sec, label, "MiB/s", list(vals.values()),
                     None if row == "direct_https" else self.paired(vals, base), t,
                     ">=" if t else None, "", "ratio")
        rate = [r for r in recs if r.get("res") and "rps" in r["res"]]
        for c in RATE_CONCS_SEEN(rate):
            sec = f"new TLS connections/s, {c} clients (wrk, Connection: close)"
            rps = lambda r: r["res"]["rps"]  # noqa: E731
            base = get(rate, f"direct_https/{c}", rps)
            for row, label in names.items():
                vals = get(rate, f"{row}/{c}", rps)
                if not vals:
                    continue
                t = 0.95 if row == "egr_kv_https" and c in (32, 64) else None
                self.row(sec, label, "conn/s", list(vals.values()),
                         None if row == "direct_https" else self.paired(vals, base), t,
                         ">=" if t else None, "", "ratio")
        hs = [r for r in recs if r.get("res") and "p50_us" in r["res"]]
        sec = "TLS handshake p50 (curl time_appconnect - time_connect)"
        p50 = lambda r: r["res"]["p50_us"]  # noqa: E731
        base = get(hs, "direct_https", p50)
        for row, label in names.items():
            vals = get(hs, row, p50)
            if not vals:
                continue
            added = [vals[k] - base[k] for k in sorted(vals) if k in base]
            t = 5 if row == "egr_kv_https" else None
            note = "" if row == "direct_https" else f"added {span(added, 1)} µs"
            r = self.row(sec, label, "µs", list(vals.values()),
                         None if row == "direct_https" else self.paired(vals, base),
                         note=note, nd=1)
            if t is not None:
                r["target"] = {"op": "<=", "value": t, "on": "added µs"}
                r["met"] = med(added) <= t if added else None
        bpf = [r for r in self.recs if r["phase"] == "https_bpf"]
        sec = "BPF programs on the kernel-verified path: run time per call (bpf_stats)"
        for r in bpf:
            x = r["res"]
            if x.get("run_cnt"):
                self.row(sec, x["name"], "ns/call", [x["run_time_ns"] / x["run_cnt"]],
                         note=f"{x['run_cnt']} calls (one HTTPS bulk run, {HS_N_NOTE})")

    def build(self):
        self.bulk()
        self.rate()
        self.vs_haproxy()
        self.https()
        self.memory()
        self.kernel()
        self.policy()
        self.leaves()
        self.dns()
        self.daemon()
        self.ustart()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "bpfstats":
        return bpfstats(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "policyparse":
        return policyparse(sys.argv[2])
    if len(sys.argv) == 6 and sys.argv[1] == "reloadparse":
        return reloadparse(*sys.argv[2:])
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    recs = []
    with open(sys.argv[1]) as f:
        for ln in f:
            ln = ln.strip()
            if ln:
                try:
                    recs.append(json.loads(ln))
                except ValueError:
                    print(f"report: bad record: {ln[:200]}", file=sys.stderr)
    rep = Report(recs)
    rep.build()
    text, md = rep.table()
    m = rep.meta
    title = (f"egressctl benchmark{' (--quick)' if m.get('quick') else ''}: {m.get('date', '')}, "
             f"Linux {m.get('kernel', '?')}, {m.get('cpu', '?')} × {m.get('cores', '?')} cores, "
             f"{m.get('rounds', '?')} rounds, {rep.meta_end.get('elapsed_s', '?')} s; "
             f"load average {m.get('loadavg_start', '?')} → {rep.meta_end.get('loadavg_end', '?')}")
    print(title)
    print("medians of the rounds [min–max]; × baseline: per-round ratio to the direct "
          "baseline (unconfined / upstream) of the same round")
    if m.get("peer_rate_s") is not None and any(r["phase"] == "rate" and
                                                r["row"].startswith("peer_") for r in recs):
        print(f"connection-rate runs: {m.get('rate_s')} s each (direct, egressctl), "
              f"{m['peer_rate_s']} s through a peer (unconfined, as nobody)")
    print(text)
    met = [r for r in rep.rows if r.get("met") is True]
    missed = [r for r in rep.rows if r.get("met") is False]
    print(f"targets: {len(met)} met, {len(missed)} missed" +
          ("".join(f"\n  MISSED: {r['section']}: {r['name']}" for r in missed)))
    for r in rep.rows:
        r.pop("_nd", None)
    out = {"meta": m, "meta_end": rep.meta_end, "title": title, "rows": rep.rows,
           "skipped": rep.skipped, "phase_secs": rep.phase_secs,
           "targets_met": len(met), "targets_missed": len(missed),
           "table_text": text, "table_markdown": md, "raw": recs}
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"results: {sys.argv[2]}")


if __name__ == "__main__":
    main()
