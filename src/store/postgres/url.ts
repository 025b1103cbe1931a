/** What messages say of a PostgreSQL URL and of a failure to reach its server. */

/** The URL with its password hidden, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.href;
  } catch {
    return 'the PostgreSQL URL';
  }
}

/**
 * Whether a driver error is about reaching the server (network, login, a missing database, rights, resources)
 * rather than a bug: such an error is told in one line. SQLSTATE classes 08, 28, 3D, 42501 and 53; Node's E* codes.
 */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (/^E[A-Z]+$/.test(code) || /^(08|28|3D|53)/.test(code) || code === '42501');
}
