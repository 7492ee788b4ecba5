/** Node's error code (ENOENT, EPERM…) of a caught system error, without casting what was thrown. */
export function errnoCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}
