// @vitest-environment node
// The planner module as the page runs it, on public/k3_plan.wasm (built by `npm run build`'s
// prebuild, scripts/build-wasm.sh): the released model's preset plans carry the figures the
// spec and `k3 forecast` know, refusals arrive as named errors with their numbers, no plan of
// a grid of dragged budgets exceeds its budgets, 1000 plans take well under a second, and
// random (absurd) numbers get a plan or a refusal, never a trap.
// Parity with `k3 plan --json` is cli/tests/plan_wasm.rs.
import { readFile } from "node:fs/promises";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { loadPlanner, planner as pagePlanner, PRESETS, type MemoryPlan, type Planner, type PlanOutcome } from "./wasmPlanner";

const GB = 1e9;
const machine = { total_bytes: 64 * GB, available_bytes: 48 * GB };
const options = { streamed_trunk: true, context_length: 4096, io_threads: 4 };

let planner: Planner;
let bytes: Uint8Array<ArrayBuffer>;

beforeAll(async () => {
  const url = new URL("../../public/k3_plan.wasm", import.meta.url);
  bytes = await readFile(url).catch((e: unknown) => {
    throw new Error(`${url.pathname}: ${String(e)}; run \`npm run build\` (or bash scripts/build-wasm.sh) first`);
  });
  planner = await loadPlanner(bytes);
});

afterEach(() => {
  vi.unstubAllGlobals();
});

function plan(outcome: PlanOutcome): MemoryPlan {
  if ("error" in outcome) throw new Error(`expected a plan, got ${outcome.error.kind}: ${outcome.error.message}`);
  return outcome.plan;
}

describe("released K3", () => {
  it("laptop streams every layer through one ring slot with 56 expert slots (PRODUCT §4.6)", () => {
    const p = plan(planner.planFor(planner.releasedFootprint(), machine, { ...options, choice: "laptop" }));
    expect([p.layers, p.pinned_layers, p.ring_slots, p.cache_slots]).toEqual([93, 0, 1, 56]);
    expect(p.budget).toEqual({ trunk_bytes: 3 * GB, cache_bytes: 1 * GB });
    expect(p.fits).toBe(true);
  });

  it("every preset comes in the engine's order; workstation pins 48 layers, server all 93", () => {
    const rows = planner.presetPlans(planner.releasedFootprint(), machine, {
      ...options,
      custom: { trunk_bytes: 20 * GB, cache_bytes: 5 * GB },
    });
    expect(rows.map((r) => r.preset)).toEqual([...PRESETS, "custom"]);
    const pinned = rows.map((r) => ("plan" in r ? r.plan.pinned_layers : r.error.kind));
    expect(pinned.slice(3, 5)).toEqual([48, 93]);
    const ultra = rows[0];
    expect(ultra && "plan" in ultra && ultra.plan.total_bytes).toBeLessThanOrEqual(2 * GB); // streams layers in pieces
    const server = rows[4];
    expect(server && "plan" in server && server.plan.fits).toBe(false); // ~123 GB on a 48 GB machine
  });

  it("forecasts each plan when given rates: s/token grows as the budget shrinks", () => {
    const rates = {
      disk_trunk_bytes_per_second: 3 * GB,
      disk_expert_bytes_per_second: 3 * GB,
      bf16_bytes_per_second: 40 * GB,
      expert_bytes_per_second: 20 * GB,
    };
    const rows = planner.presetPlans(planner.releasedFootprint(), machine, { ...options, rates });
    const low = rows.slice(0, 4).map((r) => ("plan" in r && r.forecast ? r.forecast.seconds_per_token.low : NaN));
    expect(low.every((s) => s > 0)).toBe(true);
    expect([...low].sort((a, b) => b - a)).toEqual(low); // laptop slowest … server fastest
  });
});

describe("refusals", () => {
  it("a cache below top_k + 1 slots is CacheBudgetTooSmall with the minimum", () => {
    const out = planner.planFor(planner.releasedFootprint(), machine, {
      ...options,
      choice: { trunk_bytes: 3 * GB, cache_bytes: 0.1 * GB },
    });
    expect("error" in out && out.error).toMatchObject({ kind: "CacheBudgetTooSmall", minimum_slots: 17 });
  });

  it("auto on an 8 GB machine is AutoTooSmall; a bad request is BadRequest, not an exception", () => {
    const small = { total_bytes: 8 * GB, available_bytes: 5 * GB };
    const auto = planner.planFor(planner.releasedFootprint(), small, { ...options, choice: "auto" });
    expect("error" in auto && auto.error.kind).toBe("AutoTooSmall");
    const broken = { ...planner.releasedFootprint(), top_k: "sixteen" } as unknown as ReturnType<Planner["releasedFootprint"]>;
    const bad = planner.planFor(broken, machine, { ...options, choice: "laptop" });
    expect("error" in bad && bad.error.kind).toBe("BadRequest");
    const rows = planner.presetPlans(broken, machine, options);
    expect(rows.map((r) => r.preset)).toEqual(PRESETS);
    expect(rows.every((r) => "error" in r && r.error.kind === "BadRequest")).toBe(true);
  });
});

