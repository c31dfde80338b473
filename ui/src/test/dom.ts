// DOM helpers for component tests: what a person does to a field, as Preact sees it.
import { act } from "preact/test-utils";

/** Sets the field under `root` matching `sel` to `value` and fires its input event. */
export const typeInto = (root: ParentNode, sel: string, value: string) =>
  act(() => {
    const el = root.querySelector<HTMLInputElement | HTMLTextAreaElement>(sel);
    if (!el) throw new Error(`no field ${sel}`);
    el.value = value;
    el.dispatchEvent(new Event("input", { bubbles: true }));
  });
