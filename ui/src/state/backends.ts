// Settings › Backends, the pure half: the Add form's checks and where a backend's key is kept, in
// words. Tested in components/BackendSettings.test.tsx; the controller (controllers/backends.ts)
// talks to the engine, the components draw.
import type { BackendView, NewBackend } from "../generated/ipc";

export const EMPTY_BACKEND: NewBackend = { name: "", baseUrl: "", apiKey: "", model: "" };
export const isHttpUrl = (url: string) => /^https?:\/\/\S+$/i.test(url.trim());

/** The first problem with the Add form, in words; null when it can be sent. */
export function backendFormProblem(f: NewBackend): string | null {
  if (!f.name.trim()) return "Give the backend a name.";
  if (!isHttpUrl(f.baseUrl)) return "The base URL starts with http:// or https:// (for example https://host/v1).";
  if (!f.model.trim()) return "Enter the model id the endpoint serves (its /v1/models lists them).";
  return null;
}

export function keyWords(b: BackendView): string {
  if (b.key === "systemKeyring") return "key in the system keyring";
  if (b.key === "userFile") return "key in a file only you can read (no system keyring answered)";
  return "no key";
}
