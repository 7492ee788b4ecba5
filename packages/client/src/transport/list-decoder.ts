/**
 * Decodes a list response item by item while its bytes arrive, so a large list never exists as
 * one string. `JSON.parse` of a whole 30 MiB response keeps that string alive for as long as any
 * parsed object lives (V8 returns long string values as slices of the source), and before that
 * the chunks, their concatenation and the decoded string coexist at the peak. Here each item is
 * parsed from its own bytes and handed on; only the envelope (kind, apiVersion, metadata) is kept
 * as text, with `items` left empty for the caller to fill.
 *
 * The scanner follows strings (and their escapes) and nesting depth only: it assumes the server's
 * JSON is well formed, which `JSON.parse` of each piece still checks.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Where the scanner is: in the envelope, between items of the `items` array, or inside an item. */
type Region = 'envelope' | 'between-items' | 'item';

export class ListDecoder<T> {
  readonly #onItem: (item: T) => void;
  #region: Region = 'envelope';
  #depth = 0;
  #inString = false;
  #escaped = false;
  /** The last string at depth 1 (a key of the list object), to recognise `"items": [`. */
  #lastKey = '';
  #keyParts: Buffer[] | undefined;
  #keyStart = 0;
  #envelope: Buffer[] = [];
  #item: Buffer[] = [];

  constructor(onItem: (item: T) => void) {
    this.#onItem = onItem;
  }

  /** Feeds the next chunk of the response body. */
  write(chunk: Buffer): void {
    let from = 0; // start of the part of `chunk` not yet assigned to the envelope or an item
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (byte === BACKSLASH) this.#escaped = true;
        else if (byte === QUOTE) {
          this.#inString = false;
          if (this.#keyParts) {
            this.#keyParts.push(chunk.subarray(this.#keyStart, i));
            this.#lastKey = Buffer.concat(this.#keyParts).toString('utf8');
            this.#keyParts = undefined;
          }
        }
        continue;
      }
      if (byte === QUOTE) {
        this.#inString = true;
        if (this.#region === 'envelope' && this.#depth === 1) {
          this.#keyParts = [];
          this.#keyStart = i + 1;
        }
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        this.#depth++;
        if (this.#region === 'between-items') {
          // An item starts: what came before it (commas, whitespace) belongs to nothing.
          this.#region = 'item';
          from = i;
        } else if (
          this.#region === 'envelope' &&
          this.#depth === 2 &&
          byte === OPEN_BRACKET &&
          this.#lastKey === 'items'
        ) {
          this.#envelope.push(chunk.subarray(from, i + 1));
          this.#region = 'between-items';
        }
      } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        this.#depth--;
        if (this.#region === 'item' && this.#depth === 2) {
          this.#item.push(chunk.subarray(from, i + 1));
          this.#emitItem();
          this.#region = 'between-items';
        } else if (this.#region === 'between-items' && this.#depth === 1) {
          this.#region = 'envelope';
          from = i;
        }
      }
    }
    if (this.#region === 'item') this.#item.push(chunk.subarray(from));
    else if (this.#region === 'envelope') this.#envelope.push(chunk.subarray(from));
    if (this.#keyParts) {
      this.#keyParts.push(chunk.subarray(this.#keyStart));
      this.#keyStart = 0;
    }
  }

  /** The list without its items (the caller has received them through `onItem`). */
  end(): Record<string, unknown> {
    if (this.#region !== 'envelope' || this.#depth !== 0) throw new SyntaxError('the list response ended early');
    const text = Buffer.concat(this.#envelope).toString('utf8');
    return JSON.parse(text) as Record<string, unknown>;
  }

  #emitItem(): void {
    const parts = this.#item;
    this.#item = [];
    const text = parts.length === 1 ? (parts[0] as Buffer).toString('utf8') : Buffer.concat(parts).toString('utf8');
    this.#onItem(JSON.parse(text) as T);
  }
}
