// Settings › Memory's plans computed in the page: the wasm planner's answers for the app's
// footprint and machine (sent once with the view), shaped as the backend's PlanPreview so the
// picker shows one kind of row whichever side planned it.
// Owns: the mapping MemoryChoice ↔ the module's Choice and PlanOutcome → PlanPreview. Must not:
// plan, or define headroom: the module does (`k3_plan::headroom_bytes`: what the machine has
// available, capped by its container, minus the plan; "tight" below `auto`'s reserve).
import type { MemoryChoice, PlanPreview, PlannerInputs } from "../generated/ipc";
import type { Choice, PlanOutcome, Planner } from "./wasmPlanner";

export function toWasmChoice(c: MemoryChoice): Choice {
  return c.kind === "preset" ? c.name : { trunk_bytes: c.trunkBytes, cache_bytes: c.cacheBytes };
}

export function toPreview(choice: MemoryChoice, outcome: PlanOutcome, inputs: PlannerInputs, layers: number): PlanPreview {
  const none = {
    choice, problem: null, pinnedLayers: 0, layers, ringSlots: 0, trunkBytes: 0, expertSlots: 0, cacheBytes: 0, totalBytes: 0,
    headroomBytes: 0, tight: false, secondsLow: null, secondsHigh: null, defaultContext: null, largestBatch: null,
  };
  if ("error" in outcome) return { ...none, problem: outcome.error.message };
  const p = outcome.plan;
  const headroom = p.headroom_bytes ?? inputs.machine.available_bytes - p.total_bytes;
  return {
    ...none,
    pinnedLayers: p.pinned_layers,
    ringSlots: p.ring_slots,
    trunkBytes: p.trunk_bytes,
    expertSlots: p.cache_slots,
    cacheBytes: p.cache_bytes,
    totalBytes: p.total_bytes,
    headroomBytes: headroom,
    tight: p.tight ?? headroom < inputs.reserveBytes,
    secondsLow: outcome.forecast?.seconds_per_token.low ?? null,
    secondsHigh: outcome.forecast?.seconds_per_token.high ?? null,
    defaultContext: p.default_context ?? null,
    largestBatch: p.largest_batch ?? null,
  };
}

/** `choice`'s plan at `contextLength`, planned in the page. */
export function planInPage(planner: Planner, inputs: PlannerInputs, choice: MemoryChoice, contextLength: number, layers: number): PlanPreview {
  const outcome = planner.planFor(inputs.footprint, inputs.machine, {
    choice: toWasmChoice(choice),
    streamed_trunk: inputs.streamedTrunk,
    context_length: contextLength,
    io_threads: inputs.ioThreads,
    ...(inputs.rates ? { rates: inputs.rates } : {}),
  });
  return toPreview(choice, outcome, inputs, layers);
}
