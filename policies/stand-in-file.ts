import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MAX_STAND_INS, type StandInStatement } from '../common/stand-in';

/**
 * The stand-ins' statements, kept in one JSON file (config `approvals.standInsFile`, beside the
 * project's other state): `tollgate stand-in add` appends a statement its approver signed, and the
 * worker reads them at each turn's start. Each statement carries its own signature, which every turn
 * checks against its approver keys: the file holds nothing a turn takes on trust.
 */

/** The statements in the file whose period has not ended by `now` (its newest {@link MAX_STAND_INS}); none when there is no file. */
export function readStandIns(file: string, now = Date.now()): StandInStatement[] {
  if (!existsSync(file)) return [];
  let content: unknown;
  try {
    content = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: the stand-ins file is not JSON (${(error as Error).message}); fix or remove it`, { cause: error });
  }
  const list = (content as { standIns?: unknown })?.standIns;
  if (!Array.isArray(list)) throw new Error(`${file}: expected { "standIns": [ … ] }`);
  const current = list.filter(
    (entry): entry is StandInStatement =>
      typeof entry === 'object' &&
      entry !== null &&
      typeof (entry as StandInStatement).until === 'string' &&
      Date.parse((entry as StandInStatement).until) > now,
  );
  return current.slice(-MAX_STAND_INS);
}

/** Adds a statement to the file (written whole to a temporary file, then renamed over it); statements past their period are dropped. */
export function addStandIn(file: string, statement: StandInStatement, now = Date.now()): StandInStatement[] {
  const standIns = [...readStandIns(file, now), statement];
  mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.partial`;
  writeFileSync(temporary, `${JSON.stringify({ standIns }, null, 2)}\n`);
  renameSync(temporary, file);
  return standIns;
}
