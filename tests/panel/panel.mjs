// The web panel in headless Chromium against the real daemon: log in with the token, start a session, answer its confirmation, see steps arrive, stop a second one, and screenshots at phone and desktop sizes (PANEL_URL, PANEL_TOKEN, PANEL_SHOTS); and privately: a page on another loopback port cannot frame it, the login fragment leaves no history, a report it opens cannot reach the token, nothing breaks its Content-Security-Policy.
import { chromium } from "playwright-core";
import { createServer } from "node:http";
import { join } from "node:path";

const url = process.env.PANEL_URL, token = process.env.PANEL_TOKEN, shots = process.env.PANEL_SHOTS;
const fail = (why) => { console.error("FAIL: " + why); process.exit(1); };
// The panel's own pages must never break its policy (an inline script, a stray fetch).
const strict = (p) => p.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) fail("CSP violation: " + m.text()); });

// Another local page, on another loopback port, that frames the panel.
const evilServer = createServer((req, res) => {
  res.writeHead(200, { "Content-Type": "text/html" });
  res.end(`<!doctype html><title>not voxdesk</title><iframe id="f" src="${url}/" width="800" height="600"></iframe>`);
});
await new Promise((ok) => evilServer.listen(0, "127.0.0.1", ok));
const evilUrl = `http://127.0.0.1:${evilServer.address().port}/`;

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
try {
  // A phone: 360 px wide, touch.
  const phone = await browser.newContext({ viewport: { width: 360, height: 740 }, deviceScaleFactor: 2, hasTouch: true });
  const page = await phone.newPage();
  page.on("pageerror", (e) => fail("page error: " + e.message));
  page.on("console", (m) => console.log("page: " + m.text()));
  strict(page);
  await page.goto(url + "/");
  // A wrong token is refused and said so.
  await page.fill("#token", "wrong");
  await page.press("#token", "Enter");
  await page.waitForFunction(() => document.getElementById("loginerr").textContent.includes("refused"));
  // The right one, typed with the keyboard.
  await page.fill("#token", token);
  await page.press("#token", "Enter");
  await page.waitForSelector("#app:not([hidden])");
  await page.waitForFunction(() => /ready|connected/.test(document.getElementById("state").textContent));
  // Logged in here, another local page in the same browser frames the panel: nothing of it
  // shows (frame-ancestors 'none'), so no Yes button can be clicked through a disguise.
  const evil = await phone.newPage();
  await evil.goto(evilUrl);
  await evil.waitForTimeout(1500);
  const framed = evil.frames().find((f) => f.parentFrame());
  if (!framed) fail("the framing page has no frame");
  const inside = await framed.$("#stop, #yes, #loginform").catch(() => null);
  if (inside) fail("the panel showed inside another page's frame");
  console.log("framed: blocked (" + framed.url() + ")");
  await evil.close();

  // The login fragment pasted into an open panel (a same-page navigation) logs in and leaves no
  // entry of this tab's history holding the token.
  const frag = await phone.newPage();
  strict(frag);
  frag.on("pageerror", (e) => fail("page error: " + e.message));
  await frag.goto(url + "/");
  await frag.goto(url + "/#token=" + encodeURIComponent(token));
  await frag.waitForSelector("#app:not([hidden])");
  for (const [what, u] of [["after login", frag.url()], ["back", (await frag.goBack(), frag.url())], ["forward", (await frag.goForward(), frag.url())]]) {
    if (u.includes(token) || u.includes("#token")) fail(`the token is in the tab's history (${what}): ${u}`);
  }
  await frag.close();

  // Nothing is wider than the phone.
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  if (wide > 360) fail(`the page is ${wide} px wide on a 360 px phone`);

  // Start a session in confirm mode and answer yes from the panel.
  await page.fill("#task", "click AC, click 7");
  await page.selectOption("#mode", "confirm");
  await page.click("#go");
  await page.waitForSelector("#confirm:not([hidden])", { timeout: 30000 });
  await page.screenshot({ path: join(shots, "phone-confirm.png"), fullPage: true });
  const q = await page.textContent("#question");
  console.log("asked: " + q);
  // One question per batch: answer yes to each until the session ends.
  const deadline = Date.now() + 60000;
  let answered = 0;
  while (Date.now() < deadline) {
    const st = await page.textContent("#state");
    if (/^(done|failed|stopped)/.test(st)) break;
    if (await page.isVisible("#confirm")) {
      await page.click("#yes", { timeout: 2000 }).then(() => answered++).catch(() => {});
    }
    await page.waitForTimeout(150);
  }
  const end = await page.textContent("#state");
  console.log(`answered ${answered}; ${end}`);
  if (!end.startsWith("done")) fail("the confirmed session did not end done: " + end);
  const steps = await page.$$eval("#steps li", (l) => l.map((x) => x.textContent));
  console.log("steps: " + JSON.stringify(steps));
  if (steps.length < 1 || !steps.some((s) => s.startsWith("verified"))) fail("no verified step shown: " + JSON.stringify(steps));
  await page.waitForSelector("#frame:not([hidden])");
  await page.screenshot({ path: join(shots, "phone.png"), fullPage: true });

  // A long session, stopped with the keyboard shortcut on a desktop-sized window.
  const desk = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const big = await desk.newPage();
  big.on("pageerror", (e) => fail("page error: " + e.message));
  strict(big);
  await big.goto(url + "/#token=" + encodeURIComponent(token));
  await big.waitForSelector("#app:not([hidden])");
  if (big.url().includes("token")) fail("the login fragment stayed in the address: " + big.url());
  await big.fill("#task", "wait 20 s, click 9");
  await big.selectOption("#mode", "auto");
  await big.click("#go");
  await big.waitForFunction(() => !document.getElementById("stop").disabled || document.getElementById("starterr").textContent, null, { timeout: 30000 });
  const refused = await big.textContent("#starterr");
  if (refused) fail("the second session did not start: " + refused);
  // The phone sees the same session start over its event stream.
  await page.waitForFunction(() => !document.getElementById("stop").disabled, null, { timeout: 10000 });
  await big.keyboard.press("Alt+S");
  await big.waitForFunction(() => document.getElementById("state").textContent.startsWith("stopped"), null, { timeout: 20000 });
  await page.waitForFunction(() => document.getElementById("state").textContent.startsWith("stopped"), null, { timeout: 10000 });
  // The history is fetched again when a session ends: wait for that answer.
  await big.waitForFunction(() => [...document.querySelectorAll("#history li")].some((l) => l.textContent.startsWith("stopped")), null, { timeout: 10000 }).catch(() => {});
  const hist = await big.$$eval("#history li", (l) => l.map((x) => x.textContent));
  console.log("history: " + JSON.stringify(hist));
  if (!hist.some((h) => h.startsWith("stopped")) || !hist.some((h) => h.startsWith("done"))) fail("history: " + JSON.stringify(hist));
  await big.screenshot({ path: join(shots, "desktop.png"), fullPage: true });

  // A report opened from the history: drawn (its styles and pictures), and with no way to the
  // token: no opener, nothing in its storage.
  const done = big.locator("#history li", { hasText: /^done/ }).locator("a").first();
  const [report] = await Promise.all([big.waitForEvent("popup"), done.click()]);
  await report.waitForLoadState();
  await report.waitForFunction(() => document.querySelector("h1") && [...document.images].every((i) => i.complete));
  const seen = await report.evaluate(() => ({
    opener: window.opener !== null,
    session: sessionStorage.getItem("voxdesk-token"),
    local: localStorage.getItem("voxdesk-token"),
    title: document.querySelector("h1").textContent,
    pictures: [...document.images].filter((i) => i.naturalWidth > 0).length,
    styled: getComputedStyle(document.body).backgroundColor,
  }));
  console.log("report: " + JSON.stringify({ ...seen, session: !!seen.session, local: !!seen.local }));
  if (seen.opener || seen.session || seen.local) fail("the report can reach the panel's token: " + JSON.stringify({ opener: seen.opener, session: !!seen.session, local: !!seen.local }));
  if (!seen.title.startsWith("Session ") || seen.pictures < 1 || seen.styled !== "rgb(246, 247, 249)") fail("the report is not drawn: " + JSON.stringify(seen));
  console.log("panel: ok");
} finally {
  await browser.close();
  evilServer.close();
}
