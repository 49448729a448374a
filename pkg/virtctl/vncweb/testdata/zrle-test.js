// Tests of the page's ZRLE decoder (../static/rfb.js) on tiles written by hand, one per
// subencoding, and on a server's byte stream whose zlib stream spans two rectangles, as
// QEMU sends them. Run by zrle_test.go with `node --test`.
"use strict";
const assert = require("node:assert");
const path = require("node:path");
const test = require("node:test");
const zlib = require("node:zlib");
const { RFB, decodeTile } = require(path.join(__dirname, "..", "static", "rfb.js"));

const red = [255, 0, 0], green = [0, 255, 0], blue = [0, 0, 255], white = [255, 255, 255];

// pixels decodes one tile of w×h and returns its pixels as [r, g, b] triples.
function pixels(tile, w, h) {
  const rgba = new Uint8Array(w * h * 4);
  const end = decodeTile(Uint8Array.from(tile), 0, rgba, w, 0, 0, w, h);
  assert.strictEqual(end, tile.length, "the tile ends where its data does");
  const out = [];
  for (let i = 0; i < w * h; i++) {
    assert.strictEqual(rgba[i * 4 + 3], 255, "opaque");
    out.push([rgba[i * 4], rgba[i * 4 + 1], rgba[i * 4 + 2]]);
  }
  return out;
}

const tiles = [
  { name: "raw", w: 2, h: 2, tile: [0, ...red, ...green, ...blue, ...white], want: [red, green, blue, white] },
  { name: "solid", w: 3, h: 1, tile: [1, ...blue], want: [blue, blue, blue] },
  // Packed palette of 2 (1 bit per pixel, MSB first, each row padded to a byte).
  { name: "palette of 2", w: 3, h: 2, tile: [2, ...red, ...green, 0b10100000, 0b01000000], want: [green, red, green, red, green, red] },
  // Of 3 (2 bits per pixel).
  { name: "palette of 3", w: 3, h: 1, tile: [3, ...red, ...green, ...blue, 0b10010000], want: [blue, green, red] },
  // Of 5 (4 bits per pixel).
  { name: "palette of 5", w: 3, h: 1, tile: [5, ...red, ...green, ...blue, ...white, ...red, 0x32, 0x10], want: [white, blue, green] },
  // Plain RLE: a CPIXEL and a run length (1 + the sum of bytes up to one that is not 255).
  { name: "plain RLE", w: 5, h: 52, tile: [128, ...red, 1, ...green, 255, 2], want: [...Array(2).fill(red), ...Array(258).fill(green)] },
  // Palette RLE: an index alone is one pixel; with its top bit a run length follows.
  { name: "palette RLE", w: 5, h: 1, tile: [130, ...red, ...blue, 1, 128 | 0, 2, 1], want: [blue, red, red, red, blue] },
];

test("every subencoding", () => {
  for (const t of tiles) assert.deepStrictEqual(pixels(t.tile, t.w, t.h), t.want, t.name);
});

test("a tile cut anywhere asks for more", () => {
  for (const t of tiles) {
    for (let cut = 0; cut < t.tile.length; cut++) {
      const rgba = new Uint8Array(t.w * t.h * 4);
      assert.strictEqual(decodeTile(Uint8Array.from(t.tile.slice(0, cut)), 0, rgba, t.w, 0, 0, t.w, t.h), -1, `${t.name} cut at ${cut}`);
    }
  }
});

test("a tile that lies is refused", () => {
  const bad = [
    { name: "unused subencoding", tile: [17] },
    { name: "unused subencoding 129", tile: [129] },
    { name: "palette index past the palette", tile: [3, ...red, ...green, ...blue, 0b11000000] },
    { name: "palette RLE index past the palette", tile: [130, ...red, ...blue, 5] },
    { name: "run past the tile", tile: [128, ...red, 9] },
  ];
  for (const b of bad) {
    assert.throws(() => decodeTile(Uint8Array.from(b.tile), 0, new Uint8Array(3 * 4), 3, 0, 0, 3, 1), /ZRLE/, b.name);
  }
});

