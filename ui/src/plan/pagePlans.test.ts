// @vitest-environment node
// Settings › Memory's page-side plans: the wasm module's answers shaped as PlanPreview rows.
import { readFile } from "node:fs/promises";
import { beforeAll, describe, expect, it } from "vitest";
import type { PlannerInputs } from "../generated/ipc";
import { planInPage, toWasmChoice } from "./pagePlans";
import { loadPlanner, type Planner } from "./wasmPlanner";

const GB = 1e9;
let planner: Planner;
let inputs: PlannerInputs;

beforeAll(async () => {
  planner = await loadPlanner(await readFile(new URL("../../public/k3_plan.wasm", import.meta.url)));
  inputs = {
    footprint: planner.releasedFootprint(),
    machine: { total_bytes: 128 * GB, available_bytes: 80 * GB, cgroup: null },
    streamedTrunk: true,
    ioThreads: 4,
    reserveBytes: 2.8 * GB,
    rates: null,
  };
});

describe("planInPage", () => {
  it("gives the spec's laptop plan with headroom against what is available", () => {
    const p = planInPage(planner, inputs, { kind: "preset", name: "laptop" }, 4096, 93);
    expect([p.problem, p.pinnedLayers, p.ringSlots, p.expertSlots]).toEqual([null, 0, 1, 56]);
    expect(p.headroomBytes).toBe(80 * GB - p.totalBytes);
    expect(p.tight).toBe(false);
    expect(p.secondsLow).toBeNull();
  });

  it("plans a dragged custom budget, marks a tight one and names a refusal", () => {
    const fits = planInPage(planner, inputs, { kind: "custom", trunkBytes: 30 * GB, cacheBytes: 2 * GB }, 4096, 93);
    expect(fits.problem).toBeNull();
    expect(fits.trunkBytes).toBeLessThanOrEqual(30 * GB);
    expect([fits.headroomBytes > inputs.reserveBytes, fits.tight]).toEqual([true, false]);
    // The cache takes 95% of the headroom left: what remains is below the reserve.
    const tight = planInPage(planner, inputs, { kind: "custom", trunkBytes: 30 * GB, cacheBytes: Math.round(0.95 * fits.headroomBytes) + 2 * GB }, 4096, 93);
    expect(tight.headroomBytes).toBeGreaterThan(0);
    expect(tight.headroomBytes).toBeLessThan(inputs.reserveBytes);
    expect(tight.tight).toBe(true);
    const refused = planInPage(planner, inputs, { kind: "custom", trunkBytes: 1e6, cacheBytes: 1e9 }, 4096, 93);
    expect(refused.problem).toMatch(/trunk/i);
    expect(refused.totalBytes).toBe(0);
  });

  it("maps choices to the module's", () => {
    expect(toWasmChoice({ kind: "preset", name: "server" })).toBe("server");
    expect(toWasmChoice({ kind: "custom", trunkBytes: 5, cacheBytes: 7 })).toEqual({ trunk_bytes: 5, cache_bytes: 7 });
  });
});
