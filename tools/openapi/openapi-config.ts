import path from 'node:path';
import { z } from 'zod';
import { TOOL_EFFECTS, type ToolEffect } from '../../common/codes';
import { duration, envName, httpUrl } from '../../config/schema-parts';
import { toolPolicyOverrideShape } from '../tool-config';
import type { ToolSourceSection } from '../tool-source';

/** How an API may store a text field differently from how it was sent: trimmed, lower-cased, in Unicode NFC. */
export const FIELD_NORMALISATIONS = ['trim', 'lowercase', 'nfc'] as const;

/** One normalisation of `FIELD_NORMALISATIONS`. */
export type FieldNormalisation = (typeof FIELD_NORMALISATIONS)[number];

/** Overrides of one operation's tool, by its `operationId` (config `openapi.sources.<name>.operations.<operationId>`). */
export const openapiOperationOverrideSchema = z.strictObject({
  ...toolPolicyOverrideShape,
  /** Wins over the method's meaning and over a trusted document's `x-tollgate-effect`; a `reversible_write` needs `status`. */
  effect: z.enum(TOOL_EFFECTS as [ToolEffect, ...ToolEffect[]]).optional(),
  /** The `operationId` of a GET whose answer says whether this write took effect (its status check). */
  status: z.string().min(1).optional(),
  /**
   * What the status GET's answer is compared with: body field -> the normalisations the API applies
   * to it, applied to what was sent and what the GET holds before they are compared (`[]`: as sent).
   * Only these fields are compared; left out, every field the write sent is compared as sent.
   */
  compare: z.record(z.string().min(1), z.array(z.enum(FIELD_NORMALISATIONS))).optional(),
});

/** The bounds of what one API's document and answers may be. */
export const OPENAPI_SOURCE_DEFAULTS = {
  maxDocumentBytes: 5 * 1024 * 1024,
  maxOperations: 1_000,
  maxResponseBytes: 1024 * 1024,
  maxRetryAfterMs: 30_000,
} as const;

/** One HTTP API described by an OpenAPI 3.0 or 3.1 document. */
export const openapiSourceSchema = z.strictObject({
  /** The OpenAPI document: a file (relative to the config file's folder) or an http(s) URL, JSON or YAML. */
  document: z.string().min(1),
  /** Where requests go; the document's first `servers` entry when left out. */
  baseURL: httpUrl.optional(),
  /** Only these operations are served: `operationId`s, or `tag:<tag>` for every operation of a tag; all when left out. */
  include: z.array(z.string().min(1)).optional(),
  /** These operations (`operationId` or `tag:<tag>`) are never served. */
  exclude: z.array(z.string().min(1)).default([]),
  /** Header name -> the environment variable holding its value (a token), sent with every request, never recorded or shown to the model. */
  headersFromEnv: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'expected an HTTP header name'), envName).optional(),
  /**
   * Whether the API applies a request once per `Idempotency-Key`, answering a repeat with the first
   * answer: then a write cut off after it went out is sent again with the same key instead of asking a person.
   */
  honoursIdempotencyKey: z.boolean().default(false),
  /** Whether the document's `x-tollgate-effect` and `x-tollgate-status` extensions decide effects (default false: only the method and the config do). */
  trustExtensions: z.boolean().default(false),
  operations: z.record(z.string(), openapiOperationOverrideSchema).default({}),
  /** When true, an API whose document cannot be read is logged and its tools are left out instead of stopping the worker. */
  optional: z.boolean().default(false),
  /** The most bytes the document may have (read while fetched). */
  maxDocumentBytes: z.number().int().min(1024).default(OPENAPI_SOURCE_DEFAULTS.maxDocumentBytes),
  /** The most operations the document may declare, counted before any is turned into a tool. */
  maxOperations: z.number().int().min(1).default(OPENAPI_SOURCE_DEFAULTS.maxOperations),
  /** The most bytes one answer may have; a longer one is cut off while read. */
  maxResponseBytes: z.number().int().min(1024).default(OPENAPI_SOURCE_DEFAULTS.maxResponseBytes),
  /** The longest `Retry-After` a read's next attempt waits; a longer one is cut to this. */
  maxRetryAfter: duration.default(OPENAPI_SOURCE_DEFAULTS.maxRetryAfterMs),
});

/** One configured API. */
export type OpenapiSourceConfig = z.output<typeof openapiSourceSchema>;

/** The `openapi` section: HTTP APIs whose operations the worker serves as `<name>__<operationId>`. */
export const openapiSchema = z.strictObject({
  sources: z.record(z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'expected 1-32 letters, digits, _ or -'), openapiSourceSchema).default({}),
});

/** The validated `openapi` section. */
export type OpenapiConfig = z.output<typeof openapiSchema>;

/** The `openapi` section as written (defaults left out), as `openapiToolSource()` takes it. */
export type OpenapiConfigInput = z.input<typeof openapiSchema>;

/** Whether a document is named by a URL rather than a file. */
export function isDocumentUrl(document: string): boolean {
  return /^https?:\/\//i.test(document);
}

/** The OpenAPI tool source's section of the config file, `openapi:`; a document's relative file path is resolved against the file's folder. */
export const openapiSection = {
  key: 'openapi',
  schema: openapiSchema,
  resolvePaths(openapi: OpenapiConfig, resolve: (relative: string) => string) {
    for (const source of Object.values(openapi.sources)) {
      if (!isDocumentUrl(source.document) && !path.isAbsolute(source.document)) source.document = resolve(source.document);
    }
  },
} as const satisfies ToolSourceSection<'openapi', typeof openapiSchema>;
