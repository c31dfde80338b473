// What every end-to-end journey shares: named steps that print "ok"/"FAIL" with their time and
// count towards the closing "N passed, N failed" line (scripts/test.sh sums it), and checks.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { KEYS } from './webdriver.mjs';

/** Where screenshots go: target/e2e-screenshots/. */
export const SHOTS = new URL('../target/e2e-screenshots/', import.meta.url).pathname;
mkdirSync(SHOTS, { recursive: true });

export function check(cond, message) {
  if (!cond) throw new Error(message);
}

export async function screenshot(d, name) {
  writeFileSync(SHOTS + name, await d.screenshot());
}

/** A journey's step runner; `onFail` runs before a failing step rethrows (a screenshot, say). */
export function journey(onFail = async () => undefined) {
  const tally = { passed: 0, failed: 0 };
  tally.step = async (name, body) => {
    const start = Date.now();
    try {
      await body();
      tally.passed += 1;
      console.log(`ok   ${name} (${Date.now() - start} ms)`);
    } catch (e) {
      tally.failed += 1;
      console.log(`FAIL ${name}: ${e.stack || e}`);
      await onFail().catch(() => undefined);
      throw e;
    }
  };
  tally.summary = () => `${tally.passed} passed, ${tally.failed} failed`;
  return tally;
}

/** Replaces a field's value the way a person does: go to the end, backspace, type. */
export async function retype(d, css, value) {
  const field = await d.until(css, async () => (await d.findAll(css))[0]);
  await d.click(field);
  await d.type(field, KEYS.end + KEYS.backspace.repeat(12) + String(value));
  const now = await d.exec(`return document.querySelector(${JSON.stringify(css)}).value;`);
  check(now === String(value), `${css} reads ${now}, expected ${value}`);
}

/** Opens the conversation settings, sets greedy decoding and max tokens, saves. */
export async function setGreedyMaxTokens(d, n) {
  if ((await d.findAll('#max-tokens')).length === 0) {
    await d.click(await d.find('button[aria-label="Conversation settings"]'));
  }
  await retype(d, '#temperature', 0);
  await retype(d, '#max-tokens', n);
  await d.click(await d.find('button[aria-label="Save settings"]'));
  await d.until('the settings panel to close after saving', async () => (await d.findAll('#max-tokens')).length === 0);
}

/** The messages of the open conversation as the window shows them. */
export const messages = (d) =>
  d.exec(`return [...document.querySelectorAll('.message')].map(m => ({
    role: m.dataset.role, status: m.dataset.status, id: m.dataset.id || null,
    text: (m.querySelector('.content') || m).textContent }));`);

/** The demo model's greedy reply to GOLDEN.prompt (written by the chat journey, which runs
 * first): the setup journeys' downloaded and adopted copies of the same weights, run
 * streamed from a packed trunk, must answer with exactly this text. */
export const GOLDEN = { prompt: 'Say something long', maxTokens: 24, file: SHOTS + 'golden-reply.json' };

/** In a new chat, greedy at GOLDEN.maxTokens, sends GOLDEN.prompt and checks the reply equals the
 * demo model's (the chat journey's) text exactly. */
export async function askGolden(d) {
  const golden = JSON.parse(readFileSync(GOLDEN.file, 'utf8'));
  await d.click(await d.find('button[aria-label="New chat"]'));
  await d.until('an empty conversation', async () => (await messages(d)).length === 0);
  await setGreedyMaxTokens(d, golden.maxTokens);
  const composer = await d.find('#composer');
  await d.type(composer, golden.prompt);
  await d.type(composer, KEYS.enter);
  await d.until('a finished reply', async () => (await d.findAll('.message[data-role=assistant][data-status=complete]')).length === 1, 120000);
  const reply = (await messages(d)).find((m) => m.role === 'assistant');
  check(reply.text === golden.text, `the reply differs from the demo model's:\n${reply.text}\n---\n${golden.text}`);
}

/** Kills the app with SIGKILL (no clean exit: what a crash or power loss leaves) and ends the
 * WebDriver session it belonged to. `app` is the binary's absolute path. */
export async function killApp(d, app) {
  const { execFileSync } = await import('node:child_process');
  execFileSync('pkill', ['-KILL', '-f', `^${app}( |$)`]);
  await d.quit().catch(() => undefined);
}

/** Starts `app` (a fresh install or a restart) through the WebDriver at `base` and waits for
 * the chat on the demo model, choosing "Try the demo model" when the wizard offers it. */
export async function launchOnDemo(base, app) {
  const { WebDriver } = await import('./webdriver.mjs');
  const driver = await WebDriver.start(base, app);
  await driver.until('the composer and the demo banner', async () =>
    (await driver.findAll('#composer')).length === 1 && (await driver.findAll('[data-testid=demo-banner]')).length === 1, 60000);
  if ((await driver.findAll('[data-testid=try-demo]')).length > 0) {
    await driver.click(await driver.find('[data-testid=try-demo]'));
    await driver.until('the wizard to close', async () => (await driver.findAll('.wizard')).length === 0);
  }
  return driver;
}

/** Calls an app command from the page (what the window's buttons call); a refusal comes back as
 * `{ failed }`. */
export const invoke = (driver, cmd, args) =>
  driver.cmd('POST', '/execute/async', {
    script: `const done = arguments[arguments.length - 1];
      window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1]).then(done, (e) => done({ failed: e }));`,
    args: [cmd, args],
  });

/** Opens Settings (the top bar's button) on `section`, named as its list shows it. */
export async function openSettings(d, section) {
  await d.click(await d.find('button[aria-label="App settings"]'));
  await d.until('the settings sheet', async () => (await d.findAll('.app-settings-nav button')).length > 0);
  const found = await d.exec(
    `const b = [...document.querySelectorAll('.app-settings-nav button')].find(b => b.textContent === arguments[0]); if (b) b.click(); return !!b;`,
    [section],
  );
  check(found, `no Settings section "${section}"`);
}
