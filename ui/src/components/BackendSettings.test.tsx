// Settings › Backends against a scripted app: an endpoint is added (the key sent once, never shown
// again), Test shows the reply time or the remote's own error, Remove takes it off the list; bad
// forms are refused before the app is called. A remote reply's stats show only what a remote has,
// and a failed reply shows why it failed.
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { setTransport, type Transport } from "../api/engine";
import { typeInto } from "../test/dom";
import { message, stats } from "../test/fixtures";
import type { BackendView, NewBackend } from "../generated/ipc";
import { AppSettings } from "./AppSettings";
import { backendFormProblem } from "../state/backends";
import { MessageView } from "./MessageView";

class Scripted implements Transport {
  calls: [string, Record<string, unknown>][] = [];
  list: BackendView[] = [];
  testFails = false;
  async call<T>(cmd: string, args: Record<string, unknown>): Promise<T> {
    this.calls.push([cmd, args]);
    if (cmd === "add_backend") {
      const b = args.backend as NewBackend;
      const view: BackendView = { id: "gpu-box", name: b.name, baseUrl: b.baseUrl, model: b.model, host: "10.0.0.5:8000", key: "systemKeyring" };
      this.list.push(view);
      return view as T;
    }
    if (cmd === "remove_backend") this.list = this.list.filter((b) => b.id !== args.id);
    if (cmd === "list_remote_models") return ["kimi-k3", "kimi-k3-thinking"] as T;
    if (cmd === "test_backend") {
      if (this.testFails) throw { code: "REMOTE", message: "http://10.0.0.5:8000/v1/models refused the API key (HTTP 401): check the key in Settings › Backends", details: null };
      return { models: ["kimi-k3"], reply: " Hello!", replyMs: 1250 } as T;
    }
    return structuredClone(this.list) as T;
  }
  async generate(): Promise<number> {
    throw new Error("not scripted");
  }
  async stream<T>(): Promise<T> {
    throw new Error("not scripted");
  }
}

let root: HTMLElement;
let app: Scripted;
const flush = () => act(() => new Promise<void>((r) => setTimeout(r, 20)));
const $ = <T extends Element = HTMLElement>(sel: string) => root.querySelector<T>(sel);
const text = (sel: string) => $(sel)?.textContent ?? "";
const click = async (sel: string) => {
  await act(() => $<HTMLButtonElement>(sel)!.click());
  await flush();
};

beforeEach(async () => {
  app = new Scripted();
  setTransport(app);
  root = document.createElement("div");
  document.body.append(root);
  await act(() => render(<AppSettings initial="backends" onClose={() => undefined} />, root));
  await flush();
});

afterEach(() => {
  act(() => render(null, root));
  root.remove();
});

describe("Settings › Backends", () => {
  it("adds an endpoint, tests it with its reply time, and removes it", async () => {
    expect(text("[data-testid=backend-settings]")).toContain("No remote backends: every chat is answered on this computer.");
    await typeInto(root, "[data-testid=backend-name]", " GPU box ");
    await typeInto(root, "[data-testid=backend-url]", "http://10.0.0.5:8000/v1");
    await typeInto(root, "[data-testid=backend-key]", "sk-secret");
    await click("[data-testid=backend-list-models]");
    expect(app.calls.find((c) => c[0] === "list_remote_models")![1]).toEqual({ baseUrl: "http://10.0.0.5:8000/v1", apiKey: "sk-secret" });
    expect($<HTMLInputElement>("[data-testid=backend-model]")!.value).toBe("kimi-k3");
    expect([...root.querySelectorAll("#backend-models option")].map((o) => o.getAttribute("value"))).toEqual(["kimi-k3", "kimi-k3-thinking"]);
    await click("[data-testid=backend-add]");
    expect(app.calls.find((c) => c[0] === "add_backend")![1]).toEqual({
      backend: { name: "GPU box", baseUrl: "http://10.0.0.5:8000/v1", apiKey: "sk-secret", model: "kimi-k3" },
    });
    expect(text("[data-testid=backend-list]")).toContain("kimi-k3 at 10.0.0.5:8000 · key in the system keyring");
    expect($<HTMLInputElement>("[data-testid=backend-key]")!.value).toBe("");
    expect(root.textContent).not.toContain("sk-secret");
    await click("[data-testid=backend-test]");
    expect(text("[data-testid=backend-test-result]")).toBe("Replied in 1.25 s: “Hello!” · serves kimi-k3");
    app.testFails = true;
    await click("[data-testid=backend-test]");
    expect(text("[data-testid=backend-test-result]")).toMatch(/refused the API key \(HTTP 401\)/);
    await act(() => [...root.querySelectorAll<HTMLButtonElement>("[data-testid=backend-list] button")].find((b) => b.textContent === "Remove")!.click());
    await flush();
    expect(app.calls.some((c) => c[0] === "remove_backend" && c[1].id === "gpu-box")).toBe(true);
    expect(text("[data-testid=backend-settings]")).toContain("No remote backends");
  });

  it("refuses a form without a name, an http(s) URL or a model id before calling the app", async () => {
    const ok = { name: "a", baseUrl: "https://h/v1", apiKey: "", model: "m" };
    expect(backendFormProblem(ok)).toBeNull();
    expect(backendFormProblem({ ...ok, name: " " })).toMatch(/name/);
    expect(backendFormProblem({ ...ok, baseUrl: "ftp://h/v1" })).toMatch(/http:\/\/ or https:\/\//);
    expect(backendFormProblem({ ...ok, model: "" })).toMatch(/model id/);
    await click("[data-testid=backend-add]");
    expect(text("[role=alert]")).toBe("Give the backend a name.");
    expect(app.calls.some((c) => c[0] === "add_backend")).toBe(false);
  });
});

describe("a remote reply in the chat", () => {
  const mount = (node: preact.ComponentChild) => {
    const el = document.createElement("div");
    render(node, el);
    return el;
  };
  const actions = { onRegenerate() {}, onEdit() {}, onSaveEdit() {}, onCancelEdit() {} };

  it("shows the remote's host, tokens and timing, and no I/O, hit-rate or bytes-read figures", () => {
    const s = stats({ remoteHost: "10.0.0.5:8000", ioShare: null, trueHitRate: null, bytesRead: 0 });
    const el = mount(<MessageView message={message({ id: 1, role: "assistant", content: "hi", stats: s })} saved canRegenerate={false} canEdit={false} editing={false} actions={actions} />);
    const line = el.querySelector(".stats")!;
    expect(line.querySelector("[data-stat=remote]")!.textContent).toBe("answered by 10.0.0.5:8000");
    expect(line.textContent).toContain("1,234 prompt + 512 output tokens");
    for (const gone of ["io", "hit", "read"]) expect(line.querySelector(`[data-stat=${gone}]`)).toBeNull();
  });

  it("shows why a failed reply failed", () => {
    const failure = "http://10.0.0.5:8000/v1/chat/completions: the stream ended before the reply did";
    const el = mount(<MessageView message={message({ id: 2, role: "assistant", content: "Half a reply", status: "failed", failure })} saved canRegenerate={false} canEdit={false} editing={false} actions={actions} />);
    expect(el.querySelector("[data-testid=failure-reason]")!.textContent).toBe(failure);
  });
});
