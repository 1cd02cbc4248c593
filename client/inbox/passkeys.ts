// Who may look at the inbox: approvers who signed in with a passkey (WebAuthn), enrolled once through
// a one-time link the operator hands them. The passkeys' public keys are kept in a JSON file; the
// ceremonies are @simplewebauthn/server's. A passkey proves who looks; a decision is proven by the
// approver's own Ed25519 signature, which this server never holds.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  WebAuthnCredential,
} from '@simplewebauthn/server';
import { TollgateError } from '../../common/tollgate-error';

type WebAuthnServer = typeof import('@simplewebauthn/server');

/** @simplewebauthn/server, loaded when the inbox starts (the CLI's other commands need none of it). */
function webAuthn(): WebAuthnServer {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('@simplewebauthn/server') as WebAuthnServer;
}

/** One enrolled passkey, as kept in the file. */
interface StoredPasskey {
  id: string;
  /** The credential's public key, base64url. */
  publicKey: string;
  counter: number;
  transports?: string[];
  enrolledAt: string;
}

/** The file's content: each approver's passkeys and WebAuthn user handle. */
interface PasskeyFile {
  approvers: Record<string, { userId: string; passkeys: StoredPasskey[] }>;
}

/** An approver name: what a key's name may be (the names `tollgate keys generate` takes). */
export const APPROVER_NAME = /^[A-Za-z0-9._@-]{1,64}$/;

/** A sign-in or an enrollment that failed, with what to tell the person. */
export class PasskeyError extends TollgateError {
  static override readonly marker = 'tollgate.error.PasskeyError';
  override name = 'PasskeyError';
}

/** The relying party: the inbox's origin as people's browsers see it. */
export interface RelyingParty {
  /** The origin (scheme, host, port), e.g. http://127.0.0.1:8234. */
  origin: string;
  /** The host name the passkeys are bound to. */
  id: string;
  name: string;
}

/** A one-time enrollment link's token, for one approver, until it expires. */
interface Enrollment {
  approver: string;
  expiresAt: number;
}

/** The approvers' passkeys: enrollment by one-time token, sign-in by any enrolled passkey. */
export class PasskeyBook {
  private readonly enrollments = new Map<string, Enrollment>();

  constructor(
    private readonly file: string,
    private readonly party: RelyingParty,
  ) {}

  private read(): PasskeyFile {
    if (!existsSync(this.file)) return { approvers: {} };
    const parsed = JSON.parse(readFileSync(this.file, 'utf8')) as PasskeyFile;
    if (!parsed || typeof parsed.approvers !== 'object') throw new Error(`${this.file} is not an inbox passkeys file`);
    return parsed;
  }

  private write(content: PasskeyFile): void {
    mkdirSync(path.dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
    chmodSync(temporary, 0o600);
    renameSync(temporary, this.file);
  }

  /** The approvers who have a passkey. */
  approvers(): string[] {
    return Object.keys(this.read().approvers).filter((name) => this.read().approvers[name].passkeys.length > 0);
  }

  /** A one-time token that lets `approver` enroll a passkey within `validMs`. */
  enroll(approver: string, validMs: number, now = Date.now()): string {
    if (!APPROVER_NAME.test(approver)) {
      throw new PasskeyError(`approver name "${approver}" may hold only letters, digits, ".", "_", "@" and "-" (at most 64)`);
    }
    const token = randomBytes(32).toString('base64url');
    this.enrollments.set(token, { approver, expiresAt: now + validMs });
    return token;
  }

  /** The approver a valid enrollment token is for (the options of an enrollment; the token is spent by `register`). */
  enrollmentFor(token: unknown, now = Date.now()): string {
    if (typeof token !== 'string') throw new PasskeyError('the enrollment link is not valid');
    for (const [known, enrollment] of this.enrollments) {
      const same = known.length === token.length && timingSafeEqual(Buffer.from(known), Buffer.from(token));
      if (!same) continue;
      if (enrollment.expiresAt < now) {
        this.enrollments.delete(known);
        throw new PasskeyError('the enrollment link has expired; ask for a new one');
      }
      return enrollment.approver;
    }
    throw new PasskeyError('the enrollment link is not valid, or was used already');
  }

  /** The options of a new passkey for an approver (the browser's `navigator.credentials.create`). */
  async registrationOptions(approver: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const stored = this.read().approvers[approver];
    return webAuthn().generateRegistrationOptions({
      rpName: this.party.name,
      rpID: this.party.id,
      userName: approver,
      userID: stored ? Buffer.from(stored.userId, 'base64url') : undefined,
      attestationType: 'none',
      excludeCredentials: (stored?.passkeys ?? []).map((passkey) => ({ id: passkey.id })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
  }

  /**
   * Spends the enrollment token, then checks a new passkey against its challenge and stores it. The
   * token is taken before anything is awaited, so of two verifications of one link at once, however
   * close, exactly one goes on and the other is refused; a passkey that fails its check spends the
   * link too (the operator makes a new one).
   */
  async register({
    token,
    response,
    challenge,
    userId,
  }: {
    token: string;
    response: RegistrationResponseJSON;
    challenge: string;
    userId: string;
  }): Promise<string> {
    const approver = this.enrollmentFor(token);
    this.enrollments.delete(token);
    const verified = await webAuthn()
      .verifyRegistrationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.party.origin,
        expectedRPID: this.party.id,
        requireUserVerification: false,
      })
      .catch((error: unknown) => {
        throw new PasskeyError(`the passkey could not be checked: ${(error as Error).message}`);
      });
    if (!verified.verified || !verified.registrationInfo) throw new PasskeyError('the passkey could not be verified');
    const { credential } = verified.registrationInfo;
    const content = this.read();
    const entry = (content.approvers[approver] ??= { userId, passkeys: [] });
    entry.passkeys.push({
      id: credential.id,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: credential.transports,
      enrolledAt: new Date().toISOString(),
    });
    this.write(content);
    return approver;
  }

  /** The options of a sign-in: any passkey of this inbox (a discoverable credential names its approver). */
  async authenticationOptions(): Promise<PublicKeyCredentialRequestOptionsJSON> {
    return webAuthn().generateAuthenticationOptions({ rpID: this.party.id, userVerification: 'preferred' });
  }

  /** Checks a sign-in against its challenge and the stored passkey; the approver it belongs to. */
  async authenticate({ response, challenge }: { response: AuthenticationResponseJSON; challenge: string }): Promise<string> {
    const content = this.read();
    const owner = Object.entries(content.approvers).find(([, entry]) => entry.passkeys.some((passkey) => passkey.id === response.id));
    if (!owner) throw new PasskeyError('this passkey is not enrolled in this inbox');
    const [approver, entry] = owner;
    const passkey = entry.passkeys.find((stored) => stored.id === response.id)!;
    const credential: WebAuthnCredential = {
      id: passkey.id,
      publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64url')),
      counter: passkey.counter,
      transports: passkey.transports as WebAuthnCredential['transports'],
    };
    const verified = await webAuthn()
      .verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.party.origin,
        expectedRPID: this.party.id,
        credential,
        requireUserVerification: false,
      })
      .catch((error: unknown) => {
        throw new PasskeyError(`the sign-in could not be checked: ${(error as Error).message}`);
      });
    if (!verified.verified) throw new PasskeyError('the sign-in could not be verified');
    passkey.counter = verified.authenticationInfo.newCounter;
    this.write(content);
    return approver;
  }
}

/** A new WebAuthn user handle (random, never the approver's name). */
export function newUserId(): string {
  return randomBytes(16).toString('base64url');
}
