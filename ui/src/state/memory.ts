// Settings › Memory, the pure half: sizes as people type them, the budget sliders' scale, and what
// a choice is called. Tested in components/MemorySettings.test.tsx; the controller
// (controllers/memory.ts) plans and applies, the component (MemorySettings.tsx) draws.
import type { MemoryChoice } from "../generated/ipc";

const UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12 };

/** "3 GB" → 3e9, "300kb" → 3e5, "2.5" → 2.5e9 (GB when no unit); null when not a size. Decimal
 * units, as the engine prints them. */
export function parseSize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?b)?\s*$/i.exec(text);
  if (!m) return null;
  const bytes = Number(m[1]) * UNITS[(m[2] ?? "gb").toLowerCase()]!;
  return Number.isFinite(bytes) && bytes > 0 ? Math.round(bytes) : null;
}

/** A whole number of positions, or null. */
export function parseContext(text: string): number | null {
  return /^\s*\d+\s*$/.test(text) ? Number(text) : null;
}

export const sameChoice = (a: MemoryChoice, b: MemoryChoice) => JSON.stringify(a) === JSON.stringify(b);
export const choiceLabel = (c: MemoryChoice) => (c.kind === "preset" ? c.name : "custom");

/** A slider position 0…SLIDER_STEPS ↔ bytes between `min` and `max`, logarithmic (budgets span
 * kilobytes to hundreds of gigabytes). */
export const SLIDER_STEPS = 1000;
export const toSlider = (bytes: number, min: number, max: number) =>
  max <= min ? 0 : Math.round((Math.log(Math.min(Math.max(bytes, min), max) / min) / Math.log(max / min)) * SLIDER_STEPS);
export const fromSlider = (step: number, min: number, max: number) => (max <= min ? min : Math.round(min * (max / min) ** (step / SLIDER_STEPS)));
