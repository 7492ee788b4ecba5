/**
 * Errors of the client layer. Every API failure is an `ApiError` subclass named for the
 * Kubernetes reason, carrying the HTTP status, the server's message and the request it answered.
 */

/** What a failed request was doing, so errors can say "cannot list configmaps" instead of a bare 403. */
export interface RequestContext {
  readonly method: string;
  readonly path: string;
  /** The Kubernetes verb: get, list, watch, create, update, patch, delete. */
  readonly verb?: string;
  /** The resource, e.g. `configmaps` or `deployments.apps`. */
  readonly resource?: string;
  /** The object's name, when the request was about one object. */
  readonly name?: string;
}

/** The `Status` object the API server returns on failure. */
export interface Status {
  readonly kind?: 'Status';
  readonly status?: string;
  readonly message?: string;
  readonly reason?: string;
  readonly code?: number;
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly causes?: readonly StatusCause[];
    readonly retryAfterSeconds?: number;
  };
}

export interface StatusCause {
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

/** Base class of every error the client raises. */
export class KubeError extends Error {
  override name = 'KubeError';
}

/** The API server answered with a failure status. */
export class ApiError extends KubeError {
  override name = 'ApiError';
  readonly statusCode: number;
  readonly reason: string;
  readonly status: Status;
  readonly request: RequestContext;
  constructor(statusCode: number, status: Status, request: RequestContext, options?: ErrorOptions) {
    const what =
      request.verb && request.resource
        ? `${request.verb} ${request.resource}${request.name ? ` "${request.name}"` : ''}`
        : `${request.method} ${request.path}`;
    super(`${what}: ${status.message ?? status.reason ?? `HTTP ${statusCode}`}`, options);
    this.statusCode = statusCode;
    this.reason = status.reason ?? 'Unknown';
    this.status = status;
    this.request = request;
  }
}

export class BadRequestError extends ApiError {
  override name = 'BadRequestError';
}
export class UnauthorizedError extends ApiError {
  override name = 'UnauthorizedError';
}

/** RBAC denied the request; `verb` and `resource` say what was attempted. */
export class ForbiddenError extends ApiError {
  override name = 'ForbiddenError';
  get verb(): string | undefined {
    return this.request.verb;
  }
  get resource(): string | undefined {
    return this.request.resource;
  }
}
export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
}
export class MethodNotAllowedError extends ApiError {
  override name = 'MethodNotAllowedError';
}
export class AlreadyExistsError extends ApiError {
  override name = 'AlreadyExistsError';
}
/** The object changed since it was read (optimistic concurrency): re-read and try again. */
export class ConflictError extends ApiError {
  override name = 'ConflictError';
}
/** The requested resourceVersion is too old (compacted): list again. */
export class GoneError extends ApiError {
  override name = 'GoneError';
}
/** The object failed validation; `causes` name each field at fault. */
export class InvalidError extends ApiError {
  override name = 'InvalidError';
  get causes(): readonly StatusCause[] {
    return this.status.details?.causes ?? [];
  }
}
/** API Priority and Fairness or a webhook shed the request; it was not processed. */
export class TooManyRequestsError extends ApiError {
  override name = 'TooManyRequestsError';
  readonly retryAfterSeconds: number | undefined;
  constructor(statusCode: number, status: Status, request: RequestContext, retryAfterSeconds?: number) {
    super(statusCode, status, request);
    this.retryAfterSeconds = retryAfterSeconds ?? status.details?.retryAfterSeconds;
  }
}
export class ServerError extends ApiError {
  override name = 'ServerError';
}

/** The request did not complete in time, on the client side or the server's (504, ServerTimeout). */
export class TimeoutError extends KubeError {
  override name = 'TimeoutError';
  constructor(
    readonly request: RequestContext,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`${request.method} ${request.path}: ${message}`, options);
  }
}

/** The server could not be reached or the connection broke. */
export class ConnectionError extends KubeError {
  override name = 'ConnectionError';
  constructor(
    readonly request: RequestContext,
    readonly code: string | undefined,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`${request.method} ${request.path}: ${message}`, options);
  }
}

/** Maps an HTTP failure to the matching error class. Pure. */
export function errorFromResponse(
  statusCode: number,
  body: unknown,
  request: RequestContext,
  retryAfterHeader?: string,
): ApiError | TimeoutError {
  const status: Status =
    body && typeof body === 'object' && (body as Status).kind === 'Status'
      ? (body as Status)
      : { message: typeof body === 'string' && body ? body.slice(0, 500) : undefined, code: statusCode };
  const reason = status.reason;
  if (reason === 'Timeout' || reason === 'ServerTimeout' || statusCode === 504) {
    return new TimeoutError(request, status.message ?? 'the server timed out');
  }
  if (statusCode === 410 || reason === 'Gone' || reason === 'Expired')
    return new GoneError(statusCode, status, request);
  if (reason === 'AlreadyExists') return new AlreadyExistsError(statusCode, status, request);
  if (reason === 'Invalid' || statusCode === 422) return new InvalidError(statusCode, status, request);
  switch (statusCode) {
    case 400:
      return new BadRequestError(statusCode, status, request);
    case 401:
      return new UnauthorizedError(statusCode, status, request);
    case 403:
      return new ForbiddenError(statusCode, status, request);
    case 404:
      return new NotFoundError(statusCode, status, request);
    case 405:
      return new MethodNotAllowedError(statusCode, status, request);
    case 409:
      return new ConflictError(statusCode, status, request);
    case 429: {
      const seconds = retryAfterHeader === undefined ? undefined : Number.parseInt(retryAfterHeader, 10);
      return new TooManyRequestsError(statusCode, status, request, Number.isFinite(seconds) ? seconds : undefined);
    }
  }
  return statusCode >= 500 ? new ServerError(statusCode, status, request) : new ApiError(statusCode, status, request);
}
