// @vitest-environment node
// Components only render, and state/ only computes (issue 41): the engine client
// (api/engine.ts) is called from the feature controllers in src/controllers/, never from a
// component or from the pure rules in src/state/. Either may import its types (`import type`),
// nothing else. Dependencies run one way: components → controllers → state/.
import { readFile, readdir } from "node:fs/promises";
import { expect, test } from "vitest";

const here = new URL("./", import.meta.url);
const state = new URL("../state/", import.meta.url);

/** A value import of the engine client (a type-only import is fine). */
const VALUE_IMPORT = /^import\s+(?!type\b)[^;]*from\s+"(\.\.\/)+api\/engine"/m;

async function sources(dir: URL = here): Promise<string[]> {
  const all = await readdir(dir, { recursive: true });
  return all.filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f)).map((f) => f.replace(/\\/g, "/"));
}

test("no component calls the engine client; the controllers do", async () => {
  const calling: string[] = [];
  for (const file of await sources()) {
    const text = await readFile(new URL(file, here), "utf8");
    if (VALUE_IMPORT.test(text)) calling.push(file);
  }
  expect(calling, "these components call api/engine: move the calls into a controller in src/controllers/").toEqual([]);
});

test("the rules in state/ call no engine", async () => {
  const calling: string[] = [];
  for (const file of await sources(state)) {
    if (VALUE_IMPORT.test(await readFile(new URL(file, state), "utf8"))) calling.push(file);
  }
  expect(calling, "move these engine calls into src/controllers/").toEqual([]);
});

/** Any import from the components (state/ and controllers/ sit below them). */
const FROM_COMPONENTS = /^import\s[^;]*from\s+"\.\.\/components\//m;

test("state/ and controllers/ import nothing from the components", async () => {
  const upward: string[] = [];
  for (const [dir, name] of [[state, "state"], [new URL("../controllers/", import.meta.url), "controllers"]] as const) {
    for (const file of await sources(dir)) {
      if (FROM_COMPONENTS.test(await readFile(new URL(file, dir), "utf8"))) upward.push(`${name}/${file}`);
    }
  }
  expect(upward, "these import a component's module: move what they need into state/").toEqual([]);
});
