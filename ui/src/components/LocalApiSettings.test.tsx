// Settings › Local API against a scripted backend: off at first, the toggle starts the server, a taken
// port is shown with the free one offered (and only used when clicked), the LAN needs a key, and Esc
// closes Settings without reaching the chat.
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { setTransport, type Transport } from "../api/engine";
import { typeInto } from "../test/dom";
import type { ApiSettings, ApiStatus } from "../generated/ipc";
import { AppSettings } from "./AppSettings";

const off: ApiStatus = {
  settings: { enabled: false, port: 8000, apiKey: "", lan: false, lanAddress: "" },
  running: false, baseUrl: null, generationsInFlight: 0, requests: 0, log: [], problem: null,
};

class Scripted implements Transport {
  calls: [string, Record<string, unknown>][] = [];
  status: ApiStatus = off;
  taken = new Set([8000]);
  async call<T>(cmd: string, args: Record<string, unknown>): Promise<T> {
    this.calls.push([cmd, args]);
    if (cmd === "api_start") {
      const s = args.settings as ApiSettings;
      this.status = this.taken.has(s.port)
        ? { ...off, settings: { ...s, enabled: false }, problem: { kind: "portTaken", port: s.port, nextFree: s.port + 1 } }
        : {
            ...off, settings: s, running: true, baseUrl: `http://127.0.0.1:${s.port}/v1`, requests: 1,
            log: [{ atMs: 0, method: "GET", path: "/v1/models", status: 200, seconds: 0.002, peer: "127.0.0.1:5000" }],
          };
    } else if (cmd === "api_stop") {
      this.status = { ...this.status, running: false, baseUrl: null, settings: { ...this.status.settings, enabled: false } };
    }
    return structuredClone(this.status) as T;
  }
  async generate(): Promise<number> {
    throw new Error("not scripted");
  }
  async stream<T>(): Promise<T> {
    throw new Error("not scripted");
  }
  starts() {
    return this.calls.filter((c) => c[0] === "api_start").map((c) => (c[1].settings as ApiSettings).port);
  }
}

let root: HTMLElement;
let backend: Scripted;
let closed = 0;
const flush = () => act(() => new Promise<void>((r) => setTimeout(r, 20)));
const $ = <T extends Element = HTMLElement>(sel: string) => root.querySelector<T>(sel);
const text = (sel: string) => $(sel)?.textContent ?? "";
const input = (sel: string, value: string) => typeInto(root, sel, value);

beforeEach(async () => {
  backend = new Scripted();
  setTransport(backend);
  closed = 0;
  root = document.createElement("div");
  document.body.append(root);
  await act(() => render(<AppSettings initial="localApi" onClose={() => (closed += 1)} />, root));
  await flush();
});

afterEach(() => {
  act(() => render(null, root));
  root.remove();
});

describe("Settings › Local API", () => {
  it("is off by default and the toggle starts and stops it", async () => {
    expect(text("[data-testid=api-state]")).toBe("Off");
    expect($<HTMLInputElement>("[data-testid=api-port]")!.value).toBe("8000");
    backend.taken.clear();
    await act(() => $<HTMLInputElement>("[data-testid=api-toggle]")!.click());
    await flush();
    expect(backend.starts()).toEqual([8000]);
    expect(text("[data-testid=api-state]")).toBe("Running at http://127.0.0.1:8000/v1 · 1 request answered");
    expect(text("[data-testid=api-log]")).toContain("GET /v1/models");
    expect(text(".api-example")).toContain("curl http://127.0.0.1:8000/v1/models");
    await act(() => $<HTMLInputElement>("[data-testid=api-toggle]")!.click());
    await flush();
    expect(backend.calls.map((c) => c[0])).toContain("api_stop");
    expect(text("[data-testid=api-state]")).toBe("Off");
  });

  it("shows a taken port with the next free one and uses it only when asked", async () => {
    await act(() => $<HTMLInputElement>("[data-testid=api-toggle]")!.click());
    await flush();
    expect(text("[data-testid=api-state]")).toBe("Not running: Port 8000 is in use by another program. Port 8001 is free.");
    expect(backend.starts()).toEqual([8000]);
    await act(() => $<HTMLButtonElement>("[data-testid=api-use-free-port]")!.click());
    await flush();
    expect(backend.starts()).toEqual([8000, 8001]);
    expect(text("[data-testid=api-state]")).toMatch(/^Running at http:\/\/127\.0\.0\.1:8001\/v1/);
  });

  it("refuses a bad port and the LAN without a key before calling the app", async () => {
    await input("[data-testid=api-port]", "99999");
    await act(() => $<HTMLInputElement>("[data-testid=api-toggle]")!.click());
    expect(text("[role=alert]")).toMatch(/port must be a whole number/);
    await input("[data-testid=api-port]", "8002");
    await act(() => {
      const lan = root.querySelectorAll<HTMLInputElement>("label.switch input")[1]!;
      lan.click();
    });
    expect(text("[role=note]")).toMatch(/Anyone on your network who has the key/);
    await act(() => $<HTMLInputElement>("[data-testid=api-toggle]")!.click());
    expect(text("[role=alert]")).toMatch(/needs an API key/);
    expect(backend.starts()).toEqual([]);
  });

  it("closes on Esc, marked handled so the chat below does not stop a reply", async () => {
    const seen: boolean[] = [];
    const below = (e: KeyboardEvent) => seen.push(e.defaultPrevented);
    window.addEventListener("keydown", below);
    await act(() => void window.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true, cancelable: true })));
    window.removeEventListener("keydown", below);
    expect(closed).toBe(1);
    expect(seen).toEqual([true]);
  });
});
