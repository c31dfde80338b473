// Settings › Performance and the Diagnostics log viewer against a scripted backend: the form's
// checks, Apply sending the counts and showing what the reopened model runs with, and the log's
// level filter.
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it } from "vitest";
import { setTransport, type Transport } from "../api/engine";
import { mount, settle, typeInto, unmount } from "../test/dom";
import type { LogTail, PerformanceView, Threads } from "../generated/ipc";
import { AppSettings } from "./AppSettings";
import { parseDraft, parseThreads } from "../state/performance";
import { filterLines } from "./LogViewer";

const view: PerformanceView = {
  saved: { compute: null, io: null },
  fromEnv: { compute: null, io: 6 },
  cores: 2,
  defaultIo: 4,
  maxIo: 64,
  inUse: { compute: 2, io: 6, readRequestBytes: 8 << 20, readDepth: 8 },
  speed: null,
  speedTestDir: null,
  speculation: { maxDraft: 0 },
  maxDraft: 32,
  resume: { keep: 4 },
  maxKeep: 64,
  savedStates: { count: 2, bytes: 750_000_000 },
};

const log: LogTail = {
  path: "/data/logs/k3-desktop.log",
  truncated: false,
  lines: [
    { time: "2026-12-01 20:40:06", level: "INFO", source: "k3_desktop::worker", message: "opened /m in 12 ms" },
    { time: "2026-12-01 20:40:07", level: "WARN", source: "k3_desktop::worker", message: "reply 3 failed: disk" },
  ],
};

class Scripted implements Transport {
  calls: [string, Record<string, unknown>][] = [];
  view = structuredClone(view);
  async call<T>(cmd: string, args: Record<string, unknown>): Promise<T> {
    this.calls.push([cmd, args]);
    if (cmd === "apply_performance") {
      const t = args.threads as Threads;
      this.view = { ...this.view, saved: t, inUse: { ...this.view.inUse!, compute: t.compute ?? 2, io: t.io ?? 6 } };
      return { name: "Demo" } as T;
    }
    if (cmd === "set_speculation") {
      this.view = { ...this.view, speculation: args.choice as PerformanceView["speculation"] };
      return null as T;
    }
    if (cmd === "set_resume") {
      this.view = { ...this.view, resume: args.choice as PerformanceView["resume"] };
      return null as T;
    }
    if (cmd === "read_log") return structuredClone(log) as T;
    if (cmd === "diagnostics") return "report" as T;
    return structuredClone(this.view) as T;
  }
  async generate(): Promise<number> {
    throw new Error("not scripted");
  }
  async stream<T>(): Promise<T> {
    throw new Error("not scripted");
  }
}

let root: HTMLElement | null = null;
const flush = settle;
const $ = <T extends Element = HTMLElement>(sel: string) => root!.querySelector<T>(sel);
const text = (sel: string) => $(sel)?.textContent ?? "";
const input = (sel: string, value: string) => typeInto(root!, sel, value);

async function open(initial: "performance" | "diagnostics"): Promise<Scripted> {
  const backend = new Scripted();
  setTransport(backend);
  root = await mount(<AppSettings initial={initial} onClose={() => undefined} />);
  return backend;
}

afterEach(() => {
  unmount(root);
  root = null;
});

describe("parseThreads", () => {
  it("keeps empty fields as the default and refuses counts the machine cannot run", () => {
    expect(parseThreads({ compute: "", io: " 8 " }, 2, 64)).toEqual({ compute: null, io: 8 });
    expect(parseThreads({ compute: "3", io: "" }, 2, 64)).toBe("Compute threads: a whole number from 1 to 2, or empty for the default.");
    expect(parseThreads({ compute: "1", io: "0" }, 2, 64)).toMatch(/^I\/O threads: a whole number from 1 to 64/);
    expect(parseThreads({ compute: "1.5", io: "" }, 2, 64)).toMatch(/^Compute threads/);
  });
});

