// Drives arbor serve's pages in chromium for internal/web/browser_test.go.
// argv: BASE_URL RUN_ID ARTIFACT_DIR. Prints one line per step; exits 1
// with the failing step on stderr.
import { chromium } from "playwright-core";

const [base, run, artifacts] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const timeout = 30000; // hang guard per step

const step = (s) => console.log("step: " + s);
const browser = await chromium.launch({
  executablePath,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  page.setDefaultTimeout(timeout);
  page.on("dialog", (d) => d.accept());
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));

  step("open the run page");
  await page.goto(`${base}/runs/${run}`);
  await page.waitForSelector("#live.on");
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.screenshot({ path: `${artifacts}/run-start.png`, fullPage: true });

  step("the ask node goes active live, its dependent waits");
  await page.waitForSelector("#n-3.st-active");
  await page.waitForSelector("#n-4.st-pending");

  step("answer the ask from the page");
  const ask = page.locator('form.ask[data-node="3"]');
  await ask.locator('input[name="answer"]').fill("10K-100K");
  await ask.locator('button[type="submit"]').click();
  await page.waitForSelector("#n-3.st-complete");
  step("the dependent node starts");
  await page.waitForSelector("#n-4.st-active, #n-4.st-complete");

  step("approve the write");
  const approval = page.locator("form.approval").first();
  await approval.waitFor();
  const what = await approval.textContent();
  if (!what.includes("write_file")) throw new Error("approval form does not name write_file: " + what);
  await approval.getByRole("button", { name: "Allow once" }).click();
  await page.waitForSelector("#n-2.st-complete");
  await page.screenshot({ path: `${artifacts}/run-approved.png`, fullPage: true });

  const same = await page.evaluate(() => window.__sameDocument === true);
  if (!same) throw new Error("the run page reloaded: updates must be live");

  step("stop a node from its page");
  await page.goto(`${base}/runs/${run}/nodes/5`);
  await page.waitForSelector("#live.on");
  await page.getByRole("button", { name: "Stop #5" }).click();
  await page.waitForFunction(() => document.querySelector("#node-state")?.textContent === "cancelled");

  step("a node's transcript shows its tool call and result");
  await page.goto(`${base}/runs/${run}/nodes/2`);
  const call = await page.locator(".call").first().textContent();
  if (!call.includes("write_file") || !call.includes("report.txt")) throw new Error("tool call not shown: " + call);
  await page.locator(".result").first().waitFor();
  await page.screenshot({ path: `${artifacts}/node-2.png`, fullPage: true });

  step("the run completes");
  await page.goto(`${base}/runs/${run}`);
  await page.waitForSelector("#run-status.s-complete, #run-status:text('complete')");
  await page.waitForFunction(() => document.querySelector("#run-status")?.textContent === "complete");
  await page.screenshot({ path: `${artifacts}/run-complete.png`, fullPage: true });

  step("phone width");
  await page.setViewportSize({ width: 375, height: 800 });
  await page.screenshot({ path: `${artifacts}/run-phone.png`, fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
  if (overflow) throw new Error("the run page is wider than a phone's screen");

  step("keyboard: the first node link takes focus by Tab");
  await page.keyboard.press("Tab"); // skip link
  let focused = "";
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press("Tab");
    focused = await page.evaluate(() => document.activeElement?.getAttribute("href") || "");
    if (focused.includes("/nodes/")) break;
  }
  if (!focused.includes("/nodes/")) throw new Error("no node link reachable by Tab: " + focused);

  if (errors.length) throw new Error("script errors on the page: " + errors.join("; "));
  step("done");
} catch (e) {
  console.error("FAILED: " + (e && e.stack || e));
  process.exitCode = 1;
} finally {
  await browser.close();
}
