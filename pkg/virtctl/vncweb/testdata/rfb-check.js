// Runs the browser page's RFB client (../static/rfb.js) against a VNC server on a unix
// socket, as the page would through its websocket, and prints what it saw as JSON:
// test/node/vncweb_test.go runs it against a real QEMU.
"use strict";
const net = require("net");
const path = require("path");
const { RFB, keysymFor } = require(path.join(__dirname, "..", "static", "rfb.js"));

const socket = net.connect(process.argv[2]);
const seen = { width: 0, height: 0, name: "", covered: 0, updates: 0, resizes: 0, opaque: true };
const fail = (err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
};
setTimeout(() => fail(new Error("timed out; saw " + JSON.stringify(seen))), 20000);

const rfb = new RFB((bytes) => socket.write(Buffer.from(bytes)), {
  resize(w, h, name) {
    Object.assign(seen, { width: w, height: h, name });
    seen.resizes++;
  },
  raw(x, y, w, h, rgba) {
    if (rgba.length !== w * h * 4) fail(new Error(`raw rect ${w}x${h} with ${rgba.length} bytes`));
    for (let p = 3; p < rgba.length; p += 4) if (rgba[p] !== 255) seen.opaque = false;
    seen.covered += w * h;
  },
  copy() {},
  updated() {
    seen.updates++;
    if (seen.updates === 1) {
      // Input must not upset the server: the session goes on to the next update request.
      rfb.keyEvent(keysymFor({ key: "a", code: "KeyA" }), true);
      rfb.keyEvent(keysymFor({ key: "a", code: "KeyA" }), false);
      rfb.pointerEvent(10, 10, 1);
      rfb.pointerEvent(10, 10, 0);
      setTimeout(() => {
        seen.keysyms = {
          a: keysymFor({ key: "a", code: "KeyA" }), Enter: keysymFor({ key: "Enter", code: "Enter" }),
          F5: keysymFor({ key: "F5", code: "F5" }), ShiftLeft: keysymFor({ key: "Shift", code: "ShiftLeft" }),
          euro: keysymFor({ key: "€", code: "KeyE" }),
        };
        seen.open = !socket.destroyed;
        console.log(JSON.stringify(seen));
        process.exit(0);
      }, 500);
    }
  },
});
socket.on("data", (data) => rfb.receive(new Uint8Array(data)));
socket.on("error", fail);
socket.on("close", () => rfb.close(new Error("server closed the connection")));
rfb.done.catch(fail);
