import path from 'node:path';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CompatibilityCallToolResultSchema,
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { toMilliseconds } from '../../common/duration';
import type { McpServerConfig } from './mcp-config';
import { BodyTooLargeError, cappedFetch } from '../../hardened/capped-fetch';
import { AnswerLostError, NotSentError } from '../call-errors';
import { McpListingBoundError } from './mcp-call-errors';

export { McpListingBoundError } from './mcp-call-errors';

/** Where a worker's MCP connections write their lines (the server's stderr, reconnects). */
export type McpLog = (line: string) => void;

/**
 * The server answered with a JSON-RPC error: its own verdict on the call. Tool calls go through
 * the SDK's plain `request`, whose only own `McpError`s are a closed connection and a timeout (or
 * cancellation); every other `McpError` is made from the server's error response.
 */
export function isServerAnswer(error: unknown): boolean {
  return error instanceof McpError && error.code !== ErrorCode.ConnectionClosed && error.code !== ErrorCode.RequestTimeout;
}

/**
 * The SDK checks a tool's structured content against its `outputSchema` with a validator of its
 * own, whose patterns backtrack; this one compiles nothing, and the tool source checks output
 * schemas itself with the hardened validator, where it knows a mismatch means a lost answer.
 */
const NO_SDK_VALIDATION: jsonSchemaValidator = {
  getValidator: () => (input: unknown) => ({ valid: true, data: input as never, errorMessage: undefined }),
};

/** The most characters of one stderr line of a stdio server that reach the log; the rest of the line is dropped. */
export const MAX_STDERR_LINE_CHARS = 2_000;

/** The delay after the first failed connect, and the longest; the first reconnect after a lost connection is immediate. */
export const RECONNECT_BACKOFF = { initialMs: 200, maximumMs: 5_000 } as const;

/** How long to wait before connecting again after this many failed connects in a row: doubling, up to the maximum. */
export function reconnectDelay(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(RECONNECT_BACKOFF.initialMs * 2 ** (failures - 1), RECONNECT_BACKOFF.maximumMs);
}

const CLIENT_INFO = { name: 'tollgate', version: '1' };

/** Whether the HTTP server refused a request itself (4xx): the request was not taken. */
function refusedByHttp(error: unknown): error is StreamableHTTPError {
  return error instanceof StreamableHTTPError && error.code !== undefined && error.code >= 400 && error.code < 500;
}

/** A body that passes everything through and calls `onOversize` when it errors because it passed its byte cap. */
function watchedBody(body: ReadableStream<Uint8Array>, onOversize: (error: Error) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await reader.read();
        if (chunk.done) controller.close();
        else controller.enqueue(chunk.value);
      } catch (error) {
        if (BodyTooLargeError.isInstance(error)) onOversize(error);
        controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** A fetch whose answers' bodies call `onOversize` when they pass their cap, however the SDK reads them. */
function watchedFetch(fetch: typeof globalThis.fetch, onOversize: (error: Error) => void): typeof globalThis.fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    const watched = new Response(watchedBody(response.body, onOversize), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    Object.defineProperty(watched, 'url', { value: response.url });
    return watched;
  };
}

/** The first line of an error's message, for one-line logs and errors. */
function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return text.split('\n')[0].trim();
}

/**
 * One worker's client of one MCP server. It connects at start; after a failure the next call
 * connects again (at once the first time, then with a growing delay), and a call made while the
 * server is away fails with `NotSentError` rather than waiting. `close` ends it for good.
 */
export class McpConnection {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private failures = 0;
  private nextAttemptAt = 0;
  private closed = false;
  private readonly changeListeners: Array<() => void> = [];
  /** The last transport error of each client (an answer past its byte cap, say): why its pending requests failed. */
  private readonly transportErrors = new WeakMap<Client, string>();

