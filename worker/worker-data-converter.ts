import { readFile } from 'node:fs/promises';
import type { DataConverter } from '@temporalio/common';
import type { WorkerOptions } from '@temporalio/worker';
import { codecFromEnvironment, ENCRYPTED_CONVERTER_PATHS } from '../codec/aes-gcm-codec';
import type { TollgateConfig } from '../config/config-schema';

/**
 * Encrypts every payload and failure message when the config names a keyring (`encryption.keysEnv`),
 * flagging what arrives unencrypted for the workflow to refuse (`encryption.requireEncrypted`); plain JSON otherwise.
 */
export function dataConverterFor(config: TollgateConfig): DataConverter | undefined {
  const codec = codecFromEnvironment(config.encryption.keysEnv, process.env, { markUnencrypted: config.encryption.requireEncrypted });
  return codec ? { payloadCodecs: [codec], ...ENCRYPTED_CONVERTER_PATHS } : undefined;
}

/** A name only the converters of an encrypting worker put into a workflow bundle. */
const ENCRYPTED_BUNDLE_MARKER = 'MarkingPayloadConverter';

/**
 * Refuses a prebuilt bundle that lacks the converters an encrypting worker needs (it would keep
 * failures in plaintext and take unencrypted decisions).
 */
export async function checkBundle(config: TollgateConfig, bundle: WorkerOptions['workflowBundle']): Promise<void> {
  if (!bundle || !config.encryption.keysEnv) return;
  const code = 'code' in bundle ? bundle.code : await readFile(bundle.codePath, 'utf8');
  if (!code.includes(ENCRYPTED_BUNDLE_MARKER)) {
    throw new Error(
      'workflowBundle: encryption is on (encryption.keysEnv), but the bundle was built without ENCRYPTED_CONVERTER_PATHS; ' +
        'pass them to bundleWorkflowCode',
    );
  }
}
