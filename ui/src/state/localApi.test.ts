// The Local API form's checks and words (state/localApi.ts).
import { describe, expect, it } from "vitest";
import type { ApiSettings, ApiStatus } from "../generated/ipc";
import { describeProblem, formChanged, parseApiForm, randomKey, statusLine, toApiForm } from "./localApi";

const saved: ApiSettings = { enabled: true, port: 8000, apiKey: "", lan: false, lanAddress: "" };
const status = (over: Partial<ApiStatus>): ApiStatus => ({
  settings: saved, running: false, baseUrl: null, generationsInFlight: 0, requests: 0, log: [], problem: null, ...over,
});

describe("the local API form", () => {
  it("accepts a port and an optional key on loopback", () => {
    expect(parseApiForm({ port: " 8001 ", apiKey: " s3cret ", lan: false, lanAddress: "" })).toEqual({
      enabled: true, port: 8001, apiKey: "s3cret", lan: false, lanAddress: "",
    });
  });

  it("refuses ports out of range and the LAN without a key or an address", () => {
    for (const port of ["", "0", "65536", "80.5", "abc", "-1"]) {
      expect(parseApiForm({ port, apiKey: "", lan: false, lanAddress: "" })).toMatch(/port must be a whole number/);
    }
    expect(parseApiForm({ port: "8000", apiKey: "  ", lan: true, lanAddress: "192.168.1.2" })).toMatch(/needs an API key/);
    expect(parseApiForm({ port: "8000", apiKey: "k", lan: true, lanAddress: " " })).toMatch(/address on the network/);
  });

  it("knows when the form differs from the running settings", () => {
    const f = toApiForm(saved);
    expect(formChanged(f, saved)).toBe(false);
    expect(formChanged({ ...f, port: "8001" }, saved)).toBe(true);
    expect(formChanged({ ...f, apiKey: "k" }, saved)).toBe(true);
    expect(formChanged({ ...f, lanAddress: "10.0.0.2" }, saved)).toBe(false);
    expect(formChanged({ ...f, lan: true }, saved)).toBe(true);
  });
});

describe("the words", () => {
  it("name the taken port and offer the next free one", () => {
    expect(describeProblem({ kind: "portTaken", port: 8000, nextFree: 8001 })).toBe(
      "Port 8000 is in use by another program. Port 8001 is free.",
    );
    expect(describeProblem({ kind: "portTaken", port: 8000, nextFree: null })).toMatch(/none of the next 100/);
    expect(describeProblem({ kind: "badAddress", address: "0.0.0.0", reason: "it listens on every interface" })).toBe(
      "The server cannot listen on 0.0.0.0: it listens on every interface.",
    );
  });

  it("say where the server runs and how busy it is", () => {
    expect(statusLine(status({}))).toBe("Off");
    expect(statusLine(status({ running: true, baseUrl: "http://127.0.0.1:8000/v1", requests: 1 }))).toBe(
      "Running at http://127.0.0.1:8000/v1 · 1 request answered",
    );
    expect(statusLine(status({ running: true, baseUrl: "http://127.0.0.1:8000/v1", requests: 3, generationsInFlight: 2 }))).toBe(
      "Running at http://127.0.0.1:8000/v1 · 3 requests answered · 2 generating or waiting",
    );
    expect(statusLine(status({ problem: { kind: "lanNeedsKey" } }))).toBe(
      "Not running: Serving other devices on the network needs an API key.",
    );
  });

  it("make keys that differ", () => {
    const a = randomKey();
    expect(a).toMatch(/^k3-[0-9a-f]{32}$/);
    expect(randomKey()).not.toBe(a);
  });
});
