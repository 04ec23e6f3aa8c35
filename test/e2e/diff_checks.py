"""End-to-end tests of `cutrace diff`: two recorded runs of test/e2e/diff_app that differ in known
ways (the cuBLAS-like kernel 2x slower and renamed by its tile sizes, k_extra only in B, more
steps in B, data_load longer), in text and JSON; a run against itself shows no change."""
import json
import re

from harness import tail, test

GEMM_A, GEMM_B = "ampere_sgemm_128x64_nn", "ampere_sgemm_256x128_nn"
GEMM_NS = 40_000
LOAD_A_US, LOAD_B_US = 1_000, 5_000


def record_pair(s, c):
    a, b = s.tmpdir("diff_a"), s.tmpdir("diff_b")
    opts = ["--gpu-timing", "events", "--sample-hz", "0"]
    s.record(c, a, [s.prog("diff_app"), "4", GEMM_A, str(GEMM_NS), "0", str(LOAD_A_US)], opts)
    s.record(c, b, [s.prog("diff_app"), "6", GEMM_B, str(2 * GEMM_NS), "1", str(LOAD_B_US)], opts)
    return a, b


def diff(s, c, *args, json_out=True):
    p = s.run([s.cutrace, "diff", *(["--json"] if json_out else []), *args])
    c.require(p.returncode == 0, f"`cutrace diff {' '.join(args)}` exited {p.returncode}: {tail(p.stderr)}")
    if not json_out:
        return p.stdout
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        c.require(False, f"`cutrace diff --json` printed no JSON ({e}): {tail(p.stdout)}")


def rows(j):
    return {k["name"]: k for k in j["kernels"]["rows"]}


def text_row(text, first_cell):
    """The cells of the table row whose first cell is first_cell (cells: 2+ spaces apart)."""
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells and cells[0] == first_cell:
            return cells
    return None


@test
def diff_reports_the_known_changes_between_two_runs(s, c):
    a, b = record_pair(s, c)
    j = diff(s, c, a, b)
    c.equal("a.steps", j["a"]["steps"], 4)
    c.equal("b.steps", j["b"]["steps"], 6)
    c.equal("per_step", j["per_step"], True)
    k = rows(j)
    c.require("ampere_sgemm_*_nn" in k, f"no normalised gemm row in {sorted(k)}")
    g = k["ampere_sgemm_*_nn"]
    c.equal("gemm match", g["match"], "normalised")
    c.equal("gemm names", (g["a"]["names"], g["b"]["names"]), ([GEMM_A], [GEMM_B]))
    c.equal("gemm counts", (g["a"]["count"], g["b"]["count"]), (4, 6))
    c.equal("gemm count per step", (g["a"]["count_per_step"], g["b"]["count_per_step"]), (1.0, 1.0))
    c.timing(abs(g["ratio"] - 2.0) <= 0.1, f"gemm ratio {g['ratio']}, expected 2.0 +-0.1")
    c.timing(abs(g["change_ns"] - GEMM_NS) <= 0.1 * GEMM_NS, f"gemm change {g['change_ns']} ns, expected +{GEMM_NS}")
    c.equal("first row (largest contribution)", j["kernels"]["rows"][0]["name"], "ampere_sgemm_*_nn")
    x = k.get("k_extra", {})
    c.equal("k_extra match", x.get("match"), "only_b")
    c.equal("k_extra a", x.get("a", "missing"), None)
    c.equal("k_extra b count", (x.get("b") or {}).get("count"), 6)
    c.timing(abs(x.get("change_ns", 0) - 5_000) <= 500, f"k_extra change {x.get('change_ns')} ns, expected +5000")
    f = k.get("k_fixed", {})
    c.equal("k_fixed match", f.get("match"), "exact")
    c.timing(abs(f.get("change_ns", 1e9)) <= 500, f"k_fixed change {f.get('change_ns')} ns, expected 0")
    c.equal("kernel rows", sorted(k), ["ampere_sgemm_*_nn", "k_extra", "k_fixed"])
    # Ranges: step_0..step_5 share a row; data_load 1 ms -> 5 ms of sleep.
    r = {x["name"]: x for x in j["ranges"]}
    c.equal("step_* names", (r["step_*"]["names_a"], r["step_*"]["names_b"]), (4, 6))
    load = r["data_load"]
    c.equal("data_load counts", (load["count_a"], load["count_b"]), (4, 6))
    grew = load["cpu_median_ns_b"] - load["cpu_median_ns_a"]
    c.expect(3_500_000 <= grew <= 6_000_000, f"data_load median grew {grew} ns, expected ~4 ms")
    per_step = load["cpu_total_ns_b"] / 6 - load["cpu_total_ns_a"] / 4
    c.expect(abs(load["cpu_change_ns"] - per_step) < 1, f"data_load change {load['cpu_change_ns']} != {per_step}")
    cpu = j["steps"]["cpu"]
    c.expect(cpu["median_change_ns"] >= 3_500_000, f"step median change {cpu['median_change_ns']}")
    c.equal("steps beyond spread", cpu["beyond_spread"], True)
    c.equal("steps counted", (cpu["a"]["count"], cpu["b"]["count"]), (4, 6))
    syncs = {x["name"]: x for x in j["syncs"]}
    c.equal("stream syncs", (syncs["stream"]["count_a"], syncs["stream"]["count_b"]), (4, 6))
    # The text shows the same figures.
    t = diff(s, c, a, b, json_out=False)
    c.expect(re.search(r"^A: .*\(1 files, [\d,]+ records, 4 steps\)$", t, re.M), f"A header: {tail(t, 400)}")
    c.expect(re.search(r"^B: .*\(1 files, [\d,]+ records, 6 steps\)$", t, re.M), f"B header: {tail(t, 400)}")
    row = text_row(t, "ampere_sgemm_*_nn")
    c.require(row, f"no gemm row in the text: {tail(t, 600)}")
    c.equal("text gemm row: match, counts", row[1:4], ["normalised", "1.00", "1.00"])
    c.equal("text gemm ratio", row[10], f"{g['ratio']:.2f}x")
    row = text_row(t, "k_extra")
    c.equal("text k_extra: match, counts", row and row[1:4], ["only_b", "-", "1.00"])
    row = text_row(t, "CPU (wall)")
    c.equal("text steps beyond spread", row and row[-1], "yes")
    row = text_row(t, "data_load")
    c.equal("text data_load counts", row and row[1:3], ["4", "6"])
    c.expect("only in A: 0 names; only in B: 1 names" in t, "text lacks the only-in counts")


