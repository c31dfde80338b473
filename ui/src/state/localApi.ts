// Settings › Local API, the pure half: the form the user edits, its checks (a port people can point a
// client at, a key and an address for the LAN), and the words for each problem the server reports.
// Tested in localApi.test.ts; the component (LocalApiSettings.tsx) only draws and forwards.
import type { ApiProblem, ApiSettings, ApiStatus } from "../generated/ipc";

export interface ApiForm {
  port: string;
  apiKey: string;
  lan: boolean;
  lanAddress: string;
}

export function toApiForm(s: ApiSettings): ApiForm {
  return { port: String(s.port), apiKey: s.apiKey, lan: s.lan, lanAddress: s.lanAddress };
}

/** The settings to start the server with, or the first problem in words. */
export function parseApiForm(f: ApiForm): ApiSettings | string {
  const port = f.port.trim() === "" ? NaN : Number(f.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return "The port must be a whole number from 1 to 65535.";
  const apiKey = f.apiKey.trim();
  if (f.lan && apiKey === "") return "Serving other devices on the network needs an API key.";
  if (f.lan && f.lanAddress.trim() === "") return "Give this computer's address on the network (for example 192.168.1.20).";
  return { enabled: true, port, apiKey, lan: f.lan, lanAddress: f.lanAddress.trim() };
}

/** One sentence per problem, naming the port or address. */
export function describeProblem(p: ApiProblem): string {
  switch (p.kind) {
    case "portTaken":
      return p.nextFree === null
        ? `Port ${p.port} is in use by another program, and none of the next 100 ports is free.`
        : `Port ${p.port} is in use by another program. Port ${p.nextFree} is free.`;
    case "lanNeedsKey":
      return "Serving other devices on the network needs an API key.";
    case "badAddress":
      return `The server cannot listen on ${p.address || "an empty address"}: ${p.reason}.`;
    case "badPort":
      return "Port 0 is not a port a client can connect to; choose one from 1 to 65535.";
    case "failed":
      return `The local API did not start: ${p.message}`;
  }
}

/** Whether the form differs from what the running server uses (so "Apply" restarts it). */
export function formChanged(f: ApiForm, s: ApiSettings): boolean {
  const a = toApiForm(s);
  return a.port !== f.port.trim() || a.apiKey !== f.apiKey.trim() || a.lan !== f.lan || (f.lan && a.lanAddress !== f.lanAddress.trim());
}

/** The one-line state: "Running at …", "Off", or why it is not running. */
export function statusLine(s: ApiStatus): string {
  if (s.running && s.baseUrl) {
    const busy = s.generationsInFlight > 0 ? ` · ${s.generationsInFlight} generating or waiting` : "";
    return `Running at ${s.baseUrl} · ${s.requests} ${s.requests === 1 ? "request" : "requests"} answered${busy}`;
  }
  return s.problem ? `Not running: ${describeProblem(s.problem)}` : "Off";
}

/** A fresh random key (32 hex digits) from the platform's CSPRNG. */
export function randomKey(bytes = 16): string {
  const b = new Uint8Array(bytes);
  crypto.getRandomValues(b);
  return "k3-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
