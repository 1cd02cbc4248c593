// The boundary's redaction is the worker's one redaction primitive, kept in `hardened/`.
export * from '../../hardened/redact';
