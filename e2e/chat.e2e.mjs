// End-to-end test of the desktop app in a real window (Xvfb + tauri-driver + WebKitWebDriver):
// launch on the bundled demo model, send a prompt and read its English reply, change settings
// and regenerate, ask the same through the local API, quit, start again and find the
// conversation restored. Screenshots of each step go to target/e2e-screenshots/; measured timings to
// target/e2e-screenshots/timings.json.
//
// Usage: node e2e/chat.e2e.mjs /absolute/path/to/k3-desktop   (tauri-driver on 127.0.0.1:4444)
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { GOLDEN, SHOTS as shots, check, journey, messages, retype, screenshot, setGreedyMaxTokens, openSettings } from './harness.mjs';
import { WebDriver, KEYS } from './webdriver.mjs';

const app = process.argv[2];
const base = process.env.WEBDRIVER_URL || 'http://127.0.0.1:4444';

// Greedy, the demo model answers this prompt with one sentence of 35 tokens (measured with
// `k3 chat --greedy`). Stop mid-reply is the dashboards journey's (its random-weight model
// writes until the limit).
const PROMPT = GOLDEN.prompt;

/** Common English words: a reply of English has several of them. */
const COMMON_WORDS = new Set(
  'the a an and or but of to in on at for with by from as is was were be been am are i you he she it we they me him her my your his our their not no so that this which who what very all said have had has do did would could should will shall must'.split(' '),
);

const timings = {};
const run = journey();
const step = run.step;
const shot = screenshot;

// In-page probes: timestamps (performance.now) of the Enter key and of the
// first DOM state that shows its effect, recorded by a MutationObserver.
const INSTALL_PROBES = `
  const k = (window.__k3 = { marks: {} });
  const mark = (n) => { if (k.marks[n] === undefined) k.marks[n] = performance.now(); };
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && e.target.id === 'composer') mark('send');
  }, true);
  const look = () => {
    // The first reply text on screen: streaming, or already saved (a short reply may arrive in one frame).
    const s = document.querySelector('.message[data-role=assistant] .content');
    if (k.marks.send !== undefined && s && s.textContent.length > 0) mark('firstToken');
  };
  new MutationObserver(look).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
`;

async function launch() {
  const t0 = Date.now();
  const d = await WebDriver.start(base, app);
  await d.until('the composer and the demo banner', async () => {
    const banner = await d.findAll('[data-testid=demo-banner]');
    const composer = await d.findAll('#composer');
    return banner.length === 1 && composer.length === 1;
  }, 60000);
  // A fresh install opens the setup wizard over the chat; "Try the demo model" closes it (and
  // the choice is remembered: the second launch opens straight on the chat).
  const wizard = await d.findAll('.wizard');
  if (wizard.length > 0) {
    await shot(d, '00-setup-wizard-welcome.png');
    await d.click(await d.find('[data-testid=try-demo]'));
    await d.until('the wizard to close', async () => (await d.findAll('.wizard')).length === 0);
  }
  return { d, ms: Date.now() - t0, wizard: wizard.length > 0 };
}

let first = null;
let saved = null;
let conversationTitle = null;

await step('launch: the window shows the chat on the demo model', async () => {
  first = await launch();
  check(first.wizard, 'a fresh install did not open the setup wizard');
  timings.launchToInteractiveMs = first.ms;
  const banner = await first.d.text(await first.d.find('[data-testid=demo-banner]'));
  check(/demo/i.test(banner), `banner: ${banner}`);
  await shot(first.d, '01-launched.png');
});

const d = first.d;

await step('send: the demo model answers in English, and the reply streams in', async () => {
  await d.click(await d.find('button[aria-label="New chat"]'));
  await d.until('an empty conversation', async () => (await messages(d)).length === 0);
  await setGreedyMaxTokens(d, 4000);
  await d.exec(INSTALL_PROBES);
  const composer = await d.find('#composer');
  await d.type(composer, PROMPT);
  await d.type(composer, KEYS.enter);
  // The trained demo ends its reply itself (an end of message, far below 4000 tokens).
  await d.until('a complete reply', async () => (await messages(d)).some((m) => m.role === 'assistant' && m.status === 'complete'), 60000);
  const reply = (await messages(d)).find((m) => m.role === 'assistant');
  const words = reply.text.match(/[A-Za-z]+/g) ?? [];
  const english = words.filter((w) => COMMON_WORDS.has(w.toLowerCase()));
  check(words.length >= 5 && english.length >= 3, `not English words: ${JSON.stringify(reply.text)}`);
  check(!/<\||\uFFFD/.test(reply.text), `markup or replacement characters shown: ${JSON.stringify(reply.text)}`);
  const stats = await d.text(await d.find('.message[data-role=assistant] .stats'));
  const written = Number(stats.match(/(\d+) output tokens/)?.[1]);
  check(written > 0 && written < 4000, `the reply should end itself before the limit: ${stats}`);
  console.log(`demo reply: ${reply.text}`);
  timings.demoReply = reply.text;
  await shot(d, '02-demo-reply.png');
  const marks = await d.exec('return window.__k3.marks;');
  check(marks.firstToken !== undefined, 'first token not observed');
  timings.sendToFirstTokenMs = Math.round(marks.firstToken - marks.send);
});

