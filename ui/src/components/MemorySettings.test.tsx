// Settings › Memory: parsing sizes, and the layer placement against a scripted backend (no page
// planner under jsdom, so every plan shown is the backend's).
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it } from "vitest";
import { setTransport, type Transport } from "../api/engine";
import type { MemoryChoice, MemoryView, Placement, PlanPreview, ReplanProgressEvent } from "../generated/ipc";
import { mount, settle, unmount } from "../test/dom";
import { parseSize } from "../state/memory";
import { MemorySettings } from "./MemorySettings";

describe("parseSize", () => {
  it("reads decimal units as the engine prints them, GB when none is given", () => {
    expect(parseSize("3 GB")).toBe(3e9);
    expect(parseSize("300kb")).toBe(3e5);
    expect(parseSize(" 2.5 ")).toBe(2.5e9);
    expect(parseSize("1.5 TB")).toBe(1.5e12);
    expect(parseSize("12 B")).toBe(12);
  });

  it("refuses what is not a positive size", () => {
    for (const bad of ["", "GB", "-3 GB", "0", "3 GiB", "3e9", "1,5 GB"]) expect(parseSize(bad), bad).toBeNull();
  });
});

// ---- the layer placement ----

const laptop: MemoryChoice = { kind: "preset", name: "laptop" };
const planOf = (choice: MemoryChoice, pinnedLayers: number): PlanPreview => ({
  choice,
  problem: null,
  pinnedLayers,
  layers: 3,
  ringSlots: 1,
  trunkBytes: 4e6,
  expertSlots: 10,
  cacheBytes: 4e7,
  totalBytes: 4.4e7,
  headroomBytes: 1e9,
  tight: false,
  secondsLow: 0.5,
  defaultContext: null,
  largestBatch: null,
  secondsHigh: 0.7,
});
const viewOf = (placement: Placement, previewPlacement: Placement, note: string | null): MemoryView => ({
  current: laptop,
  placement,
  previewPlacement,
  costPlacementNote: note,
  currentPlan: planOf(laptop, 1),
  // The cost rule's previews pin two layers where the prefix pins one: what the page shows tells them apart.
  presets: [planOf(laptop, previewPlacement === "cost" ? 2 : 1)],
  streamedTrunk: true,
  minTrunkBytes: 3.6e6,
  minCacheBytes: 4e7,
  wholeTrunkBytes: 1.2e7,
  forecastNote: null,
  contextLength: 512,
  previewContextLength: 512,
  maxContextLength: 4096,
  kvBytesPerPosition: 1000,
  planner: { footprint: {}, machine: { total_bytes: 8e9 }, streamedTrunk: true, ioThreads: 4, reserveBytes: 0, rates: null } as unknown as MemoryView["planner"],
});

class ScriptedMemory implements Transport {
  calls: [string, Record<string, unknown>][] = [];
  pendingWhatIf: (() => void) | null = null;
  constructor(public view: MemoryView) {}
  async call<T>(cmd: string, args: Record<string, unknown>): Promise<T> {
    this.calls.push([cmd, args]);
    if (cmd === "memory_what_if") {
      const placement = args.placement as Placement;
      // Held until released, as the backend's first cost plan waits on measuring the CPU.
      await new Promise<void>((r) => (this.pendingWhatIf = r));
      return viewOf(this.view.placement, placement, this.view.costPlacementNote) as T;
    }
    return structuredClone(this.view) as T;
  }
  async generate(): Promise<number> {
    throw new Error("not scripted");
  }
  async stream<T, E>(cmd: string, args: Record<string, unknown>, onEvent: (e: E) => void): Promise<T> {
    this.calls.push([cmd, args]);
    (onEvent as (e: ReplanProgressEvent) => void)({ layersDone: 1, layersTotal: 2 });
    this.view = viewOf(args.placement as Placement, args.placement as Placement, null);
    return { model: { memory: "1 of 3 layers pinned (placed by measured cost)" }, view: this.view, tookMs: 1200 } as T;
  }
}

let root: HTMLElement | null = null;
const $ = <T extends Element = HTMLElement>(sel: string) => root!.querySelector<T>(sel);
const radio = (value: string) => $<HTMLInputElement>(`input[name=memory-placement][value=${value}]`)!;
const applyButton = () => [...root!.querySelectorAll<HTMLButtonElement>("button")].find((b) => b.textContent?.startsWith("Apply"))!;

async function open(view: MemoryView): Promise<ScriptedMemory> {
  const backend = new ScriptedMemory(view);
  setTransport(backend);
  root = await mount(<MemorySettings />);
  return backend;
}

afterEach(() => {
  unmount(root);
  root = null;
});

