// Drives virtctl's VNC page (pkg/virtctl/vncweb) in Debian's Chromium with playwright-core,
// as a person would: it opens the page, reads what the canvas shows, types on the keyboard
// and presses the page's Ctrl+Alt+Del button. The Go tests (test/node, test/e2e) send one
// JSON command a line on stdin and read one JSON answer a line on stdout:
//
//   {"op": "open", "url": "http://127.0.0.1:PORT/TOKEN/"}  → {"width", "height", "status"}
//   {"op": "shot", "path": "FILE.png"}                      → the canvas as a PNG in FILE
//   {"op": "type", "text": "echo hi >/dev/ttyS0\n"}         → typed key by key, Shift included
//   {"op": "cad"}                                           → the Ctrl+Alt+Del button clicked
//   {"op": "quit"}
//
// playwright-core comes from _output/browser/node_modules (hack/install-node-deps.sh; the
// tests set NODE_PATH); CHROMIUM overrides /usr/bin/chromium.
"use strict";
const fs = require("fs");
const readline = require("readline");
const { chromium } = require("playwright-core");

// Characters typed with Shift on a US keyboard, by the key that types them: a person presses
// Shift, so the page sends Shift_L before the key and QEMU picks the shifted scancode.
const shifted = {
  "~": "Backquote", "!": "Digit1", "@": "Digit2", "#": "Digit3", "$": "Digit4", "%": "Digit5",
  "^": "Digit6", "&": "Digit7", "*": "Digit8", "(": "Digit9", ")": "Digit0", "_": "Minus",
  "+": "Equal", "{": "BracketLeft", "}": "BracketRight", "|": "Backslash", ":": "Semicolon",
  "\"": "Quote", "<": "Comma", ">": "Period", "?": "Slash",
};

async function typeAsPerson(page, text) {
  for (const c of text) {
    if (c === "\n") await page.keyboard.press("Enter");
    else if (shifted[c]) await page.keyboard.press("Shift+" + shifted[c]);
    else if (c >= "A" && c <= "Z") await page.keyboard.press("Shift+Key" + c);
    else await page.keyboard.type(c);
    await page.waitForTimeout(15); // a fast typist; QEMU queues keys it gets faster
  }
}

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("console", (m) => process.stderr.write("page: " + m.text() + "\n"));
  page.on("pageerror", (e) => process.stderr.write("page error: " + e.message + "\n"));

  const ops = {
    async open({ url }) {
      await page.goto(url);
      // The first framebuffer update has been drawn.
      await page.waitForFunction(() => Number(document.getElementById("screen").dataset.updates || 0) >= 1, null, { timeout: 30000 });
      return page.evaluate(() => {
        const c = document.getElementById("screen");
        return { width: c.width, height: c.height, status: document.getElementById("status").textContent };
      });
    },
    async shot({ path }) {
      const url = await page.evaluate(() => document.getElementById("screen").toDataURL("image/png"));
      fs.writeFileSync(path, Buffer.from(url.slice(url.indexOf(",") + 1), "base64"));
      return {};
    },
    async type({ text }) {
      await page.click("#screen"); // focus, as a person clicks the screen to type
      await typeAsPerson(page, text);
      return {};
    },
    async cad() {
      await page.click("#cad");
      return {};
    },
  };

  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    const cmd = JSON.parse(line);
    if (cmd.op === "quit") break;
    let answer;
    try {
      answer = await ops[cmd.op](cmd);
    } catch (err) {
      answer = { error: String(err && err.message ? err.message : err) };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
  await browser.close();
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
