/**
 * The few S3 calls tests need (create a bucket, put, get and list objects), path-style, signed
 * with SigV4 by `aws4` and sent with undici. Not a general S3 client: just enough to set up and
 * inspect what a backup tool wrote.
 */
import aws4 from 'aws4';
import { Agent, type Dispatcher, request } from 'undici';
import { TestenvError } from '../errors.js';

export interface S3ClientConfig {
  /** For example `https://localhost:9000`. */
  readonly endpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** PEM of the CA that signed the server's certificate. */
  readonly caPem: string;
}

/** One object of a listing. */
export interface S3ObjectInfo {
  readonly key: string;
  readonly size: number;
}

/** An S3 call answered with an error status; `code` is S3's error code (`NoSuchBucket`, …). */
export class S3RequestError extends TestenvError {
  override name = 'S3RequestError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Percent-encodes each segment of an object key as S3 expects in a path, keeping the slashes. */
function encodeKey(key: string): string {
  return key
    .split('/')
    .map((segment) =>
      encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
    )
    .join('/');
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function xmlText(value: string): string {
  return value.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => XML_ENTITIES[name] ?? '');
}

function element(xml: string, name: string): string | undefined {
  const match = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  return match?.[1] === undefined ? undefined : xmlText(match[1]);
}

/**
 * A minimal S3 client: path-style requests signed with SigV4, trusting only the given CA.
 * `startS3Server` returns a server whose methods use one; build another to call with other
 * credentials.
 *
 * @example
 * ```ts
 * const client = new S3Client({ ...s3, secretAccessKey: 'wrong' });
 * await client.listObjects('backups'); // rejects: S3RequestError, status 403
 * await client.close();
 * ```
 */
export class S3Client {
  readonly #config: S3ClientConfig;
  readonly #url: URL;
  readonly #dispatcher: Dispatcher;

  constructor(config: S3ClientConfig) {
    this.#config = config;
    this.#url = new URL(config.endpoint);
    this.#dispatcher = new Agent({ connect: { ca: config.caPem } });
  }

  /** Sends one signed request; resolves with the body, rejects with S3RequestError on an error status. */
  async send(
    method: string,
    path: string,
    body?: Buffer | string,
    headers: Record<string, string> = {},
  ): Promise<Buffer> {
    const signed = aws4.sign(
      {
        host: this.#url.hostname,
        port: this.#url.port,
        method,
        path,
        service: 's3',
        region: this.#config.region,
        headers: { ...headers },
        ...(body === undefined ? {} : { body }),
      },
      { accessKeyId: this.#config.accessKeyId, secretAccessKey: this.#config.secretAccessKey },
    );
    const response = await request(new URL(path, this.#url), {
      method: method as Dispatcher.HttpMethod,
      headers: signed.headers as Record<string, string>,
      body,
      dispatcher: this.#dispatcher,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const data = Buffer.from(await response.body.arrayBuffer());
    if (response.statusCode >= 300) {
      const text = data.toString('utf8');
      const code = element(text, 'Code') ?? `HTTP${response.statusCode}`;
      throw new S3RequestError(
        response.statusCode,
        code,
        `S3 ${method} ${path}: ${response.statusCode} ${code}${element(text, 'Message') ? `: ${element(text, 'Message')}` : ''}`,
      );
    }
    return data;
  }

  async createBucket(bucket: string): Promise<void> {
    // Outside us-east-1, S3 wants the region in the body as well as in the signature.
    const body =
      this.#config.region === 'us-east-1'
        ? undefined
        : `<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>${this.#config.region}</LocationConstraint></CreateBucketConfiguration>`;
    await this.send('PUT', `/${encodeURIComponent(bucket)}`, body);
  }

  async putObject(bucket: string, key: string, body: Buffer | string): Promise<void> {
    await this.send('PUT', `/${encodeURIComponent(bucket)}/${encodeKey(key)}`, body);
  }

  getObject(bucket: string, key: string): Promise<Buffer> {
    return this.send('GET', `/${encodeURIComponent(bucket)}/${encodeKey(key)}`);
  }

  /** Every object under `prefix` (all pages of ListObjectsV2), in key order. */
  async listObjects(bucket: string, prefix = ''): Promise<S3ObjectInfo[]> {
    const objects: S3ObjectInfo[] = [];
    let token: string | undefined;
    do {
      const query = new URLSearchParams({ 'list-type': '2', prefix, 'encoding-type': 'url' });
      if (token) query.set('continuation-token', token);
      const xml = (await this.send('GET', `/${encodeURIComponent(bucket)}?${query}`)).toString('utf8');
      for (const [, contents = ''] of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
        // encoding-type=url: keys come percent-encoded, so no XML entity can hide in them.
        objects.push({
          key: decodeURIComponent(element(contents, 'Key') ?? ''),
          size: Number(element(contents, 'Size')),
        });
      }
      token = element(xml, 'IsTruncated') === 'true' ? element(xml, 'NextContinuationToken') : undefined;
    } while (token);
    return objects;
  }

  close(): Promise<void> {
    return this.#dispatcher.close();
  }
}
