// The history's startup notice: what the user reads when the history file was damaged (set aside,
// a new one started) or belongs to a newer app (left alone, this session not saved).
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { HistoryNotice } from "../generated/ipc";
import { HistoryBanner } from "./Notices";

const damaged: HistoryNotice = {
  kind: "damaged",
  message:
    "Your chat history /data/chats.sqlite could not be used: it is not an SQLite database (wrong header). It was moved, unchanged, to /data/chats.sqlite.damaged-20260101T120000Z and the app started with an empty history.",
  file: "/data/chats.sqlite",
  setAside: ["/data/chats.sqlite.damaged-20260101T120000Z", "/data/chats.sqlite.damaged-20260101T120000Z-wal"],
  saved: true,
};

const tooNew: HistoryNotice = {
  kind: "tooNew",
  message: "Your chat history /data/chats.sqlite was written by a newer version of k3-desktop (schema 2; this version knows 1). It was left untouched. Chats in this session are not saved; update the app to use your history.",
  file: "/data/chats.sqlite",
  setAside: [],
  saved: false,
};

let root: HTMLElement;
beforeEach(() => {
  root = document.createElement("div");
  document.body.appendChild(root);
});
afterEach(() => {
  act(() => render(null, root));
  root.remove();
});

describe("HistoryBanner", () => {
  it("names every file set aside and can be dismissed once the new history is saved", () => {
    const onDismiss = vi.fn();
    act(() => render(<HistoryBanner notice={damaged} onDismiss={onDismiss} />, root));
    const banner = root.querySelector<HTMLElement>("[data-testid=history-notice]")!;
    expect(banner.getAttribute("role")).toBe("alert");
    expect(banner.dataset.kind).toBe("damaged");
    expect(banner.textContent).toContain("could not be used");
    const files = [...banner.querySelectorAll("li code")].map((c) => c.textContent);
    expect(files).toEqual(damaged.setAside);
    act(() => banner.querySelector<HTMLButtonElement>("button")!.click());
    expect(onDismiss).toHaveBeenCalledOnce();
  });

  it("keeps a not-saved warning up: no dismiss button, no file list", () => {
    act(() => render(<HistoryBanner notice={tooNew} onDismiss={() => undefined} />, root));
    const banner = root.querySelector<HTMLElement>("[data-testid=history-notice]")!;
    expect(banner.textContent).toContain("Chat history not saved");
    expect(banner.textContent).toContain("newer version");
    expect(banner.querySelector("button")).toBeNull();
    expect(banner.querySelector("ul")).toBeNull();
  });

  it("renders nothing without a notice", () => {
    act(() => render(<HistoryBanner notice={null} onDismiss={() => undefined} />, root));
    expect(root.innerHTML).toBe("");
  });
});