@test
def diff_of_a_run_with_itself_shows_no_change(s, c):
    a = s.tmpdir("diff_self")
    s.record(c, a, [s.prog("diff_app"), "5", GEMM_A, str(GEMM_NS), "1", "500"], ["--sample-hz", "0"])
    j = diff(s, c, a, a)
    c.equal("median change", j["steps"]["cpu"]["median_change_ns"], 0)
    c.equal("beyond spread", (j["steps"]["cpu"]["beyond_spread"], j["steps"]["gpu"]["beyond_spread"]), (False, False))
    c.equal("kernel change", j["kernels"]["change_ns"], 0)
    c.equal("matches", {k["match"] for k in j["kernels"]["rows"]}, {"exact"})
    changes = [x["change_ns"] for x in j["kernels"]["rows"] + j["copies"] + j["syncs"] + j["apis"]]
    changes += [x["cpu_change_ns"] for x in j["ranges"]] + [x["gpu_change_ns"] for x in j["ranges"]]
    c.equal("non-zero changes", [x for x in changes if x != 0], [])
    t = diff(s, c, a, a, json_out=False)
    for name in ("k_fixed", "k_extra", GEMM_A):
        row = text_row(t, name)
        c.equal(f"text {name} change", row and row[6], "0")
    c.equal("text beyond spread", (text_row(t, "CPU (wall)") or ["?"])[-1], "no")


@test
def diff_steps_picks_the_same_steps_of_both_runs(s, c):
    a, b = record_pair(s, c)
    j = diff(s, c, "--steps", "1-2", a, b)
    c.equal("steps picked", (j["a"]["steps"], j["b"]["steps"]), (2, 2))
    k = rows(j)
    c.equal("gemm counts in steps 1-2", (k["ampere_sgemm_*_nn"]["a"]["count"], k["ampere_sgemm_*_nn"]["b"]["count"]),
            (2, 2))
    c.expect(j["a"]["selection"].startswith("steps 1-2"), f"selection {j['a']['selection']!r}")
    p = s.run([s.cutrace, "diff", "--steps", "4-5", a, b])
    c.equal("exit status when A has too few steps", p.returncode, 1)
    c.expect("no file has so many steps (4 at most)" in p.stderr, f"stderr {tail(p.stderr)}")
    p = s.run([s.cutrace, "diff", "--steps", "x", a, b])
    c.equal("exit status of a bad --steps", p.returncode, 2)
