// Runs the browser page's RFB client (../static/rfb.js) against a VNC server on a unix
// socket, as the page would through its websocket, and prints what it saw as JSON:
// test/node runs it against a real QEMU (the client's tests and the VNC byte figures).
//
//   node rfb-check.js SOCKET [--encodings zrle,copyrect,raw,desktopsize] [--frame FILE]
//                            [--watch SECONDS]
//
// --frame writes the screen after the first update as RGBA bytes; --watch goes on reading
// updates for that long and reports the bytes they took.
"use strict";
const fs = require("fs");
const net = require("net");
const path = require("path");
const { RFB, keysymFor } = require(path.join(__dirname, "..", "static", "rfb.js"));

const args = { encodings: undefined, frame: "", watch: 0 };
for (let i = 3; i < process.argv.length; i += 2) {
  const [name, value] = [process.argv[i].replace(/^--/, ""), process.argv[i + 1]];
  if (name === "encodings") args.encodings = value.split(",");
  else if (name === "frame") args.frame = value;
  else if (name === "watch") args.watch = Number(value);
  else throw new Error("unknown flag " + process.argv[i]);
}

const socket = net.connect(process.argv[2]);
const seen = { width: 0, height: 0, name: "", covered: 0, updates: 0, resizes: 0, opaque: true };
const fail = (err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
};
setTimeout(() => fail(new Error("timed out; saw " + JSON.stringify(seen))), 20000 + args.watch * 1000);

let screen = new Uint8Array(0);
const rfb = new RFB((bytes) => socket.write(Buffer.from(bytes)), {
  resize(w, h, name) {
    Object.assign(seen, { width: w, height: h, name });
    seen.resizes++;
    screen = new Uint8Array(w * h * 4);
  },
  raw(x, y, w, h, rgba) {
    if (rgba.length !== w * h * 4) fail(new Error(`rect ${w}x${h} with ${rgba.length} bytes`));
    for (let p = 3; p < rgba.length; p += 4) if (rgba[p] !== 255) seen.opaque = false;
    for (let row = 0; row < h; row++) {
      screen.set(rgba.subarray(row * w * 4, (row + 1) * w * 4), ((y + row) * seen.width + x) * 4);
    }
    if (seen.updates === 0) seen.covered += w * h;
  },
  copy(sx, sy, x, y, w, h) {
    const rows = [];
    for (let row = 0; row < h; row++) rows.push(screen.slice(((sy + row) * seen.width + sx) * 4, ((sy + row) * seen.width + sx + w) * 4));
    rows.forEach((r, row) => screen.set(r, ((y + row) * seen.width + x) * 4));
  },
  updated() {
    seen.updates++;
    if (seen.updates !== 1) return;
    seen.firstScreenBytes = rfb.stats.bytes;
    if (args.frame) fs.writeFileSync(args.frame, screen);
    // Input must not upset the server: the session goes on to the next update request.
    rfb.keyEvent(keysymFor({ key: "Shift", code: "ShiftLeft" }), true);
    rfb.keyEvent(keysymFor({ key: "Shift", code: "ShiftLeft" }), false);
    rfb.pointerEvent(10, 10, 0);
    setTimeout(() => {
      seen.keysyms = {
        a: keysymFor({ key: "a", code: "KeyA" }), Enter: keysymFor({ key: "Enter", code: "Enter" }),
        F5: keysymFor({ key: "F5", code: "F5" }), ShiftLeft: keysymFor({ key: "Shift", code: "ShiftLeft" }),
        euro: keysymFor({ key: "€", code: "KeyE" }),
      };
      seen.watchedBytes = rfb.stats.bytes - seen.firstScreenBytes;
      seen.rects = rfb.stats.rects;
      seen.open = !socket.destroyed;
      console.log(JSON.stringify(seen));
      process.exit(0);
    }, 500 + args.watch * 1000);
  },
}, { encodings: args.encodings });
socket.on("data", (data) => rfb.receive(new Uint8Array(data)));
socket.on("error", fail);
socket.on("close", () => rfb.close(new Error("server closed the connection")));
rfb.done.catch(fail);