describe("dragging a budget", () => {
  it("no plan of a 40 × 25 grid exceeds its budgets, and the grid takes well under a second", () => {
    const fp = planner.releasedFootprint();
    let plans = 0;
    const t0 = performance.now();
    for (let t = 0; t < 40; t++) {
      for (let c = 0; c < 25; c++) {
        const budget = { trunk_bytes: t * 3 * GB, cache_bytes: c * 2 * GB };
        const out = planner.planFor(fp, machine, { ...options, choice: budget });
        if ("error" in out) continue;
        plans++;
        expect(out.plan.trunk_bytes).toBeLessThanOrEqual(budget.trunk_bytes);
        expect(out.plan.cache_bytes).toBeLessThanOrEqual(budget.cache_bytes);
      }
    }
    const ms = performance.now() - t0;
    console.log(`1000 plans of the released footprint in ${ms.toFixed(1)} ms (${plans} plans, the rest refusals)`);
    expect(plans).toBeGreaterThan(500);
    expect(ms).toBeLessThan(1000);
  });
});

describe("any numbers", () => {
  it("5000 random footprints, machines and budgets get a plan or a named refusal, never a trap", () => {
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    // Zero, 2^53 − 1, or anything from a byte to 2^60, skewed small.
    const size = () => {
      const r = rnd();
      return r < 0.1 ? 0 : r < 0.2 ? Number.MAX_SAFE_INTEGER : Math.floor(rnd() ** 4 * 2 ** (rnd() * 60));
    };
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const fp = {
        layer_trunk_bytes: Array.from({ length: Math.floor(rnd() * 8) }, size),
        expert_bytes: size(),
        n_experts_total: size(),
        top_k: size(),
        moe_layers: size(),
        resident_bytes: size(),
        head_bytes: size(),
        state_bytes: size(),
        kv_bytes_per_position: size(),
        scratch_bytes: size(),
      };
      const cgroup = rnd() < 0.3 ? { limit_bytes: size(), usage_bytes: size() } : null;
      const m = { total_bytes: size(), available_bytes: size(), cgroup };
      const choice = rnd() < 0.5 ? (PRESETS[Math.floor(rnd() * PRESETS.length)] ?? "auto") : { trunk_bytes: size(), cache_bytes: size() };
      const rates = { disk_trunk_bytes_per_second: size(), disk_expert_bytes_per_second: size(), bf16_bytes_per_second: size(), expert_bytes_per_second: size() };
      const opts = { streamed_trunk: rnd() < 0.5, context_length: Math.floor(rnd() * 1_100_000), io_threads: Math.floor(rnd() * 300), ...(rnd() < 0.5 ? { rates } : {}) };
      const out = planner.planFor(fp, m, { ...opts, choice });
      seen.add("error" in out ? out.error.kind : "plan");
      if ("plan" in out) {
        expect(out.plan.trunk_bytes).toBeLessThanOrEqual(out.plan.budget.trunk_bytes);
        expect(out.plan.cache_bytes).toBeLessThanOrEqual(out.plan.budget.cache_bytes);
      }
    }
    // The inputs reach the planner's refusals, not only the JSON checks.
    for (const kind of ["plan", "TrunkNotPacked", "CacheBudgetTooSmall", "AutoTooSmall", "Overflow", "ContextLength"]) {
      expect(seen).toContain(kind);
    }
  });
});

it("the page's planner is fetched beside the page once, and fetched again after a failed load", async () => {
  const fetched: string[] = [];
  let status = 404;
  vi.stubGlobal("document", { baseURI: "tauri://localhost/index.html" });
  vi.stubGlobal("fetch", async (url: URL) => {
    fetched.push(url.href);
    return new Response(status === 200 ? bytes : null, { status });
  });
  await expect(pagePlanner()).rejects.toThrow(/HTTP 404/);
  status = 200;
  const first = await pagePlanner();
  expect(await pagePlanner()).toBe(first);
  expect(fetched).toEqual(["tauri://localhost/k3_plan.wasm", "tauri://localhost/k3_plan.wasm"]);
  expect(first.releasedFootprint().layer_trunk_bytes).toHaveLength(93);
});

it("refuses bytes that are not the planner module", async () => {
  await expect(loadPlanner(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))).rejects.toThrow(/exports no memory/);
});
