// The one Node API the UI's tests use (reading public/k3_plan.wasm in
// src/plan/wasmPlanner.test.ts); tsconfig loads no Node types otherwise.
declare module "node:fs/promises" {
  export function readFile(path: URL | string): Promise<Uint8Array<ArrayBuffer>>;
}
