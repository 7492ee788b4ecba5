/**
 * Keeps secrets out of logs and error messages: every known secret value is replaced wherever it
 * appears, also in its JSON-escaped and URL-encoded forms (how it would look inside a log line).
 */

const MASK = '[REDACTED]';
/** Shorter values would mask ordinary words; generated passwords are far longer. */
const MIN_SECRET_LENGTH = 4;

export class Redactor {
  readonly #forms = new Set<string>();

  /** Remembers a secret value; later calls to `redact` hide it. */
  add(secret: string | undefined): void {
    if (!secret || secret.length < MIN_SECRET_LENGTH) return;
    this.#forms.add(secret);
    this.#forms.add(JSON.stringify(secret).slice(1, -1));
    this.#forms.add(encodeURIComponent(secret));
  }

  /**
   * `text` with every known secret masked.
   *
   * @example
   * ```ts
   * const redactor = new Redactor();
   * redactor.add('s3cret!');
   * redactor.redact('password=s3cret!'); // 'password=[REDACTED]'
   * ```
   */
  redact(text: string): string {
    let out = text;
    // Longest first, so a secret that contains another is masked whole.
    for (const form of [...this.#forms].sort((a, b) => b.length - a.length)) {
      if (out.includes(form)) out = out.split(form).join(MASK);
    }
    return out;
  }

  /** An error's message (and cause chain) with secrets masked, for logs and reports. */
  describe(error: unknown): string {
    const parts: string[] = [];
    let current: unknown = error;
    for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
      parts.push(current instanceof Error ? current.message : String(current));
      current = current instanceof Error ? current.cause : undefined;
    }
    return this.redact(parts.join(': '));
  }
}
