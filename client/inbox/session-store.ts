// Where the inbox keeps its sessions: in memory, bounded. Nothing is stored for a page that only looks
// (`GET /api/session` makes none); a session is stored once someone starts signing in or enrolling
// (the passkey challenge must be kept), and those unfinished ones are few and short-lived, so a flood of
// sign-in starts from anywhere costs a bounded amount of memory, never more.

/** The part of a stored session the store reads: who signed in, and when its cookie expires. */
interface StoredSession {
  approver?: string;
  cookie?: { expires?: Date | string | null };
}

/** What the store is built with. */
export interface SessionStoreOptions {
  /** At most this many sessions of signed-in approvers; past it the oldest is dropped (its approver signs in again). */
  maxSignedIn: number;
  /** At most this many sessions of sign-ins and enrollments not finished; past it the oldest is dropped. */
  maxPending: number;
  /** How long an unfinished sign-in or enrollment is kept. */
  pendingMs: number;
  /** How long a signed-in session is kept when its cookie names no expiry. */
  signedInMs: number;
  /** How often expired sessions are swept. */
  sweepMs?: number;
  now?: () => number;
}

/** The default bounds: a team's approvers and their devices, and a few hundred sign-ins under way at once. */
export const SESSION_STORE_DEFAULTS = { maxSignedIn: 1_000, maxPending: 200, pendingMs: 10 * 60 * 1000, sweepMs: 60_000 } as const;

/** A session store for @fastify/session with a cap on each kind of session and an expiry sweep. */
export class CappedSessionStore {
  // Maps keep insertion order: the first key is the oldest, and a session saved again moves to the end.
  private readonly signedIn = new Map<string, { session: StoredSession; expiresAt: number }>();
  private readonly pending = new Map<string, { session: StoredSession; expiresAt: number }>();
  private readonly timer: NodeJS.Timeout;
  private readonly now: () => number;

  constructor(private readonly options: SessionStoreOptions) {
    this.now = options.now ?? Date.now;
    this.timer = setInterval(() => this.sweep(), options.sweepMs ?? SESSION_STORE_DEFAULTS.sweepMs);
    this.timer.unref();
  }

  /** How many sessions are stored, of each kind. */
  get size(): { signedIn: number; pending: number; total: number } {
    return { signedIn: this.signedIn.size, pending: this.pending.size, total: this.signedIn.size + this.pending.size };
  }

  set(sessionId: string, session: StoredSession, callback: (error?: Error) => void): void {
    this.signedIn.delete(sessionId);
    this.pending.delete(sessionId);
    const now = this.now();
    if (session.approver) {
      const expires = session.cookie?.expires ? new Date(session.cookie.expires).getTime() : NaN;
      this.signedIn.set(sessionId, { session, expiresAt: Number.isFinite(expires) ? expires : now + this.options.signedInMs });
      while (this.signedIn.size > this.options.maxSignedIn) this.signedIn.delete(this.signedIn.keys().next().value!);
    } else {
      this.pending.set(sessionId, { session, expiresAt: now + this.options.pendingMs });
      while (this.pending.size > this.options.maxPending) this.pending.delete(this.pending.keys().next().value!);
    }
    callback();
  }

  get(sessionId: string, callback: (error: Error | null, session?: StoredSession | null) => void): void {
    const entry = this.signedIn.get(sessionId) ?? this.pending.get(sessionId);
    if (!entry) return callback(null, null);
    if (entry.expiresAt <= this.now()) {
      this.signedIn.delete(sessionId);
      this.pending.delete(sessionId);
      return callback(null, null);
    }
    callback(null, entry.session);
  }

  destroy(sessionId: string, callback: (error?: Error) => void): void {
    this.signedIn.delete(sessionId);
    this.pending.delete(sessionId);
    callback();
  }

  /** Drops every expired session. */
  sweep(): void {
    const now = this.now();
    for (const sessions of [this.signedIn, this.pending]) {
      for (const [id, entry] of sessions) if (entry.expiresAt <= now) sessions.delete(id);
    }
  }

  /** Stops the sweep and forgets every session. */
  close(): void {
    clearInterval(this.timer);
    this.signedIn.clear();
    this.pending.clear();
  }
}
