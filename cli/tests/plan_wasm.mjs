// Runs the planner's .wasm under Node for cli/tests/plan_wasm.rs: argv[2] is the module,
// stdin one call per line (`{"call": "plan" | "presets" | "released_footprint", "input": …}`),
// stdout the module's answer to each, one line each, exactly as the module wrote it (so the
// Rust side reads every u64 exactly). The protocol is plan-wasm/src/exports.rs's; the page's
// copy is ui/src/plan/wasmPlanner.ts.
import { readFileSync } from "node:fs";

const { instance } = await WebAssembly.instantiate(readFileSync(process.argv[2]), {});
const wasm = instance.exports;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const calls = { plan: wasm.k3_plan, presets: wasm.k3_presets, released_footprint: wasm.k3_released_footprint };

const out = [];
for (const line of readFileSync(0, "utf8").split("\n")) {
  if (!line.trim()) continue;
  const { call, input } = JSON.parse(line);
  const run = calls[call];
  if (typeof run !== "function") throw new Error(`no export for call ${call}`);
  if (input !== undefined) {
    // Re-encoded by Node, as the page does: the module must read what JSON.stringify writes.
    const bytes = encoder.encode(JSON.stringify(input));
    const ptr = wasm.k3_input(bytes.length) >>> 0;
    new Uint8Array(wasm.memory.buffer, ptr, bytes.length).set(bytes);
  }
  const len = run() >>> 0;
  const ptr = wasm.k3_output() >>> 0;
  out.push(decoder.decode(new Uint8Array(wasm.memory.buffer, ptr, len)));
}
process.stdout.write(out.join("\n") + "\n");
