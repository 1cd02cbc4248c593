/**
 * The encoding the worker's codec gives a payload it could not decrypt (an unknown key id, a broken
 * seal), in place of failing the whole workflow activation: the payload's data is then the reason,
 * as UTF-8. A message handler records such a payload as a rejected decision; any other decoder
 * refuses the unknown encoding as it refuses any.
 */
export const UNDECRYPTABLE_ENCODING = 'tollgate/undecryptable';
