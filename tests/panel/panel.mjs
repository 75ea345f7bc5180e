// The web panel in headless Chromium against the real daemon: log in with the token, start a session, answer its confirmation, see steps arrive, stop a second one, and screenshots at phone and desktop sizes (PANEL_URL, PANEL_TOKEN, PANEL_SHOTS).
import { chromium } from "playwright-core";
import { join } from "node:path";

const url = process.env.PANEL_URL, token = process.env.PANEL_TOKEN, shots = process.env.PANEL_SHOTS;
const fail = (why) => { console.error("FAIL: " + why); process.exit(1); };

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
  await big.goto(url + "/#token=" + encodeURIComponent(token));
  await big.waitForSelector("#app:not([hidden])");
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
  console.log("panel: ok");
} finally {
  await browser.close();
}
