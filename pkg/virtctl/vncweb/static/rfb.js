// A small RFB (VNC) client for virtctl's browser page: protocol 3.3 to 3.8, no
// authentication (virt-api has authorized the stream; QEMU's VNC behind it asks for none),
// ZRLE (RFC 6143 7.7.6: the screen goes through kube-apiserver and virt-api compressed,
// inflated by the browser's own DecompressionStream), raw and copy-rect encodings, desktop
// resizes, keyboard and pointer. The protocol part knows nothing of the page: it reads
// bytes given to receive() and writes through send(), so the tests run it in Chromium against
// bytes they make and against a real QEMU (test/browser, rfb_test.go).
"use strict";

(function (root) {
  const encodingRaw = 0;
  const encodingCopyRect = 1;
  const encodingZRLE = 16;
  const encodingDesktopSize = -223;
  const encodingNames = { raw: encodingRaw, copyrect: encodingCopyRect, zrle: encodingZRLE, desktopsize: encodingDesktopSize };
  // The server is the guest's display in a launcher pod: the tenant's. Nothing it announces
  // may make the page allocate or wait for data without bound (pkg/vnc keeps the same).
  const maxPixels = 8 << 20; // 4K UHD fits; QEMU's standard VGA cannot show more
  const maxNameLength = 4 << 10;
  const maxCutText = 1 << 20;
  // zrleMaxBytes bounds one ZRLE rectangle's compressed data: raw tiles (a byte and 3 per
  // pixel) stored uncompressed by deflate (5 bytes per block) are less than 4 bytes a pixel;
  // 5 leaves room.
  const zrleMaxBytes = (w, h) => 5 * w * h + 4096;

  class RFB {
    // send(Uint8Array) writes to the server. display receives:
    //   resize(width, height, name), raw(x, y, w, h, rgba Uint8Array),
    //   copy(srcX, srcY, x, y, w, h), updated() after each framebuffer update, bell().
    // options.encodings names the encodings to ask for, the preferred first (the tests and
    // benchmarks ask for raw alone to compare).
    constructor(send, display, options) {
      this.send = send;
      this.display = display;
      this.encodings = ((options && options.encodings) || ["zrle", "copyrect", "raw", "desktopsize"]).map((name) => {
        if (!(name in encodingNames)) throw new Error("unknown encoding " + name);
        return encodingNames[name];
      });
      this.zlib = null; // the connection's one ZRLE stream, made on the first ZRLE rectangle
      // What the server sent: bytes, and rectangles by encoding number.
      this.stats = { bytes: 0, rects: {} };
      this.chunks = [];
      this.available = 0;
      this.wake = null;
      this.error = null;
      this.width = 0;
      this.height = 0;
      this.name = "";
      this.done = this.run();
    }

    // receive hands over bytes from the server.
    receive(bytes) {
      if (bytes.length === 0) return;
      this.stats.bytes += bytes.length;
      this.chunks.push(bytes);
      this.available += bytes.length;
      this.notify();
    }

    // close ends the session; a pending read fails with err.
    close(err) {
      if (!this.error) this.error = err || new Error("connection closed");
      this.notify();
    }

    notify() {
      const wake = this.wake;
      this.wake = null;
      if (wake) wake();
    }

    // read resolves with exactly n bytes.
    async read(n) {
      while (this.available < n) {
        if (this.error) throw this.error;
        await new Promise((resolve) => { this.wake = resolve; });
      }
      const out = new Uint8Array(n);
      let filled = 0;
      while (filled < n) {
        const chunk = this.chunks[0];
        const take = Math.min(chunk.length, n - filled);
        out.set(chunk.subarray(0, take), filled);
        filled += take;
        if (take === chunk.length) this.chunks.shift();
        else this.chunks[0] = chunk.subarray(take);
      }
      this.available -= n;
      return out;
    }

    async u8() { return (await this.read(1))[0]; }
    async u16() { const b = await this.read(2); return (b[0] << 8) | b[1]; }
    async u32() { const b = await this.read(4); return new DataView(b.buffer).getUint32(0); }
    async s32() { const b = await this.read(4); return new DataView(b.buffer).getInt32(0); }
    async text(n) { return new TextDecoder().decode(await this.read(n)); }

    async run() {
      await this.handshake();
      for (;;) {
        const type = await this.u8();
        switch (type) {
          case 0: await this.framebufferUpdate(); break;
          case 1: { // SetColourMapEntries: unused with a true-colour pixel format
            await this.read(3);
            const count = await this.u16();
            await this.read(count * 6);
            break;
          }
          case 2: if (this.display.bell) this.display.bell(); break;
          case 3: { // ServerCutText
            await this.read(3);
            const length = await this.u32();
            if (length > maxCutText) throw new Error("the server sends " + length + " bytes of clipboard; at most " + maxCutText + " are taken");
            await this.read(length);
            break;
          }
          default: throw new Error("unknown server message type " + type);
        }
      }
    }

    async handshake() {
      const version = await this.text(12);
      const m = /^RFB (\d{3})\.(\d{3})\n$/.exec(version);
      if (!m) throw new Error("not an RFB server: " + JSON.stringify(version));
      const minor = Number(m[1]) > 3 ? 8 : Math.min(Number(m[2]), 8);
      const use = minor >= 8 ? 8 : minor >= 7 ? 7 : 3;
      this.send(new TextEncoder().encode("RFB 003.00" + use + "\n"));

      if (use === 3) {
        const security = await this.u32();
        if (security === 0) throw new Error("server refused: " + await this.text(await this.u32()));
        if (security !== 1) throw new Error("the server asks for authentication type " + security);
      } else {
        const count = await this.u8();
        if (count === 0) throw new Error("server refused: " + await this.text(await this.u32()));
        const types = await this.read(count);
        if (!types.includes(1)) throw new Error("the server asks for authentication (types " + Array.from(types) + ")");
        this.send(Uint8Array.of(1));
      }
      if (use === 8) {
        if (await this.u32() !== 0) throw new Error("security handshake failed: " + await this.text(await this.u32()));
      }

      this.send(Uint8Array.of(1)); // ClientInit: share the display with other viewers
      this.width = await this.u16();
      this.height = await this.u16();
      checkDisplay(this.width, this.height);
      await this.read(16); // the server's pixel format: we ask for ours below
      const nameLength = await this.u32();
      if (nameLength > maxNameLength) throw new Error("the server's desktop name is " + nameLength + " bytes; at most " + maxNameLength + " are taken");
      this.name = await this.text(nameLength);
      this.display.resize(this.width, this.height, this.name);

      // 32 bits per pixel, little endian, red in the lowest byte: the bytes arrive as R, G,
      // B, X, which is canvas ImageData's order once X is set to opaque.
      this.send(Uint8Array.of(0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 0, 8, 16, 0, 0, 0));
      const encodings = this.encodings;
      const msg = new DataView(new ArrayBuffer(4 + 4 * encodings.length));
      msg.setUint8(0, 2);
      msg.setUint16(2, encodings.length);
      encodings.forEach((e, i) => msg.setInt32(4 + 4 * i, e));
      this.send(new Uint8Array(msg.buffer));
      this.requestUpdate(false);
    }

    async framebufferUpdate() {
      await this.read(1);
      const rects = await this.u16();
      for (let i = 0; i < rects; i++) {
        const x = await this.u16(), y = await this.u16(), w = await this.u16(), h = await this.u16();
        const encoding = await this.s32();
        this.stats.rects[encoding] = (this.stats.rects[encoding] || 0) + 1;
        if (encoding !== encodingDesktopSize) this.checkRect(x, y, w, h);
        if (encoding === encodingRaw) {
          const pixels = await this.read(w * h * 4);
          for (let p = 3; p < pixels.length; p += 4) pixels[p] = 255;
          this.display.raw(x, y, w, h, pixels);
        } else if (encoding === encodingZRLE) {
          const length = await this.u32();
          if (length > zrleMaxBytes(w, h)) throw new Error("ZRLE: " + length + " compressed bytes for a " + w + "x" + h + " rectangle");
          const compressed = await this.read(length);
          if (!this.zlib) this.zlib = new Inflater();
          this.display.raw(x, y, w, h, await decodeZRLE(this.zlib, compressed, w, h));
        } else if (encoding === encodingCopyRect) {
          const sx = await this.u16(), sy = await this.u16();
          this.checkRect(sx, sy, w, h);
          this.display.copy(sx, sy, x, y, w, h);
        } else if (encoding === encodingDesktopSize) {
          checkDisplay(w, h);
          this.width = w;
          this.height = h;
          this.display.resize(w, h, this.name);
        } else {
          throw new Error("the server used encoding " + encoding + ", which was not asked for");
        }
      }
      if (this.display.updated) this.display.updated();
      this.requestUpdate(true);
    }

    // checkRect refuses a rectangle that is not inside the display: the page would allocate
    // and wait for its pixels all the same.
    checkRect(x, y, w, h) {
      if (x + w > this.width || y + h > this.height) {
        throw new Error("a " + w + "x" + h + " rectangle at " + x + "," + y + " outside the " + this.width + "x" + this.height + " display");
      }
    }

    requestUpdate(incremental) {
      const msg = new DataView(new ArrayBuffer(10));
      msg.setUint8(0, 3);
      msg.setUint8(1, incremental ? 1 : 0);
      msg.setUint16(6, this.width);
      msg.setUint16(8, this.height);
      this.send(new Uint8Array(msg.buffer));
    }

    keyEvent(keysym, down) {
      const msg = new DataView(new ArrayBuffer(8));
      msg.setUint8(0, 4);
      msg.setUint8(1, down ? 1 : 0);
      msg.setUint32(4, keysym);
      this.send(new Uint8Array(msg.buffer));
    }

    // pointerEvent: buttons is the RFB mask (1 left, 2 middle, 4 right, 8/16 wheel up/down).
    pointerEvent(x, y, buttons) {
      const msg = new DataView(new ArrayBuffer(6));
      msg.setUint8(0, 5);
      msg.setUint8(1, buttons);
      msg.setUint16(2, Math.max(0, Math.min(x, this.width - 1)));
      msg.setUint16(4, Math.max(0, Math.min(y, this.height - 1)));
      this.send(new Uint8Array(msg.buffer));
    }
  }

  function checkDisplay(w, h) {
    if (w === 0 || h === 0 || w * h > maxPixels) {
      throw new Error("the server announces a " + w + "x" + h + " display; at most " + maxPixels + " pixels are taken");
    }
  }

  // Inflater is ZRLE's zlib stream: one for the whole connection (each rectangle's data
  // continues it), inflated by the platform's DecompressionStream, read as the tiles need it.
  class Inflater {
    constructor() {
      const stream = new DecompressionStream("deflate");
      this.writer = stream.writable.getWriter();
      this.reader = stream.readable.getReader();
      this.buf = new Uint8Array(0);
      this.pos = 0;
    }

    // write hands over compressed bytes. Not awaited: the stream takes more only once its
    // output is read.
    write(bytes) {
      this.writer.write(bytes).catch(() => {}); // the reader sees the same error
    }

    // more appends the next inflated chunk to what is left unread.
    async more() {
      const { value, done } = await this.reader.read();
      if (done) throw new Error("ZRLE: the compressed stream ended");
      const rest = this.buf.length - this.pos;
      const next = new Uint8Array(rest + value.length);
      next.set(this.buf.subarray(this.pos));
      next.set(value, rest);
      this.buf = next;
      this.pos = 0;
    }
  }

  // decodeZRLE inflates one rectangle's ZRLE data and returns its pixels as RGBA: 64×64
  // tiles, left to right, top to bottom, each raw, solid, packed palette, RLE or palette RLE;
  // pixels are CPIXELs (3 bytes, R, G, B for the pixel format asked for).
  async function decodeZRLE(zlib, compressed, w, h) {
    zlib.write(compressed);
    const rgba = new Uint8Array(w * h * 4);
    for (let ty = 0; ty < h; ty += 64) {
      for (let tx = 0; tx < w; tx += 64) {
        const tw = Math.min(64, w - tx), th = Math.min(64, h - ty);
        for (;;) {
          const end = decodeTile(zlib.buf, zlib.pos, rgba, w, tx, ty, tw, th);
          if (end >= 0) {
            zlib.pos = end;
            break;
          }
          await zlib.more(); // the tile goes on in the next inflated chunk
        }
      }
    }
    if (zlib.pos !== zlib.buf.length) throw new Error("ZRLE: " + (zlib.buf.length - zlib.pos) + " bytes past the rectangle");
    return rgba;
  }

  // decodeTile decodes the tile at src[p...] into rgba (a row of stride pixels) and returns
  // where it ends, or -1 when src ends first.
  function decodeTile(src, p, rgba, stride, tx, ty, tw, th) {
    const end = src.length;
    const pixels = tw * th;
    if (p >= end) return -1;
    const sub = src[p++];
    const put = (i, c) => { // i-th pixel of the tile, c the CPIXEL's offset in src
      const o = ((ty + Math.floor(i / tw)) * stride + tx + (i % tw)) * 4;
      rgba[o] = src[c];
      rgba[o + 1] = src[c + 1];
      rgba[o + 2] = src[c + 2];
      rgba[o + 3] = 255;
    };
    if (sub === 0) { // raw
      if (p + pixels * 3 > end) return -1;
      for (let i = 0; i < pixels; i++) put(i, p + i * 3);
      return p + pixels * 3;
    }
    if (sub === 1) { // solid
      if (p + 3 > end) return -1;
      for (let i = 0; i < pixels; i++) put(i, p);
      return p + 3;
    }
    if (sub >= 2 && sub <= 16) { // packed palette
      const palette = p;
      p += sub * 3;
      const bits = sub <= 2 ? 1 : sub <= 4 ? 2 : 4;
      const rowBytes = Math.ceil((tw * bits) / 8);
      if (p + rowBytes * th > end) return -1;
      const mask = (1 << bits) - 1;
      for (let y = 0; y < th; y++) {
        for (let x = 0; x < tw; x++) {
          const bit = x * bits;
          const index = (src[p + y * rowBytes + (bit >> 3)] >> (8 - bits - (bit & 7))) & mask;
          if (index >= sub) throw new Error("ZRLE: palette index " + index + " of " + sub);
          put(y * tw + x, palette + index * 3);
        }
      }
      return p + rowBytes * th;
    }
    if (sub === 128 || sub >= 130) { // plain RLE (a CPIXEL, then a run), palette RLE
      const paletteSize = sub === 128 ? 0 : sub - 128;
      const palette = p;
      p += paletteSize * 3;
      if (p > end) return -1;
      for (let i = 0; i < pixels;) {
        let colour, runFollows = true;
        if (paletteSize === 0) {
          if (p + 3 > end) return -1;
          colour = p;
          p += 3;
        } else {
          // An index; its top bit says a run length follows, else it is one pixel.
          if (p >= end) return -1;
          const index = src[p++];
          if ((index & 127) >= paletteSize) throw new Error("ZRLE: palette index " + (index & 127) + " of " + paletteSize);
          colour = palette + (index & 127) * 3;
          runFollows = (index & 128) !== 0;
        }
        let run = 1;
        while (runFollows) { // 1 + the sum of the bytes, each 255 but the last
          if (p >= end) return -1;
          const b = src[p++];
          run += b;
          runFollows = b === 255;
        }
        if (i + run > pixels) throw new Error("ZRLE: a run past the tile");
        for (const stop = i + run; i < stop; i++) put(i, colour);
      }
      return p;
    }
    throw new Error("ZRLE: unknown tile subencoding " + sub);
  }

  // X11 keysyms of the keys whose KeyboardEvent.key is a name rather than a character.
  const namedKeys = {
    Backspace: 0xff08, Tab: 0xff09, Enter: 0xff0d, Escape: 0xff1b, Delete: 0xffff,
    Home: 0xff50, ArrowLeft: 0xff51, ArrowUp: 0xff52, ArrowRight: 0xff53, ArrowDown: 0xff54,
    PageUp: 0xff55, PageDown: 0xff56, End: 0xff57, Insert: 0xff63,
    ShiftLeft: 0xffe1, ShiftRight: 0xffe2, ControlLeft: 0xffe3, ControlRight: 0xffe4,
    MetaLeft: 0xffe7, MetaRight: 0xffe8, AltLeft: 0xffe9, AltRight: 0xffea, CapsLock: 0xffe5,
  };

  // keysymFor maps a KeyboardEvent ({key, code}) to an X11 keysym, or 0.
  function keysymFor(event) {
    if (/^F([1-9]|1[0-2])$/.test(event.key)) return 0xffbe + Number(event.key.slice(1)) - 1;
    if (namedKeys[event.code] && /^(Shift|Control|Alt|Meta|CapsLock)/.test(event.code)) return namedKeys[event.code];
    if (namedKeys[event.key]) return namedKeys[event.key];
    const chars = Array.from(event.key || "");
    if (chars.length !== 1) return 0;
    const cp = chars[0].codePointAt(0);
    // Latin-1 characters are their own keysyms; the rest of Unicode is offset.
    return cp < 0x100 ? cp : 0x01000000 + cp;
  }

  Object.assign(root, { RFB, keysymFor, decodeTile });
})(this);
