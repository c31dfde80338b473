// What blocks a wizard step: each blocker in words, and "Continue anyway" only on the ones the user
// may override, confirming with the override key the Rust side expects.
import { afterEach, describe, expect, it } from "vitest";
import type { Blocker } from "../../generated/ipc";
import { mount, unmount } from "../../test/dom";
import { Blockers, blockerText } from "./Blockers";

let root: HTMLElement | null = null;
afterEach(() => {
  unmount(root);
  root = null;
});

describe("the wizard's blockers", () => {
  it("words each blocker", () => {
    expect(blockerText({ kind: "noStoreChosen" })).toBe("Choose a folder for the model store.");
    expect(blockerText({ kind: "networkDrive", message: "an NFS share" })).toBe("The store is on an NFS share.");
    expect(blockerText({ kind: "tooLittleMemory", message: "3.1 GB free, 4 GB needed" })).toBe("3.1 GB free, 4 GB needed. Close other apps, then check again.");
  });

  it("offers Continue anyway on the warnings only, with their override key", async () => {
    const confirmed: string[] = [];
    const blockers: Blocker[] = [{ kind: "noPreset" }, { kind: "slowDrive", message: "120 MB/s" }, { kind: "cpuLacksAvx2", message: "no avx2" }];
    root = await mount(<Blockers blockers={blockers} onConfirm={(k) => confirmed.push(k)} />);
    const items = [...root.querySelectorAll(".blockers li")];
    expect(items.map((li) => li.querySelector("button") !== null)).toEqual([false, true, true]);
    for (const b of root.querySelectorAll<HTMLButtonElement>(".blockers button")) b.click();
    expect(confirmed).toEqual(["slowDrive", "cpu"]);
  });

  it("draws nothing when nothing blocks", async () => {
    root = await mount(<Blockers blockers={[]} onConfirm={() => undefined} />);
    expect(root.innerHTML).toBe("");
  });
});
