// The memory planner in the page: k3-plan compiled to WebAssembly (plan-wasm/, built by
// scripts/build-wasm.sh into public/k3_plan.wasm), so the preset picker and the what-if view
// plan as the user drags a budget, with the engine's own arithmetic, from a footprint the app
// sends once.
// Owns: loading the module (fetch beside the page; given bytes under Node/Vitest), the
// JSON-through-memory protocol of plan-wasm/src/exports.rs, and the TypeScript mirror of
// plan-wasm/src/dto.rs (field names are snake_case as Rust writes them; change both together).
// Must not: compute a figure itself. Every number comes from the module; `k3 plan --json`
// prints the same objects (cli/tests/plan_wasm.rs holds them identical).
// Easy to break: byte counts are u64 in Rust and doubles here, exact below 2^53 (9 PB); the
// module's memory may grow during a call, so views of `memory.buffer` are made afresh each time.
// The Tauri CSP needs 'wasm-unsafe-eval' (script-src) and 'self' (connect-src) for this.

export type PresetName = "ultra" | "laptop" | "desktop" | "workstation" | "server" | "max" | "auto";

/** Every preset, in the engine's order (`Preset::ALL`). */
export const PRESETS: readonly PresetName[] = ["ultra", "laptop", "desktop", "workstation", "server", "max", "auto"];

/** A model's sizes in bytes (`k3_plan::Footprint`; `k3 plan --print-footprint` prints one). */
export interface Footprint {
  layer_trunk_bytes: number[];
  expert_bytes: number;
  n_experts_total: number;
  top_k: number;
  moe_layers: number;
  resident_bytes: number;
  head_bytes: number;
  /** Of `resident_bytes`, the embedding table (absent or 0: unknown, held). */
  embed_bytes?: number;
  /** Rows of the embedding table and head (absent or 0: unknown, both held). */
  vocab_rows?: number;
  state_bytes: number;
  kv_bytes_per_position: number;
  scratch_bytes: number;
  /** How each layer streams through a slot smaller than itself (absent or empty: whole layers only). */
  layer_pieces?: { largest_piece: number; eager_bytes: number }[];
}

/** The machine's memory (MemTotal, MemAvailable, an optional cgroup limit), bytes. */
export interface MachineMemory {
  total_bytes: number;
  available_bytes: number;
  cgroup?: { limit_bytes: number; usage_bytes: number } | null;
}

/** Trunk (pinned layers + ring) and expert-cache budgets, bytes. */
export interface Budget {
  trunk_bytes: number;
  cache_bytes: number;
}

/** A preset, or custom budgets. */
export type Choice = PresetName | Budget;

/** The drive's and the CPU's rates, bytes per second; with them each plan has a forecast. */
export interface Rates {
  disk_trunk_bytes_per_second: number;
  disk_expert_bytes_per_second: number;
  bf16_bytes_per_second: number;
  expert_bytes_per_second: number;
}

/** What every plan of a call shares. */
export interface PlanOptions {
  /** A packed trunk exists, so unpinned layers stream through the ring. */
  streamed_trunk: boolean;
  /** Positions the KV cache is reserved for (1 … 1,048,576). */
  context_length: number;
  /** Concurrent expert reads (1 … 256). */
  io_threads: number;
  rates?: Rates;
}

export interface PlanRequest extends PlanOptions {
  choice: Choice;
}

/** `k3 plan --json`'s object: the memory plan, its budgets (auto's as resolved) and inputs. */
export interface MemoryPlan {
  budget: Budget;
  layers: number;
  pinned_layers: number;
  pinned_bytes: number;
  ring_slots: number;
  ring_slot_bytes: number;
  /** The small tensors of the layers larger than a slot, streamed through it in pieces. */
  piece_eager_bytes: number;
  trunk_bytes: number;
  trunk_streamed: boolean;
  cache_slots: number;
  cache_slot_bytes: number;
  cache_bytes: number;
  io_buffer_bytes: number;
  fixed_bytes: number;
  /** Model-level tensors as the plan holds them (embeddings and head per `vocab`). */
  resident_model_bytes: number;
  /** Where the embeddings and head live: in RAM, or read from the checkpoint when used. */
  vocab: "held" | "read";
  state_bytes: number;
  kv_bytes_per_position: number;
  context_length: number;
  /** Work buffers of one prefill chunk (`prefill_chunk` tokens). */
  scratch_bytes: number;
  /** Tokens per prefill chunk, sized by the budgets. */
  prefill_chunk: number;
  total_bytes: number;
  /** MemAvailable capped by the cgroup; null when the machine gave 0. */
  mem_available_bytes: number | null;
  fits: boolean | null;
  /** `mem_available_bytes − total_bytes` (`k3_plan::headroom_bytes`); null when unknown. */
  headroom_bytes: number | null;
  /** Fits with less than `auto`'s headroom left; null when unknown. */
  tight: boolean | null;
  /** The largest context this choice keeps its trunk and cache at on this machine. */
  default_context: number | null;
  /** What each conversation live at once adds (its state and KV cache at the context). */
  per_sequence_bytes: number;
  /** The most conversations this choice keeps live at once; null when the machine is unknown. */
  largest_batch: number | null;
}

/** A figure at the floor, uniform-routing and ceiling expert hit rates. */
export interface ByHitRate {
  floor: number;
  uniform: number;
  ceiling: number;
}

/** `k3_plan::Forecast`: seconds per token of a plan (see plan/src/forecast.rs for the model). */
export interface Forecast {
  hit_rate: ByHitRate;
  expert_requests: number;
  trunk_bytes: number;
  expert_bytes: ByHitRate;
  io_seconds: ByHitRate;
  compute_bf16_bytes: number;
  compute_expert_bytes: number;
  compute_seconds: number;
  seconds_per_token: { low: number; high: number; expected_overlapped: number; expected_serial: number };
}

/** A refusal: `k3_plan::PlanError`'s variant with its numbers, and the text to show. */
export type PlanError = { message: string } & (
  | { kind: "TrunkBudgetTooSmall"; budget_bytes: number; minimum_bytes: number }
  | { kind: "TrunkNotPacked"; budget_bytes: number; trunk_bytes: number }
  | { kind: "CacheBudgetTooSmall"; budget_bytes: number; minimum_bytes: number; slot_bytes: number; minimum_slots: number }
  | { kind: "AutoTooSmall"; usable_bytes: number; needed_bytes: number }
  | { kind: "ExceedsAvailable"; needed_bytes: number; available_bytes: number }
  | { kind: "ContextLength"; requested: number; maximum: number }
  | { kind: "Sequences"; requested: number; maximum: number }
  | { kind: "BatchTooLarge"; sequences: number; largest: number; per_sequence_bytes: number; needed_bytes: number; available_bytes: number }
  | { kind: "IoThreads"; requested: number; maximum: number }
  | { kind: "UnknownPreset"; name: string }
  | { kind: "Size"; text: string; reason: string }
  | { kind: "Overflow"; what: string }
  | { kind: "Forecast" }
  | { kind: "BadRequest" }
);

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
