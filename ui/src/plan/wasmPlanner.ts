// The memory planner in the page: k3-plan compiled to WebAssembly (plan-wasm/, built by
// scripts/build-wasm.sh into public/k3_plan.wasm), so the preset picker and the what-if view
// plan as the user drags a budget, with the engine's own arithmetic, from a footprint the app
// sends once.
// Owns: loading the module (fetch beside the page; given bytes under Node/Vitest), the
// JSON-through-memory protocol of plan-wasm/src/exports.rs. The JSON shapes are generated from
// plan-wasm/src/dto.rs into ../generated/planner.ts (snake_case, as Rust writes them).
// Must not: compute a figure itself. Every number comes from the module; `k3 plan --json`
// prints the same objects (cli/tests/plan_wasm.rs holds them identical).
// Easy to break: byte counts are u64 in Rust and doubles here, exact below 2^53 (9 PB); the
// module's memory may grow during a call, so views of `memory.buffer` are made afresh each time.
// The Tauri CSP needs 'wasm-unsafe-eval' (script-src) and 'self' (connect-src) for this.

import { PRESETS } from "../generated/planner";
import type { Budget, Choice, Forecast, Footprint, MachineMemory, MemoryPlan, PlanError, PlanOptions, PresetName } from "../generated/planner";

export { PRESETS } from "../generated/planner";
export type { Budget, ByHitRate, Choice, Forecast, Footprint, MachineMemory, MemoryPlan, PlanError, PlanOptions, PresetName, Rates } from "../generated/planner";

/** One plan's request: what every plan shares and the choice. */
export interface PlanRequest extends PlanOptions {
  choice: Choice;
}

export type PlanOutcome = { plan: MemoryPlan; forecast?: Forecast } | { error: PlanError };

/** One row of `presetPlans`: a preset (or "custom") and its plan or refusal. */
export type PresetRow = { preset: PresetName | "custom" } & PlanOutcome;

export interface Planner {
  /** The plan for one choice, or why there is none. */
  planFor(footprint: Footprint, machine: MachineMemory, request: PlanRequest): PlanOutcome;
  /** Every preset in `PRESETS` order, then `custom` when given. */
  presetPlans(footprint: Footprint, machine: MachineMemory, options: PlanOptions & { custom?: Budget }): PresetRow[];
  /** The released Kimi K3's footprint, from the spec's tensor catalogue. */
  releasedFootprint(): Footprint;
}

/** The module's exports (plan-wasm/src/exports.rs). */
interface Exports {
  memory: WebAssembly.Memory;
  k3_input(len: number): number;
  k3_output(): number;
  k3_plan(): number;
  k3_presets(): number;
  k3_released_footprint(): number;
}

const EXPORTS = ["k3_input", "k3_output", "k3_plan", "k3_presets", "k3_released_footprint"] as const;

function checkExports(raw: WebAssembly.Exports): Exports {
  if (!(raw.memory instanceof WebAssembly.Memory)) throw new Error("k3_plan.wasm exports no memory");
  for (const name of EXPORTS) {
    if (typeof raw[name] !== "function") throw new Error(`k3_plan.wasm exports no ${name}`);
  }
  return raw as unknown as Exports;
}

/** Compiles the module from its bytes (from `fetch` in the page, from a file under Node). */
export async function loadPlanner(bytes: BufferSource): Promise<Planner> {
  const { instance } = await WebAssembly.instantiate(bytes, {});
  const wasm = checkExports(instance.exports);
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();

  const call = (run: () => number, input?: unknown): unknown => {
    if (input !== undefined) {
      const text = encoder.encode(JSON.stringify(input));
      const ptr = wasm.k3_input(text.length) >>> 0;
      new Uint8Array(wasm.memory.buffer, ptr, text.length).set(text);
    }
    const len = run() >>> 0;
    const out = wasm.k3_output() >>> 0;
    return JSON.parse(decoder.decode(new Uint8Array(wasm.memory.buffer, out, len)));
  };

  return {
    planFor: (footprint, machine, request) => {
      const { choice, ...options } = request;
      return call(wasm.k3_plan, { footprint, machine, choice, ...options }) as PlanOutcome;
    },
    presetPlans: (footprint, machine, options) => {
      const answer = call(wasm.k3_presets, { footprint, machine, ...options }) as
        | { presets: PresetRow[] }
        | { error: PlanError };
      // A request the module cannot read (BadRequest) is every preset's refusal.
      if ("error" in answer) return PRESETS.map((preset) => ({ preset, error: answer.error }));
      return answer.presets;
    },
    releasedFootprint: () => call(wasm.k3_released_footprint) as Footprint,
  };
}

let shared: Promise<Planner> | null = null;

/** The page's planner: public/k3_plan.wasm beside index.html, fetched and compiled once. */
export function planner(): Promise<Planner> {
  shared ??= fetch(new URL("k3_plan.wasm", document.baseURI))
    .then((response) => {
      if (!response.ok) throw new Error(`k3_plan.wasm: HTTP ${response.status}`);
      return response.arrayBuffer();
    })
    .then(loadPlanner);
  shared.catch(() => {
    shared = null; // a failed load is retried on the next call
  });
  return shared;
}
