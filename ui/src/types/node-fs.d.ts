// The Node APIs the UI's tests use (reading public/k3_plan.wasm in
// src/plan/wasmPlanner.test.ts; listing and reading the sources in
// src/components/onlyRender.test.ts); tsconfig loads no Node types otherwise.
declare module "node:fs/promises" {
  export function readFile(path: URL | string): Promise<Uint8Array<ArrayBuffer>>;
  export function readFile(path: URL | string, encoding: "utf8"): Promise<string>;
  export function readdir(path: URL | string, options: { recursive: true }): Promise<string[]>;
}
