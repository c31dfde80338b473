// Build and test configuration for the k3-desktop web UI.
// Owns: bundling ui/ into ui/dist (relative base so Tauri serves it from any path) and the vitest setup.
// JSX goes through Vite's built-in oxc transform with Preact's automatic runtime: no framework plugin.
import { defineConfig } from "vitest/config";

export default defineConfig({
  base: "./",
  oxc: {
    jsx: { runtime: "automatic", importSource: "preact" },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // Tauri loads the bundle from disk: no need to split vendor chunks for caching.
    chunkSizeWarningLimit: 1024,
  },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.ts", "src/**/*.test.tsx"],
  },
});