describe("Settings › Performance", () => {
  it("shows the counts in use and the environment's default, and Apply reopens with the new ones", async () => {
    const backend = await open("performance");
    expect(text("[data-testid=threads-in-use]")).toContain("2 compute threads · 6 expert reads in flight · streamed reads 8 MiB × 8");
    expect($<HTMLInputElement>("input[aria-label='I/O threads']")!.placeholder).toBe("6 (K3_ASYNC_IO_THREADS=6)");
    expect(text("[data-testid=speed-result]")).toMatch(/^Not measured yet/);
    expect($<HTMLButtonElement>("[data-testid=speed-test]")!.disabled).toBe(true);
    await input("input[aria-label='Compute threads']", "5");
    await act(() => $<HTMLButtonElement>("button[type=submit]")!.click());
    expect(text("[role=status]")).toMatch(/^Compute threads: a whole number from 1 to 2/);
    expect(backend.calls.some((c) => c[0] === "apply_performance")).toBe(false);
    await input("input[aria-label='Compute threads']", "1");
    await input("input[aria-label='I/O threads']", "16");
    await act(() => $<HTMLButtonElement>("button[type=submit]")!.click());
    await flush();
    expect(backend.calls.filter((c) => c[0] === "apply_performance")).toEqual([["apply_performance", { threads: { compute: 1, io: 16 } }]]);
    expect(text("[role=status]")).toMatch(/^Applied: the model reopened in \d+\.\d s\.$/);
    expect(text("[data-testid=threads-in-use]")).toContain("1 compute thread · 16 expert reads in flight");
  });
});

describe("speculative decoding", () => {
  it("parses an empty field as off and refuses what one pass cannot carry", () => {
    expect(parseDraft(" ", 32)).toBe(0);
    expect(parseDraft("4", 32)).toBe(4);
    expect(parseDraft("33", 32)).toBe("Draft tokens: a whole number from 0 to 32.");
    expect(parseDraft("-1", 32)).toMatch(/^Draft tokens/);
    expect(parseDraft("2.5", 32)).toMatch(/^Draft tokens/);
  });

  it("saves the draft length without reopening the model", async () => {
    const backend = await open("performance");
    const form = "[data-testid=speculation-setting]";
    expect($<HTMLInputElement>(`${form} input`)!.value).toBe("");
    await input(`${form} input`, "40");
    await act(() => $<HTMLButtonElement>(`${form} button[type=submit]`)!.click());
    expect(text("[data-testid=speculation-setting-status]")).toBe("Draft tokens: a whole number from 0 to 32.");
    await input(`${form} input`, "4");
    await act(() => $<HTMLButtonElement>(`${form} button[type=submit]`)!.click());
    await flush();
    expect(backend.calls.filter((c) => c[0] === "set_speculation")).toEqual([["set_speculation", { choice: { maxDraft: 4 } }]]);
    expect(backend.calls.some((c) => c[0] === "apply_performance")).toBe(false);
    expect(text("[data-testid=speculation-setting-status]")).toBe("Saved: from the next reply, up to 4 drafted tokens are checked per pass.");
  });
});

describe("resume after a restart", () => {
  it("shows the states saved now and saves how many conversations keep theirs", async () => {
    const backend = await open("performance");
    const form = "[data-testid=resume-setting]";
    expect(text(form)).toContain("Now 2 saved, 750.0 MB in the app's data folder");
    expect($<HTMLInputElement>(`${form} input`)!.value).toBe("4");
    await input(`${form} input`, "65");
    await act(() => $<HTMLButtonElement>(`${form} button[type=submit]`)!.click());
    expect(text("[data-testid=resume-setting-status]")).toBe("Conversations kept: a whole number from 0 to 64.");
    await input(`${form} input`, "0");
    await act(() => $<HTMLButtonElement>(`${form} button[type=submit]`)!.click());
    await flush();
    expect(backend.calls.filter((c) => c[0] === "set_resume")).toEqual([["set_resume", { choice: { keep: 0 } }]]);
    expect(text("[data-testid=resume-setting-status]")).toBe("Saved: no engine state is kept; a restart replays each conversation.");
  });
});

describe("the log viewer", () => {
  it("lists the log's entries and filters them to warnings", async () => {
    await open("diagnostics");
    expect(text("[data-testid=log-viewer] code")).toBe("/data/logs/k3-desktop.log");
    expect(root!.querySelectorAll(".log-line")).toHaveLength(2);
    expect(text(".log-line.level-warn")).toContain("reply 3 failed: disk");
    await act(() => {
      const s = $<HTMLSelectElement>("select[aria-label='Log level']")!;
      s.value = "warnings";
      s.dispatchEvent(new Event("change", { bubbles: true }));
    });
    expect(root!.querySelectorAll(".log-line")).toHaveLength(1);
    expect(filterLines(log.lines, "warnings").map((l) => l.level)).toEqual(["WARN"]);
    expect(filterLines([log.lines[0]!], "warnings")).toEqual([]);
  });
});
