// A passkey authenticator in software (WebAuthn level 3, "none" attestation, ES256), so that tests of
// the inbox's server can enroll and sign in over plain HTTP, many at once, without a browser. What it
// makes is what an authenticator makes: @simplewebauthn/server checks it as it checks Chrome's.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';

/** One credential held by the software authenticator. */
export interface SoftwarePasskey {
  id: string;
  privateKey: KeyObject;
  counter: number;
}

function base64url(bytes: Uint8Array | Buffer | string): string {
  return Buffer.from(bytes).toString('base64url');
}

function clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string, origin: string): Buffer {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
}

/** Flags: user present, user verified (and attested credential data when a passkey is created). */
const PRESENT_AND_VERIFIED = 0x01 | 0x04;
const ATTESTED = 0x40;

function counterBytes(counter: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(counter);
  return bytes;
}

/** A new passkey for `rpId`, and the registration response the browser would send for `challenge` at `origin`. */
export function createPasskey({ rpId, origin, challenge }: { rpId: string; origin: string; challenge: string }): {
  passkey: SoftwarePasskey;
  response: object;
} {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const coseKey = isoCBOR.encode(
    new Map<number, number | Uint8Array>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, new Uint8Array(Buffer.from(jwk.x!, 'base64url'))],
      [-3, new Uint8Array(Buffer.from(jwk.y!, 'base64url'))],
    ]),
  );
  const credentialId = randomBytes(16);
  const length = Buffer.alloc(2);
  length.writeUInt16BE(credentialId.length);
  const authData = Buffer.concat([
    createHash('sha256').update(rpId).digest(),
    Buffer.from([PRESENT_AND_VERIFIED | ATTESTED]),
    counterBytes(0),
    Buffer.alloc(16),
    length,
    credentialId,
    Buffer.from(coseKey),
  ]);
  const attestationObject = isoCBOR.encode(
    new Map<string, string | Uint8Array | Map<string, string>>([
      ['fmt', 'none'],
      ['attStmt', new Map<string, string>()],
      ['authData', new Uint8Array(authData)],
    ]),
  );
  const id = base64url(credentialId);
  return {
    passkey: { id, privateKey, counter: 0 },
    response: {
      id,
      rawId: id,
      type: 'public-key',
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: base64url(clientData('webauthn.create', challenge, origin)),
        attestationObject: base64url(attestationObject),
        transports: ['internal'],
      },
    },
  };
}

/** The authentication response the browser would send for `challenge`, signed by the passkey (its counter moves on). */
export function signIn(passkey: SoftwarePasskey, { rpId, origin, challenge }: { rpId: string; origin: string; challenge: string }): object {
  passkey.counter++;
  const authData = Buffer.concat([
    createHash('sha256').update(rpId).digest(),
    Buffer.from([PRESENT_AND_VERIFIED]),
    counterBytes(passkey.counter),
  ]);
  const data = clientData('webauthn.get', challenge, origin);
  const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(data).digest()]), passkey.privateKey);
  return {
    id: passkey.id,
    rawId: passkey.id,
    type: 'public-key',
    clientExtensionResults: {},
    response: {
      clientDataJSON: base64url(data),
      authenticatorData: base64url(authData),
      signature: base64url(signature),
    },
  };
}