// server is what a VNC server without authentication sends up to its first update; nameLength
// is what ServerInit announces (the name itself is "test").
function serverHello(w, h, nameLength = 4) {
  const init = Buffer.alloc(24 + 4);
  init.writeUInt16BE(w, 0);
  init.writeUInt16BE(h, 2);
  init.writeUInt32BE(nameLength, 20);
  init.write("test", 24);
  return Buffer.concat([Buffer.from("RFB 003.008\n"), Buffer.from([1, 1]), Buffer.alloc(4), init]);
}

// rectHeader is a FramebufferUpdate of one rectangle, up to its encoding's own data.
function rectHeader(x, y, w, h, encoding, ...words) {
  const b = Buffer.alloc(4 + 12 + 4 * words.length);
  b.writeUInt8(0, 0);
  b.writeUInt16BE(1, 2);
  b.writeUInt16BE(x, 4);
  b.writeUInt16BE(y, 6);
  b.writeUInt16BE(w, 8);
  b.writeUInt16BE(h, 10);
  b.writeInt32BE(encoding, 12);
  words.forEach((v, i) => b.writeUInt32BE(v, 16 + 4 * i));
  return b;
}

// The guest's QEMU is the tenant's: what it announces must not make the page allocate or wait
// for more than a display's worth. Each server sends only the header that lies: the client
// must give up on it at once, not wait for the gigabytes it announces.
test("what a hostile server announces is refused", async () => {
  const cutText = Buffer.alloc(8);
  cutText.writeUInt8(3, 0);
  cutText.writeUInt32BE(1 << 30, 4);
  const copyFrom = (sx, sy) => { const b = Buffer.alloc(4); b.writeUInt16BE(sx, 0); b.writeUInt16BE(sy, 2); return b; };
  const cases = [
    { name: "a 65535x65535 display", bytes: serverHello(65535, 65535), want: /65535x65535 display/ },
    { name: "a 0x768 display", bytes: serverHello(0, 768), want: /0x768 display/ },
    { name: "a desktop name of 1 GiB", bytes: serverHello(640, 480, 1 << 30), want: /desktop name/ },
    { name: "a raw rectangle past the display", bytes: Buffer.concat([serverHello(640, 480), rectHeader(0, 0, 65535, 65535, 0)]), want: /outside the 640x480 display/ },
    { name: "a ZRLE rectangle past the display", bytes: Buffer.concat([serverHello(640, 480), rectHeader(600, 0, 64, 64, 16, 100)]), want: /outside the 640x480 display/ },
    { name: "4 GiB of ZRLE for 64x64 pixels", bytes: Buffer.concat([serverHello(640, 480), rectHeader(0, 0, 64, 64, 16, 0xffffffff)]), want: /ZRLE: 4294967295 compressed bytes/ },
    { name: "a copy from outside the display", bytes: Buffer.concat([serverHello(640, 480), rectHeader(0, 0, 64, 64, 1), copyFrom(630, 0)]), want: /at 630,0 outside/ },
    { name: "a desktop resize to 65535x65535", bytes: Buffer.concat([serverHello(640, 480), rectHeader(0, 0, 65535, 65535, -223)]), want: /65535x65535 display/ },
    { name: "1 GiB of clipboard", bytes: Buffer.concat([serverHello(640, 480), cutText]), want: /clipboard/ },
  ];
  for (const c of cases) {
    const rfb = new RFB(() => {}, { resize() {}, raw() {}, copy() {}, updated() {} });
    rfb.receive(new Uint8Array(c.bytes));
    const outcome = await Promise.race([
      rfb.done.then(() => "ended", (err) => err),
      new Promise((r) => setTimeout(() => r("still waiting"), 1000)),
    ]);
    rfb.close();
    assert.ok(outcome instanceof Error, `${c.name}: ${outcome}`);
    assert.match(outcome.message, c.want, c.name);
  }
});

