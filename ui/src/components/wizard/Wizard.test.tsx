// The wizard's job screen against a scripted backend: access denied shows the token field and a
// saved token retries; files that failed their hash are listed and downloaded again; Cancel stops
// the job, keeps the bytes and returns to the drive choice with a note saying so.
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { setTransport, type Transport } from "../../api/engine";
import type { SetupEvent, SetupSettings } from "../../generated/ipc";
import { Wizard } from "./Wizard";

const settings: SetupSettings = {
  step: "download", repo: "moonshotai/Kimi-K3", storeDir: "/models/k3", trunkDir: null, preset: "auto", speed: null,
  overrides: [], dismissed: false, adopted: false,
};

type Run = (emit: (e: SetupEvent) => void) => Promise<unknown>;

class Scripted implements Transport {
  calls: [string, Record<string, unknown>][] = [];
  runs: Run[] = [];
  step = settings.step;
  release: (() => void) | null = null;
  async call<T>(cmd: string, args: Record<string, unknown>): Promise<T> {
    this.calls.push([cmd, args]);
    if (cmd === "setup_pause") this.release?.();
    if (cmd === "setup_choose") this.step = (args.choice as { backTo: SetupSettings["step"] }).backTo;
    const answers: Record<string, unknown> = {
      setup_status: { settings: { ...settings, step: this.step }, wizard: true, running: false },
      setup_choose: { ...settings, step: this.step },
      setup_pause: true,
      setup_token: null,
      setup_examine: null,
    };
    return answers[cmd] as T;
  }
  async stream<T, E>(cmd: string, _args: Record<string, unknown>, onEvent: (e: E) => void): Promise<T> {
    this.calls.push([cmd, {}]);
    const next = this.runs.shift();
    if (!next) throw new Error("no scripted run left");
    // The wizard's jobs stream setup events.
    return (await next(onEvent as (e: SetupEvent) => void)) as T;
  }
  async generate(): Promise<number> {
    throw new Error("not scripted");
  }
  names() {
    return this.calls.map((c) => c[0]);
  }
}

const failure = (message: string) => ({ code: "DOWNLOAD", message, details: null });

let root: HTMLElement;
let backend: Scripted;
const flush = () => act(() => new Promise<void>((r) => setTimeout(r, 20)));
const $ = <T extends Element = HTMLElement>(sel: string) => root.querySelector<T>(sel);
const button = (text: string) => [...root.querySelectorAll("button")].find((b) => b.textContent?.trim() === text);

async function open() {
  await act(() => render(<Wizard initial={settings} onReady={() => undefined} onClose={() => undefined} />, root));
  await flush();
}

beforeEach(() => {
  backend = new Scripted();
  setTransport(backend);
  root = document.createElement("div");
  document.body.append(root);
});

afterEach(() => {
  act(() => render(null, root));
  root.remove();
});

describe("the wizard's download screen", () => {
  it("asks for a token on 401 and retries with it", async () => {
    backend.runs.push(async (emit) => {
      emit({ type: "problem", problem: { kind: "denied", url: "https://hub/resolve/x", status: 401, tokenPath: "/home/me/.cache/huggingface/token", tokenFromEnv: false } });
      throw failure("access denied (HTTP 401)");
    });
    backend.runs.push(async () => null);
    await open();
    expect($("[data-problem=denied]")?.textContent).toContain("HTTP 401");
    expect($("[data-problem=denied]")?.textContent).toContain("/home/me/.cache/huggingface/token");
    await act(() => {
      const field = $<HTMLInputElement>("input[name=hf-token]")!;
      field.value = "hf_secret";
      field.dispatchEvent(new Event("input", { bubbles: true }));
    });
    await act(() => button("Save token and try again")!.click());
    await flush();
    expect(backend.calls.find((c) => c[0] === "setup_token")?.[1]).toEqual({ token: "hf_secret" });
    expect(backend.names().filter((n) => n === "setup_run")).toHaveLength(2);
  });

  it("says HF_TOKEN must change when the environment's token was refused", async () => {
    backend.runs.push(async (emit) => {
      emit({ type: "problem", problem: { kind: "denied", url: "https://hub/x", status: 403, tokenPath: "/t", tokenFromEnv: true } });
      throw failure("access denied (HTTP 403)");
    });
    await open();
    expect($("[data-problem=denied]")?.textContent).toMatch(/HF_TOKEN is set .* change it there/);
    expect($("input[name=hf-token]")).toBeNull();
  });

  it("lists the files that failed their hash and downloads only them again", async () => {
    backend.runs.push(async (emit) => {
      emit({ type: "problem", problem: { kind: "badFiles", files: [{ path: "model-00003-of-000096.safetensors", expected: "a".repeat(64), got: "b".repeat(64) }] } });
      throw failure("1 of 96 files could not be fetched");
    });
    backend.runs.push(async () => null);
    await open();
    const card = $("[data-problem=badFiles]")!;
    expect(card.textContent).toContain("1 file failed the integrity check twice");
    expect(card.textContent).toContain("model-00003-of-000096.safetensors");
    expect(card.textContent).toContain("aaaaaaaaaaaaaaaa…");
    await act(() => button("Download it again")!.click());
    await flush();
    expect(backend.names().filter((n) => n === "setup_run")).toHaveLength(2);
  });

  it("cancel stops the job, keeps the bytes and goes back to the drives with a note", async () => {
    backend.runs.push(
      (emit) =>
        new Promise((resolve) => {
          emit({ type: "pinned", commit: "c".repeat(40), files: 96, totalBytes: 1_560_900_000_000, keptBytes: 812_400_000_000 });
          backend.release = () => {
            emit({ type: "stopped" });
            resolve(null);
          };
        }),
    );
    await open();
    await act(() => $<HTMLButtonElement>("[data-testid=cancel-download]")!.click());
    await flush();
    const names = backend.names();
    expect(names.indexOf("setup_pause")).toBeLessThan(names.indexOf("setup_choose"));
    expect((backend.calls.find((c) => c[0] === "setup_choose")?.[1].choice as { backTo: string }).backTo).toBe("drives");
    expect($(".wizard")?.getAttribute("data-step")).toBe("drives");
    expect($(".wizard-note")?.textContent).toBe(
      "Download cancelled. 812.4 GB of 1.56 TB kept in /models/k3; starting again resumes from there.",
    );
  });
});