  constructor(
    /** The server's name in the config. */
    readonly name: string,
    /** The server's config entry. */
    readonly config: McpServerConfig,
    private readonly log: McpLog,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** Connects the first time; throws a one-line error naming the cause. */
  async start(): Promise<void> {
    await this.connected();
  }

  /**
   * Every tool the server lists, all pages, within one deadline (`connectTimeout`) for the whole
   * listing, at most `maxListPages` pages and `maxTools` tools; past a bound it throws
   * {@link McpListingBoundError} naming the config key. The signal (a call's) ends it too.
   */
  async listTools({ signal }: { signal?: AbortSignal } = {}): Promise<Tool[]> {
    const { maxListPages, maxTools } = this.config;
    const deadlineMs = this.connectTimeoutMs();
    const deadline = AbortSignal.timeout(deadlineMs);
    const bound = signal ? AbortSignal.any([signal, deadline]) : deadline;
    const started = Date.now();
    const key = (name: string) => `mcp.servers.${this.name}.${name}`;
    try {
      return await this.use(async (client) => {
        const tools: Tool[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          if (pages === maxListPages) {
            const message = `mcp server "${this.name}" lists its tools in more than ${maxListPages} pages (${key('maxListPages')})`;
            throw new McpListingBoundError({ message, bound: 'maxListPages' });
          }
          const remaining = Math.max(1, deadlineMs - (Date.now() - started));
          const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: remaining, signal: bound });
          pages++;
          tools.push(...page.tools);
          if (tools.length > maxTools) {
            const message = `mcp server "${this.name}" lists more than ${maxTools} tools (${key('maxTools')})`;
            throw new McpListingBoundError({ message, bound: 'maxTools' });
          }
          cursor = page.nextCursor;
        } while (cursor);
        return tools;
      });
    } catch (error) {
      if (deadline.aborted && !signal?.aborted && !McpListingBoundError.isInstance(error)) {
        const message = `mcp server "${this.name}" did not finish listing its tools within ${deadlineMs} ms (${key('connectTimeout')})`;
        throw new McpListingBoundError({ message, bound: 'connectTimeout' });
      }
      throw error;
    }
  }

  /**
   * Calls a tool; the signal cancels the request (the server is told), the timeout is the SDK's
   * own bound beyond the boundary's. Fails with {@link NotSentError} when the request never
   * went out, the server's `McpError` when it answered with an error, and
   * {@link AnswerLostError} for anything after the request went out.
   */
  async callTool(tool: string, args: unknown, { signal, timeoutMs }: { signal: AbortSignal; timeoutMs: number }): Promise<CallToolResult> {
    return this.use(async (client) => {
      const params = { name: tool, arguments: args as Record<string, unknown> };
      try {
        // The plain request, not `client.callTool`: that one turns an output schema mismatch after the server acted into an `McpError` like a refusal.
        const result = await client.request({ method: 'tools/call', params }, CompatibilityCallToolResultSchema, {
          signal,
          timeout: timeoutMs,
        });
        return (
          'toolResult' in result ? { content: [{ type: 'text', text: JSON.stringify(result.toolResult) }] } : result
        ) as CallToolResult;
      } catch (error) {
        if (isServerAnswer(error) || refusedByHttp(error)) throw error;
        const why = this.transportErrors.get(client) ?? firstLine(error);
        throw new AnswerLostError(`mcp server "${this.name}" took ${tool} but its answer was lost: ${why}`, { cause: error });
      }
    });
  }

  /** Registers a listener called when the server says its tool list changed, or after a reconnect. */
  onToolsChanged(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  /** Closes the client (and a stdio server's process); no call connects again. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  private connectTimeoutMs(): number {
    return toMilliseconds(this.config.connectTimeout);
  }

  /** Runs `fn` on a connected client; a failure that is not the server's own answer drops the client, so the next call connects again. */
  private async use<T>(fn: (client: Client) => Promise<T>): Promise<T> {
    const client = await this.connected();
    try {
      return await fn(client);
    } catch (error) {
      if (isServerAnswer(error)) throw error;
      // A listing that passed its page or tool cap leaves a working connection; one past its deadline may be hung.
      if (McpListingBoundError.isInstance(error)) throw error;
      if (refusedByHttp(error)) {
        // The HTTP server refused the request itself (a session it no longer knows, say): the tool never ran.
        this.drop(client, `refused a request (HTTP ${error.code})`);
        throw new NotSentError(`mcp server "${this.name}" refused the request (HTTP ${error.code}); the call was not run`);
      }
      this.drop(client, `lost: ${firstLine(error)}`);
      throw error;
    }
  }

  private drop(client: Client, why: string): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.log(`[mcp ${this.name}] connection ${why}; the next call connects again`);
    void client.close().catch(() => undefined);
  }

  private async connected(): Promise<Client> {
    if (this.closed) throw new NotSentError(`mcp server "${this.name}" is closed (the worker is shutting down)`);
    if (this.client) return this.client;
    if (this.connecting) return this.connecting;
    const wait = this.nextAttemptAt - Date.now();
    if (wait > 0) throw new NotSentError(`mcp server "${this.name}" is not connected; the next attempt is in ${wait} ms`);
    // After a reconnect the server may serve other tools: the listeners look again.
    const reconnect = this.changeListeners.length > 0;
    this.connecting = this.connect().then(
      (client) => {
        this.connecting = undefined;
        this.failures = 0;
        if (this.closed) {
          void client.close();
          throw new NotSentError(`mcp server "${this.name}" is closed (the worker is shutting down)`);
        }
        this.client = client;
        if (reconnect) this.changed();
        return client;
      },
      (error: unknown) => {
        this.connecting = undefined;
        this.failures++;
        this.nextAttemptAt = Date.now() + reconnectDelay(this.failures);
        throw new NotSentError(`mcp server "${this.name}" could not connect: ${firstLine(error)}`);
      },
    );
    return this.connecting;
  }

  private changed(): void {
    for (const listener of this.changeListeners) listener();
  }

  private async connect(): Promise<Client> {
    const client = new Client(CLIENT_INFO, { capabilities: {}, jsonSchemaValidator: NO_SDK_VALIDATION });
    // An answer cut at its byte cap inside an event stream leaves its request waiting (the SDK reports it only as a
    // disconnected stream): closing the client fails it now, as lost.
    const transport = this.transport((error) => {
      this.transportErrors.set(client, firstLine(error));
      this.drop(client, `closed: ${firstLine(error)}`);
    });
    client.onclose = () => {
      if (this.client === client) this.drop(client, 'closed by the server');
    };
    client.onerror = (error) => {
      if (!this.transportErrors.has(client)) this.transportErrors.set(client, firstLine(error));
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.changed());
    try {
      await client.connect(transport, { timeout: this.connectTimeoutMs() });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
    return client;
  }

  private transport(onOversize: (error: Error) => void): Transport {
    const { config } = this;
    if (config.url !== undefined) {
      const headers: Record<string, string> = {};
      for (const [header, variable] of Object.entries(config.headersFromEnv ?? {})) {
        const value = this.env[variable];
        if (!value) throw new Error(`header ${header} needs the environment variable ${variable}, which is not set`);
        headers[header] = value;
      }
      // Every body the server sends is counted while it is read and cut at the cap, whatever it declares.
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers },
        fetch: watchedFetch(cappedFetch(config.maxResponseBytes), onOversize),
      });
    }
    const transport = new StdioClientTransport({
      command: config.command!,
      args: config.args ?? [],
      env: { ...getDefaultEnvironment(), ...config.env },
      cwd: config.cwd === undefined ? undefined : path.resolve(config.cwd),
      stderr: 'pipe',
      // The SDK buffers stdout until a newline; past this many bytes it drops the buffer and closes the transport.
      maxBufferSize: config.maxResponseBytes,
    });
    this.forwardStderr(transport.stderr as Readable | null);
    return transport;
  }

  /** A stdio server's stderr, line by line, into the worker's log under the server's name; a line is cut at {@link MAX_STDERR_LINE_CHARS}. */
  private forwardStderr(stream: Readable | null): void {
    if (!stream) return;
    let pending = '';
    let cut = false;
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = chunk.split('\n');
      const last = lines.pop() ?? '';
      for (const piece of lines) {
        const line = cut ? pending : (pending + piece).slice(0, MAX_STDERR_LINE_CHARS);
        if (line.trim()) this.log(`[mcp ${this.name}] ${line.trimEnd()}${cut ? '…' : ''}`);
        pending = '';
        cut = false;
      }
      if (cut) return;
      pending += last;
      if (pending.length > MAX_STDERR_LINE_CHARS) {
        pending = pending.slice(0, MAX_STDERR_LINE_CHARS);
        cut = true;
      }
    });
    stream.on('end', () => {
      if (pending.trim()) this.log(`[mcp ${this.name}] ${pending.trimEnd()}`);
      pending = '';
    });
  }
}