await step('settings + regenerate: a new reply of exactly max tokens replaces the first one', async () => {
  await setGreedyMaxTokens(d, GOLDEN.maxTokens);
  const before = (await messages(d)).find((m) => m.role === 'assistant');
  await d.click(await d.find('button[aria-label="Regenerate"]'));
  await d.until('a complete regenerated reply', async () => {
    const ms = await messages(d);
    const r = ms.find((m) => m.role === 'assistant');
    return ms.length === 2 && r && r.status === 'complete' && r.id && r.id !== before.id;
  }, 60000);
  const stats = await d.text(await d.find('.message[data-role=assistant] .stats'));
  check(new RegExp(`\\b${GOLDEN.maxTokens}\\b`).test(stats), `stats line should count ${GOLDEN.maxTokens} tokens: ${stats}`);
  saved = await messages(d);
  writeFileSync(GOLDEN.file, JSON.stringify({ ...GOLDEN, text: saved.find((m) => m.role === 'assistant').text }) + '\n');
  conversationTitle = await d.exec(
    `const li = document.querySelector('[data-testid=conversation-list] li[aria-current], [data-testid=conversation-list] li.active, [data-testid=conversation-list] li'); return li ? li.textContent : null;`,
  );
  await shot(d, '04-regenerated.png');
});

/** A port nothing listens on right now. */
const freePort = () =>
  new Promise((resolve, reject) => {
    const srv = createServer().once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });

const squash = (t) => t.replace(/\s+/g, ' ').trim();

await step('settings › local API: the toggle serves the window\'s model on loopback', async () => {
  const port = await freePort();
  await openSettings(d, 'Local API');
  await d.until('the settings sheet', async () => (await d.findAll('[data-testid=api-toggle]')).length === 1);
  await retype(d, '[data-testid=api-port]', port);
  await d.click(await d.find('[data-testid=api-toggle]'));
  const url = `http://127.0.0.1:${port}/v1`;
  await d.until('the API running', async () => (await d.text(await d.find('[data-testid=api-state]'))).startsWith(`Running at ${url}`));
  const models = await (await fetch(`${url}/models`)).json();
  const id = models.data[0].id;
  // The same prompt, greedy, as many tokens, through the API: the window's regenerated reply, word for word.
  const body = { model: id, messages: [{ role: 'user', content: PROMPT }], max_tokens: GOLDEN.maxTokens, temperature: 0 };
  const answer = await fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  check(answer.status === 200, `chat completion answered ${answer.status}`);
  const completion = await answer.json();
  check(completion.usage.completion_tokens === GOLDEN.maxTokens, `usage: ${JSON.stringify(completion.usage)}`);
  const windowReply = saved.find((m) => m.role === 'assistant').text;
  check(squash(completion.choices[0].message.content) === squash(windowReply),
    `the API's reply differs from the window's:\n${completion.choices[0].message.content}\n---\n${windowReply}`);
  await d.until('the request log', async () => /POST \/v1\/chat\/completions/.test(await d.text(await d.find('[data-testid=api-log]'))), 10000);
  await shot(d, '04b-local-api.png');
  await d.click(await d.find('[data-testid=api-toggle]'));
  await d.until('the API off', async () => (await d.text(await d.find('[data-testid=api-state]'))) === 'Off');
  const refused = await fetch(`${url}/models`).then(() => 'answered', () => 'refused');
  check(refused === 'refused', 'the port still answers after the toggle went off');
  await d.click(await d.find('button[aria-label="Close settings"]'));
  await d.until('the settings sheet to close', async () => (await d.findAll('[data-testid=app-settings]')).length === 0);
});

await step('restart: the conversation is restored from history', async () => {
  await d.quit();
  const again = await launch();
  check(!again.wizard, 'the wizard came back after "Try the demo model"');
  timings.relaunchToInteractiveMs = again.ms;
  const d2 = again.d;
  const items = await d2.until('the saved conversation in the list', async () => {
    const li = await d2.findAll('[data-testid=conversation-list] li');
    return li.length >= 1 ? li : null;
  });
  await shot(d2, '05-relaunched.png');
  const texts = await d2.exec(`return [...document.querySelectorAll('[data-testid=conversation-list] li')].map(li => li.textContent);`);
  const at = texts.findIndex((t) => t.includes(PROMPT));
  check(at >= 0, `conversation not listed: ${JSON.stringify(texts)} (before: ${conversationTitle})`);
  await d2.click(items[at]);
  await d2.until('the restored messages', async () => (await messages(d2)).length === saved.length);
  const restored = await messages(d2);
  check(
    JSON.stringify(restored.map((m) => [m.role, m.status, m.id, m.text])) ===
      JSON.stringify(saved.map((m) => [m.role, m.status, m.id, m.text])),
    `restored ${JSON.stringify(restored)} != saved ${JSON.stringify(saved)}`,
  );
  await shot(d2, '06-restored.png');
  await d2.quit();
});

writeFileSync(shots + 'timings.json', JSON.stringify(timings, null, 2) + '\n');
console.log(`timings: ${JSON.stringify(timings)}`);
console.log(`screenshots: ${shots}`);
console.log(run.summary());
process.exit(run.failed === 0 ? 0 : 1);