describe("layer placement", () => {
  it("offers only the prefix, saying why, when the cost cannot be weighed here", async () => {
    await open(viewOf("prefix", "prefix", "Placing layers by measured cost weighs the drive: run the drive speed test first."));
    expect(radio("prefix").checked).toBe(true);
    expect(radio("cost").disabled).toBe(true);
    expect($("[data-testid=cost-placement-note]")!.textContent).toContain("run the drive speed test first");
  });

  it("shows no placement for a model without a packed trunk, and a saved placement by cost is dropped on the next apply", async () => {
    const noTrunk = { ...viewOf("cost", "cost", "This model has no packed trunk, so every layer stays in RAM: there is nothing to place."), streamedTrunk: false };
    const backend = await open(noTrunk);
    expect($("[data-testid=memory-placement]")).toBeNull();
    expect(backend.calls.at(-1)).toEqual(["memory_what_if", { contextLength: 512, placement: "prefix" }]);
    await act(() => backend.pendingWhatIf!());
    await settle();
    await act(() => applyButton().click());
    await settle();
    expect(backend.calls.find((c) => c[0] === "apply_memory")![1]).toEqual({ choice: laptop, contextLength: null, placement: "prefix" });
  });

  it("plans the presets by cost in the backend, shows them only once planned, and applies the placement", async () => {
    const backend = await open(viewOf("prefix", "prefix", null));
    expect(radio("cost").disabled).toBe(false);
    expect($("[data-testid=memory-settings]")!.textContent).toContain("1/3 layers pinned");
    await act(() => radio("cost").click());
    await settle();
    expect(backend.calls.at(-1)).toEqual(["memory_what_if", { contextLength: 512, placement: "cost" }]);
    // The prefix's plans are not passed off as the cost rule's while it plans.
    expect($("fieldset.preset-choices [role=status]")!.textContent).toBe(" · planning by measured cost…");
    expect(applyButton().disabled).toBe(true);
    await act(() => backend.pendingWhatIf!());
    await settle();
    expect($("fieldset.preset-choices [role=status]")).toBeNull();
    expect($("fieldset.preset-choices")!.textContent).toContain("2/3 layers pinned");
    expect(applyButton().disabled).toBe(false);
    await act(() => applyButton().click());
    await settle();
    const applied = backend.calls.find((c) => c[0] === "apply_memory")!;
    expect(applied[1]).toEqual({ choice: laptop, contextLength: null, placement: "cost" });
    expect($("[data-testid=memory-applied]")!.textContent).toContain("placed by measured cost");
    expect($("[data-testid=memory-settings] > p.muted")!.textContent).toContain("In force: laptop placed by measured cost");
  });
});

describe("default context", () => {
  const ultra: MemoryChoice = { kind: "preset", name: "ultra" };
  const rows = (a: number | null, b: number | null) => ({
    ...viewOf("prefix", "prefix", null),
    presets: [{ ...planOf(ultra, 0), defaultContext: a }, { ...planOf(laptop, 1), defaultContext: b }],
  });
  const legend = () => $("fieldset.preset-choices legend")!.textContent!;
  const lines = () => [...root!.querySelectorAll("fieldset.preset-choices .plan-line")].map((l) => l.textContent!);

  it("is said once when every preset shares it", async () => {
    await open(rows(1048576, 1048576));
    expect(legend()).toContain("default context 1,048,576 positions for each");
    for (const line of lines()) expect(line).not.toContain("default context");
  });

  it("is said on each row when the presets differ", async () => {
    await open(rows(359162, 313219));
    expect(legend()).not.toContain("default context");
    expect(lines()[0]).toContain("default context 359,162 positions");
    expect(lines()[1]).toContain("default context 313,219 positions");
  });
});

describe("conversations at once", () => {
  const ultra: MemoryChoice = { kind: "preset", name: "ultra" };
  const lines = () => [...root!.querySelectorAll("fieldset.preset-choices .plan-line")].map((l) => l.textContent!);

  const legend = () => $("fieldset.preset-choices legend")!.textContent!;

  it("says how many conversations each preset keeps live at once, and nothing for one", async () => {
    await open({ ...viewOf("prefix", "prefix", null), presets: [{ ...planOf(ultra, 0), largestBatch: 1 }, { ...planOf(laptop, 1), largestBatch: 6 }] });
    expect(lines()[0]).not.toContain("at once");
    expect(lines()[1]).toContain("memory for 6 conversations at once");
    expect(legend()).not.toContain("at once");
  });

  it("says it once when every preset shares it", async () => {
    await open({ ...viewOf("prefix", "prefix", null), presets: [{ ...planOf(ultra, 0), largestBatch: 36 }, { ...planOf(laptop, 1), largestBatch: 36 }] });
    expect(legend()).toContain("memory for 36 conversations at once");
    for (const line of lines()) expect(line).not.toContain("at once");
  });
});