test("a full-screen update of the largest display is taken", async () => {
  // 4K UHD, at most what maxPixels allows: one ZRLE rectangle of solid tiles.
  const w = 3840, h = 2160;
  const tiles = [];
  for (let i = 0; i < Math.ceil(w / 64) * Math.ceil(h / 64); i++) tiles.push(1, ...blue);
  const data = zlib.deflateSync(Buffer.from(tiles), { flush: zlib.constants.Z_SYNC_FLUSH });
  let drawn = null, updated;
  const update = new Promise((r) => { updated = r; });
  const rfb = new RFB(() => {}, { resize() {}, raw(x, y, rw, rh) { drawn = [rw, rh]; }, copy() {}, updated() { updated("updated"); } });
  rfb.receive(new Uint8Array(Buffer.concat([serverHello(w, h), rectHeader(0, 0, w, h, 16, data.length), data])));
  const outcome = await Promise.race([update, rfb.done.then(() => "ended", (err) => err), new Promise((r) => setTimeout(() => r("no update"), 10000))]);
  rfb.close();
  assert.strictEqual(outcome, "updated");
  assert.deepStrictEqual(drawn, [w, h]);
});

test("a server's ZRLE stream across rectangles and updates", async () => {
  const sent = [];
  const rects = [];
  let updates = 0;
  let resolveUpdate;
  const rfb = new RFB((b) => sent.push(Buffer.from(b)), {
    resize() {},
    raw(x, y, w, h, rgba) { rects.push({ x, y, w, h, rgba: Array.from(rgba) }); },
    copy() {},
    updated() { updates++; resolveUpdate(); },
  });
  // One deflate stream for the connection, flushed to a byte boundary after each rectangle
  // (Z_SYNC_FLUSH), as QEMU writes it.
  const stream = zlib.createDeflate({ flush: zlib.constants.Z_SYNC_FLUSH });
  const chunks = [];
  stream.on("data", (c) => chunks.push(c));
  const deflated = (tiles) => new Promise((resolve) => {
    chunks.length = 0;
    stream.write(Buffer.from(tiles), () => resolve(Buffer.concat(chunks)));
  });
  const rect = async (x, y, w, h, tiles) => {
    const data = await deflated(tiles);
    const header = Buffer.alloc(16);
    header.writeUInt16BE(x, 0);
    header.writeUInt16BE(y, 2);
    header.writeUInt16BE(w, 4);
    header.writeUInt16BE(h, 6);
    header.writeInt32BE(16, 8);
    header.writeUInt32BE(data.length, 12);
    return Buffer.concat([header, data]);
  };
  const update = (...rs) => Buffer.concat([Buffer.from([0, 0, 0, rs.length]), ...rs]);

  // 70×2: two tiles across (64 and 6 wide); then a second update with one more rectangle.
  const first = update(await rect(0, 0, 70, 2, [1, ...red, 1, ...green]), await rect(0, 2, 1, 1, [0, ...blue]));
  const second = update(await rect(5, 0, 1, 1, [1, ...white]));
  let waiting = new Promise((r) => { resolveUpdate = r; });
  const all = Buffer.concat([serverHello(70, 3), first]);
  // Byte by byte: the decoder must not care how the network cuts the stream.
  for (const b of all) rfb.receive(Uint8Array.of(b));
  await waiting;
  waiting = new Promise((r) => { resolveUpdate = r; });
  rfb.receive(new Uint8Array(second));
  await waiting;
  rfb.close();
  await rfb.done.catch(() => {});

  assert.strictEqual(updates, 2);
  const encodings = Buffer.concat(sent).subarray(12 + 1 + 1 + 20); // version, security, ClientInit, SetPixelFormat
  assert.deepStrictEqual(Array.from(encodings.subarray(0, 4)), [2, 0, 0, 4], "SetEncodings with 4 encodings");
  assert.strictEqual(encodings.readInt32BE(4), 16, "ZRLE first");
  assert.strictEqual(rects.length, 3);
  const px = (r, i) => r.rgba.slice(i * 4, i * 4 + 3);
  assert.deepStrictEqual([rects[0].w, rects[0].h], [70, 2]);
  assert.deepStrictEqual(px(rects[0], 0), red);
  assert.deepStrictEqual(px(rects[0], 63), red);
  assert.deepStrictEqual(px(rects[0], 64), green, "the second tile starts at x=64");
  assert.deepStrictEqual(px(rects[0], 70 + 69), green);
  assert.deepStrictEqual(px(rects[1], 0), blue);
  assert.deepStrictEqual(px(rects[2], 0), white, "the zlib stream goes on in the next update");
  assert.ok(rfb.stats.rects[16] === 3 && rfb.stats.bytes === all.length + second.length);
});
