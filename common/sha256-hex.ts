/**
 * SHA-256 (FIPS 180-4) of a text's UTF-8 bytes, in hex, in pure JavaScript: workflow code has no
 * Node built-ins, and the turn derives each notification's idempotency key itself, the same on
 * every replay. Meant for short texts (keys, not payloads).
 */

const ROUND_CONSTANTS = Uint32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
  0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
  0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
  0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
  0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
  0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const INITIAL_STATE = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

const rotate = (value: number, bits: number) => (value >>> bits) | (value << (32 - bits));

/** The SHA-256 of `text` (its UTF-8 bytes), as 64 hex characters. */
export function sha256Hex(text: string): string {
  const message = new TextEncoder().encode(text);
  // The message, a 1 bit, zeros to 56 bytes mod 64, then its length in bits as 64 bits big-endian.
  const length = Math.ceil((message.length + 9) / 64) * 64;
  const padded = new Uint8Array(length);
  padded.set(message);
  padded[message.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(length - 8, Math.floor((message.length * 8) / 2 ** 32));
  view.setUint32(length - 4, (message.length * 8) >>> 0);
  const hash = [...INITIAL_STATE];
  const words = new Uint32Array(64);
  for (let block = 0; block < length; block += 64) {
    for (let index = 0; index < 16; index++) words[index] = view.getUint32(block + index * 4);
    for (let index = 16; index < 64; index++) {
      const low = words[index - 15];
      const high = words[index - 2];
      const sigma0 = rotate(low, 7) ^ rotate(low, 18) ^ (low >>> 3);
      const sigma1 = rotate(high, 17) ^ rotate(high, 19) ^ (high >>> 10);
      words[index] = (words[index - 16] + sigma0 + words[index - 7] + sigma1) >>> 0;
    }
    let [a, b, c, d, e, f, g, h] = hash;
    for (let index = 0; index < 64; index++) {
      const sum1 = rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25);
      const choice = (e & f) ^ (~e & g);
      const first = (h + sum1 + choice + ROUND_CONSTANTS[index] + words[index]) >>> 0;
      const sum0 = rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22);
      const majority = (a & b) ^ (a & c) ^ (b & c);
      const second = (sum0 + majority) >>> 0;
      [h, g, f, e, d, c, b, a] = [g, f, e, (d + first) >>> 0, c, b, a, (first + second) >>> 0];
    }
    const next = [a, b, c, d, e, f, g, h];
    for (let index = 0; index < 8; index++) hash[index] = (hash[index] + next[index]) >>> 0;
  }
  return hash.map((word) => word.toString(16).padStart(8, '0')).join('');
}
