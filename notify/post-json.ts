import { systemErrorCode } from '../hardened/network-errors';
import { ChannelFailure } from './notification-channel';

/** The most bytes of a receiver's answer read (to name it in a failure); the rest is dropped unread. */
const MAX_ANSWER_BYTES = 2_048;

/** Statuses after which another attempt may succeed: the receiver was busy or failing, not refusing. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

/** The first bytes of an answer, as one short line (the rest is cancelled, not read). */
async function answerStart(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ANSWER_BYTES) {
      const chunk = await reader.read();
      if (chunk.done) break;
      chunks.push(chunk.value);
      size += chunk.value.byteLength;
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
  const text = Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
  return text
    .replace(/[^\x20-\x7e]+/g, ' ')
    .trim()
    .slice(0, 200);
}

/**
 * Posts a JSON body once and resolves when the receiver answered 2xx. A redirect is not followed
 * (the signed body goes only where the config says); a 408, 425, 429 or 5xx answer and a broken
 * connection are retryable failures, any other answer a final one. The answer's body is never read
 * beyond its first bytes, so a receiver that streams forever costs nothing past the signal's bound.
 */
export async function postJson({
  url,
  body,
  headers,
  signal,
  receiver,
}: {
  url: string;
  body: string;
  headers: Record<string, string>;
  signal: AbortSignal;
  /** Names the receiver in failures without its address (which may be a secret). */
  receiver: string;
}): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'user-agent': 'tollgate-notify', ...headers },
      redirect: 'manual',
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw new ChannelFailure(`${receiver} had not answered when the attempt was cut off`, true, { cause: error });
    const code = systemErrorCode(error);
    throw new ChannelFailure(`${receiver} could not be reached${code ? ` (${code})` : ''}`, true, { cause: error });
  }
  if (response.status >= 200 && response.status < 300) {
    response.body?.cancel().catch(() => undefined);
    return;
  }
  const said = await answerStart(response).catch(() => '');
  if (response.status >= 300 && response.status < 400)
    throw new ChannelFailure(`${receiver} answered ${response.status} (a redirect, not followed)`, false);
  throw new ChannelFailure(`${receiver} answered ${response.status}${said ? `: ${said}` : ''}`, retryableStatus(response.status));
}
