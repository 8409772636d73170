import { randomFillSync } from 'node:crypto';

/**
 * A random (version 4) UUID from the same CSPRNG as `crypto.randomUUID()`, made as one flat
 * string. `randomUUID()` joins 20 pieces by concatenation, a tree that the profile must then
 * flatten (see `flat` in src/names.ts), and refills its 2 KB of entropy every 128 ids. Per
 * Fastify developer request, in a --cpu-prof of `bench/profile.js fastify dev-nostore`, the
 * UUID and its flattening took ~1.9 us of ~180 (bench/RESULTS.md Run 25).
 */
const IDS_PER_FILL = 256;
/** Random bytes, 16 per id, each used once; refilled when used up. Not Buffer's shared pool. */
const pool = Buffer.alloc(16 * IDS_PER_FILL);
let next = pool.length;
/** The id's text is written here, dashes in place, then copied out as a latin1 string. */
const text = Buffer.alloc(36, 0x2d);
/** Two ASCII hex digits per byte value. */
const HEX = new Uint8Array(512);
for (let b = 0; b < 256; b++) {
  const h = b.toString(16).padStart(2, '0');
  HEX[2 * b] = h.charCodeAt(0);
  HEX[2 * b + 1] = h.charCodeAt(1);
}

export function uuid(): string {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  const o = next;
  next += 16;
  let j = 0;
  for (let i = 0; i < 16; i++) {
    let b = pool[o + i]!;
    // RFC 9562: version 4 in the high nibble of byte 6, variant 10 in the top bits of byte 8.
    if (i === 6) b = (b & 0x0f) | 0x40;
    else if (i === 8) b = (b & 0x3f) | 0x80;
    // Dashes at 8, 13, 18 and 23 were written once, when `text` was made.
    if (j === 8 || j === 13 || j === 18 || j === 23) j++;
    text[j] = HEX[2 * b]!;
    text[j + 1] = HEX[2 * b + 1]!;
    j += 2;
  }
  return text.toString('latin1', 0, 36);
}
