// DOM helpers for component tests: mounting a component as the page would, and what a person
// does to a field, as Preact sees it.
import { render, type VNode } from "preact";
import { act } from "preact/test-utils";

/** Sets the field under `root` matching `sel` to `value` and fires its input event. */
export const typeInto = (root: ParentNode, sel: string, value: string) =>
  act(() => {
    const el = root.querySelector<HTMLInputElement | HTMLTextAreaElement>(sel);
    if (!el) throw new Error(`no field ${sel}`);
    el.value = value;
    el.dispatchEvent(new Event("input", { bubbles: true }));
  });

/** Lets pending effects and scripted backend replies land (20 ms of timers under `act`). */
export const settle = () => act(() => new Promise<void>((r) => setTimeout(r, 20)));

/** Renders `vnode` into a fresh element in the document and lets its first effects land. */
export async function mount(vnode: VNode): Promise<HTMLElement> {
  const el = document.createElement("div");
  document.body.append(el);
  await act(() => render(vnode, el));
  await settle();
  return el;
}

/** Unmounts what `mount` rendered into `el` (running effect clean-ups) and removes `el`. */
export function unmount(el: HTMLElement | null) {
  if (!el) return;
  act(() => render(null, el));
  el.remove();
}
