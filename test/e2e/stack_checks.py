"""End-to-end tests of call stacks (--backtrace): blocking calls attributed to the functions that
made them in the summary, the Chrome export and the report; none and all modes."""
import collections
import json
import os
import re

from harness import dump_lines, tail, test, traces


# ---- call stacks (CUTRACE_BACKTRACE) ----------------------------------------------------------

SYNC_SITES = {"alpha": 12, "beta": 20, "gamma": 5}  # sync_sites' default counts


def sites_by_function(c, j):
    """{alpha|beta|gamma: site} from the summary's sync call sites (by the site's function)."""
    out = {}
    for site in j["sync_call_sites"]["sites"]:
        for key, fn in (("alpha", "sync_site_alpha("), ("beta", "sync_site_beta("), ("gamma", "copy_site_gamma(")):
            if site["frames"] and site["frames"][0]["function"].startswith(fn):
                c.expect(key not in out, f"two sites named {fn}...: {site['site']}")
                out[key] = site
    return out


def frame_function(text):
    """A native frame's text without its leading "file.cpp:LINE in " (present where DWARF gave it)."""
    return re.sub(r"^\S+:\d+ in ", "", text)


def marker_lines(path):
    """{NAME: line number} of the `// line:NAME` comments of a source file."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"// line:(\w+)$", text.rstrip())
            if m:
                out[m.group(1)] = n
    return out


def api_total(j, name):
    return next((a["total_ns"] for a in j["api"] if a["name"] == name), None)


@test
def sync_call_sites_attributed_to_their_functions(s, c):
    """Default --backtrace sync: the summary attributes each blocking call to the named function
    that made it (symbolised from the test program's ELF symbols), with exact counts, the same
    blocked time as the Sync/Memcpy records, two frames (the function, then main), and the
    Chrome export carries the stack in args.backtrace of the sync events (not of launches)."""
    d = s.tmpdir("sync_sites")
    p = s.record(c, d, [s.prog("sync_sites")])
    c.equal("stdout", p.stdout, "sync_sites done\n")
    j = s.summary(c, d)
    cs = j["sync_call_sites"]
    sites = sites_by_function(c, j)
    c.require(sorted(sites) == ["alpha", "beta", "gamma"],
              f"sites found: {[x['site'] for x in cs['sites']]}; problems {cs['symbol_problems']}")
    c.equal("distinct stacks", cs["distinct"], 3)
    c.equal("with_stack count", cs["with_stack"]["count"], sum(SYNC_SITES.values()))
    c.equal("without_stack count", cs["without_stack"]["count"], 0)
    for key, n in SYNC_SITES.items():
        c.equal(f"{key} count", sites[key]["count"], n)
        c.equal(f"{key} calls", sum(sites[key]["apis"].values()), n)
        fr = sites[key]["frames"]
        c.expect(len(fr) >= 2 and fr[1]["function"] == "main",
                 f"{key}: second frame is not main: {[f['function'] for f in fr]}")
        c.expect(all(f["module"].endswith("/sync_sites") for f in fr[:2]),
                 f"{key}: modules {[f['module'] for f in fr[:2]]}")
    c.equal("alpha apis", sites["alpha"]["apis"], {"cuStreamSynchronize": SYNC_SITES["alpha"]})
    c.expect(all("CtxSynchronize" in a for a in sites["beta"]["apis"]), f"beta apis {sites['beta']['apis']}")
    c.expect(all("MemcpyDtoH" in a for a in sites["gamma"]["apis"]), f"gamma apis {sites['gamma']['apis']}")
    # The blocked time is the calls' own CPU time: the same sums as the per-kind tables.
    c.equal("alpha total_ns = stream syncs' total", sites["alpha"]["total_ns"], j["syncs"]["stream"]["total_ns"])
    c.equal("beta total_ns = context syncs' total", sites["beta"]["total_ns"], j["syncs"]["context"]["total_ns"])
    gamma_api = next(iter(sites["gamma"]["apis"]), "")
    c.equal("gamma total_ns = its API's total", sites["gamma"]["total_ns"], api_total(j, gamma_api))
    totals = [x["total_ns"] for x in cs["sites"]]
    c.equal("sites sorted by total_ns", totals, sorted(totals, reverse=True))

    text = s.run([s.cutrace, "summary", d]).stdout
    c.expect("Sync call sites" in text and "sync_site_alpha(" in text, "text summary lacks the sync call sites")

    trace = os.path.join(d, traces(d)[0])
    c.equal("Stack records", len(dump_lines(s, c, trace, "Stack")), 3)
    c.equal("OpStack records", len(dump_lines(s, c, trace, "OpStack")), sum(SYNC_SITES.values()))
    c.expect(any("sync_site_alpha(" in line for line in dump_lines(s, c, trace, "Stack")),
             "`cutrace dump` does not show symbolised stacks")

    out = os.path.join(d, "chrome")
    p = s.run([s.cutrace, "export", d, "--format", "chrome", "-o", out])
    c.require(p.returncode == 0, f"`cutrace export --format chrome` exited {p.returncode}: {tail(p.stderr)}")
    ev = json.load(open(os.path.join(out, os.listdir(out)[0]), encoding="utf-8"))["traceEvents"]
    stream_syncs = [e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaStreamSynchronize"]
    c.equal("chrome stream syncs", len(stream_syncs), SYNC_SITES["alpha"])
    c.expect(all(frame_function(e["args"].get("backtrace", [""])[0]).startswith("sync_site_alpha(") for e in stream_syncs),
             f"chrome backtrace: {stream_syncs[0]['args'] if stream_syncs else None}")
    launches = [e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"]
    c.equal("chrome launches", len(launches), sum(SYNC_SITES.values()))
    c.equal("launches with a backtrace (sync mode)", sum("backtrace" in e["args"] for e in launches), 0)


@test
def backtrace_none_writes_no_stacks(s, c):
    """--backtrace none: no Module, Stack or OpStack record; the summary counts every blocking call
    as without a stack."""
    d = s.tmpdir("bt_none")
    s.record(c, d, [s.prog("sync_sites")], opts=["--backtrace", "none"])
    trace = os.path.join(d, traces(d)[0])
    for t in ("Module", "Stack", "OpStack"):
        c.equal(f"{t} records", len(dump_lines(s, c, trace, t)), 0)
    j = s.summary(c, d)
    cs = j["sync_call_sites"]
    c.equal("sites", cs["sites"], [])
    c.equal("without_stack count", cs["without_stack"]["count"], sum(SYNC_SITES.values()))
    c.equal("with_stack count", cs["with_stack"]["count"], 0)


@test
def backtrace_all_gives_launches_stacks(s, c):
    """--backtrace all: every launch has a stack whose innermost frame is launch_site; the sync call
    sites are the same as in sync mode (launch stacks do not count as blocking)."""
    d = s.tmpdir("bt_all")
    s.record(c, d, [s.prog("sync_sites")], opts=["--backtrace", "all"])
    trace = os.path.join(d, traces(d)[0])
    ops = dump_lines(s, c, trace, "OpStack")
    kernel_links = [line for line in ops if " op=Kernel " in line]
    n = sum(SYNC_SITES.values())
    c.equal("OpStack records for launches", len(kernel_links), n)
    c.equal("OpStack records in all", len(ops), 2 * n)
    c.expect(all(re.search(r'innermost="(\S+:\d+ in )?launch_site\(', line) for line in kernel_links),
             f"launch stacks: {kernel_links[:1]}")
    j = s.summary(c, d)
    sites = sites_by_function(c, j)
    c.equal("sites", sorted(sites), ["alpha", "beta", "gamma"])
    for key, want in SYNC_SITES.items():
        c.equal(f"{key} count", sites.get(key, {}).get("count"), want)


@test
def report_events_carry_their_call_stacks(s, c):
    """`cutrace report` shows each recorded call stack in the event's details: every sync and
    blocking copy of sync_sites has a backtrace whose first frame is the function that made the
    call (alpha: cuStreamSynchronize, beta: cuCtxSynchronize, gamma: the blocking copy), with main
    under it, alpha's with the DWARF line of its sync; launches (not stacked in sync mode) have none."""
    d = s.tmpdir("report_stacks")
    s.record(c, d, [s.prog("sync_sites")])
    out = os.path.join(d, "report.html")
    p = s.run([s.cutrace, "report", d, "-o", out])
    c.require(p.returncode == 0, f"`cutrace report` exited {p.returncode}: {tail(p.stderr)}")
    page = open(out, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="cutrace-timeline">(.*?)</script>', page, re.S)
    c.require(m is not None, "no timeline document in the report")
    tl = json.loads(m.group(1).replace("<\\/", "</"))
    strings = tl["strings"]
    firsts = collections.Counter()
    launches_with_stack = 0
    alpha_line = marker_lines(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sync_sites.cpp"))["alpha_sync"]
    alpha_with_line = 0
    for t in tl["tracks"]:
        for i, bt in enumerate(t.get("bt", [])):
            name = strings[t["n"][i]]
            if bt:
                frames = strings[bt].split("\n")
                c.expect(len(frames) >= 2 and frame_function(frames[1]).startswith("main "), f"{name}: frames {frames[:3]}")
                firsts[(name, frame_function(frames[0]).split("(")[0])] += 1
                alpha_with_line += frames[0].startswith(f"sync_sites.cpp:{alpha_line} in sync_site_alpha(")
            if name.startswith("cuLaunch") and bt:
                launches_with_stack += 1
    by_fn = collections.Counter()
    for (name, fn), n in firsts.items():
        by_fn[fn] += n
    c.equal("events with a stack, by first frame",
            dict(by_fn), {"sync_site_alpha": SYNC_SITES["alpha"], "sync_site_beta": SYNC_SITES["beta"],
                          "copy_site_gamma": SYNC_SITES["gamma"]})
    c.equal("alpha's calls", sorted({n for (n, fn) in firsts if fn == "sync_site_alpha"}), ["cuStreamSynchronize"])
    c.equal("launches with a stack", launches_with_stack, 0)
    c.equal("events whose first frame has sync_site_alpha's DWARF line", alpha_with_line, SYNC_SITES["alpha"])


@test
def sync_call_site_has_dwarf_source_line(s, c):
    """A C++ program built with -g: the sync call site of sync_site_alpha carries the file:line of
    its cuStreamSynchronize call and main's frame the line that calls sync_site_alpha (the lines
    of the `// line:` markers in sync_sites.cpp), in `summary --json` frames (file, line), the
    site label, the text summary, `cutrace dump` and the Chrome export's backtrace; a frame of a
    module without DWARF (_start's crt1 code has none) keeps file "" and line 0."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sync_sites.cpp")
    lines = marker_lines(src)
    c.require(sorted(lines) == ["alpha_call", "alpha_sync"], f"markers in {src}: {lines}")
    d = s.tmpdir("dwarf_lines")
    s.record(c, d, [s.prog("sync_sites")])
    j = s.summary(c, d)
    alpha = sites_by_function(c, j).get("alpha")
    c.require(alpha is not None, f"no sync_site_alpha site: {[x['site'] for x in j['sync_call_sites']['sites']]}")
    fr = alpha["frames"]
    c.require(len(fr) >= 2, f"alpha frames: {fr}")
    for k, (name, fn) in enumerate((("alpha_sync", "sync_site_alpha("), ("alpha_call", "main"))):
        c.expect(fr[k]["function"].startswith(fn), f"frame {k} function {fr[k]['function']!r}")
        c.expect(os.path.isabs(fr[k]["file"]) and os.path.realpath(fr[k]["file"]) == os.path.realpath(src),
                 f"frame {k} file {fr[k]['file']!r}, not {src}")
        c.equal(f"frame {k} line", fr[k]["line"], lines[name])
    label = f"sync_sites.cpp:{lines['alpha_sync']} in sync_site_alpha(CUstream_st*)"
    c.equal("site label", alpha["site"], label)
    start = [f for f in fr if f["function"] == "_start"]
    c.expect(all(f["file"] == "" and f["line"] == 0 for f in start), f"_start frames: {start}")
    c.expect(all(set(f) >= {"function", "module", "offset", "file", "line"} for f in fr if not f.get("python")),
             f"native frame keys: {[sorted(f) for f in fr]}")

    text = s.run([s.cutrace, "summary", d]).stdout
    c.expect(f" {label}: " in text, f"text summary lacks the site {label!r}: {tail(text, 1500)}")
    c.expect(f"sync_sites.cpp:{lines['alpha_call']} in main (sync_sites+0x" in text,
             f"text summary lacks main's frame line {lines['alpha_call']}: {tail(text, 1500)}")
    trace = os.path.join(d, traces(d)[0])
    c.expect(any(label in line for line in dump_lines(s, c, trace, "Stack")),
             f"`cutrace dump` Stack lines lack {label!r}")
    out = os.path.join(d, "chrome")
    p = s.run([s.cutrace, "export", d, "--format", "chrome", "-o", out])
    c.require(p.returncode == 0, f"`cutrace export --format chrome` exited {p.returncode}: {tail(p.stderr)}")
    ev = json.load(open(os.path.join(out, os.listdir(out)[0]), encoding="utf-8"))["traceEvents"]
    syncs = [e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaStreamSynchronize"]
    c.equal("chrome stream syncs", len(syncs), SYNC_SITES["alpha"])
    c.expect(all(e["args"].get("backtrace", [""])[0].startswith(label + " (sync_sites+0x") for e in syncs),
             f"chrome backtrace: {syncs[0]['args'] if syncs else None}")
