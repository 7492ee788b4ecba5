/** The AdmissionReview wire format (admission.k8s.io/v1) and the pure steps from a request body to a response. */
import type { KubeObject } from '@kanri/client';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** What the API server asks a webhook about (the `request` of an AdmissionReview). */
export interface AdmissionRequest {
  /** Echoed in the response; the API server matches answers by it. */
  readonly uid: string;
  readonly kind: { readonly group: string; readonly version: string; readonly kind: string };
  readonly resource: { readonly group: string; readonly version: string; readonly resource: string };
  readonly subResource?: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly operation: AdmissionOperation;
  readonly userInfo: {
    readonly username?: string;
    readonly uid?: string;
    readonly groups?: readonly string[];
    readonly extra?: Readonly<Record<string, readonly string[]>>;
  };
  /** The new object; null for DELETE. */
  readonly object?: KubeObject | null;
  /** The existing object for UPDATE and DELETE. */
  readonly oldObject?: KubeObject | null;
  readonly dryRun?: boolean;
  /** CreateOptions, UpdateOptions or DeleteOptions of the request. */
  readonly options?: unknown;
}

/** A handler's verdict. `code` and `message` reach the client that made the request when it is refused. */
export interface AdmissionDecision {
  readonly allowed: boolean;
  readonly message?: string;
  /** HTTP status the client sees for a refusal. Default 403. */
  readonly code?: number;
  /** Shown by kubectl as `Warning: …`, allowed or not. */
  readonly warnings?: readonly string[];
}

/**
 * Decides one admission request. `signal` aborts when the API server gives up on the call.
 * A thrown error or rejection refuses the request (the server answers `allowed: false` with the error's message).
 */
export type AdmissionHandler = (request: AdmissionRequest, signal: AbortSignal) => Promise<AdmissionDecision>;

export interface AdmissionReview {
  readonly apiVersion: string;
  readonly kind: 'AdmissionReview';
  readonly request?: AdmissionRequest;
  readonly response?: AdmissionResponse;
}

export interface AdmissionResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly status?: { readonly code: number; readonly message: string; readonly reason?: string };
  readonly warnings?: readonly string[];
}

/** Reasons the API server uses for these status codes, so clients read a denial as the usual typed error. */
const REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  403: 'Forbidden',
  409: 'Conflict',
  422: 'Invalid',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/**
 * Parses a request body into a review with a request and a uid, or throws an Error saying what is wrong. Pure.
 *
 * @example
 * ```ts
 * const { request } = parseAdmissionReview(body);
 * if (request.operation === 'DELETE') console.log(request.oldObject?.metadata?.name);
 * ```
 */
export function parseAdmissionReview(body: string): AdmissionReview & { readonly request: AdmissionRequest } {
  let review: Partial<AdmissionReview>;
  try {
    review = JSON.parse(body) as Partial<AdmissionReview>;
  } catch (error) {
    throw new Error(`the body is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (review?.kind !== 'AdmissionReview' || typeof review.apiVersion !== 'string') {
    throw new Error('the body is not an AdmissionReview (kind and apiVersion missing or wrong)');
  }
  if (typeof review.request?.uid !== 'string' || review.request.uid === '') {
    throw new Error('the AdmissionReview has no request.uid');
  }
  return review as AdmissionReview & { readonly request: AdmissionRequest };
}

/**
 * The response review for a decision: the same apiVersion and uid as the request, and for a refusal a
 * status with the code (default 403), its reason and the message. Pure.
 *
 * @example
 * ```ts
 * buildAdmissionResponse(review, { allowed: false, message: 'still in use' });
 * // { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
 * //   response: { uid, allowed: false, status: { code: 403, reason: 'Forbidden', message: 'still in use' } } }
 * ```
 */
export function buildAdmissionResponse(
  review: Pick<AdmissionReview, 'apiVersion'> & { readonly request: Pick<AdmissionRequest, 'uid'> },
  decision: AdmissionDecision,
): AdmissionReview {
  const response: { -readonly [K in keyof AdmissionResponse]: AdmissionResponse[K] } = {
    uid: review.request.uid,
    allowed: decision.allowed,
  };
  if (!decision.allowed) {
    const code = decision.code ?? 403;
    response.status = {
      code,
      message: decision.message ?? 'denied',
      ...(REASONS[code] ? { reason: REASONS[code] } : {}),
    };
  } else if (decision.message) {
    response.status = { code: decision.code ?? 200, message: decision.message };
  }
  if (decision.warnings?.length) response.warnings = decision.warnings;
  return { apiVersion: review.apiVersion, kind: 'AdmissionReview', response };
}
