/**
 * Errors, one class per code of the contract's error envelope
 * `{"error": {code, message, details}}`, plus the client's own: no answer, an answer outside
 * the contract. As in the Python client (`semmem_client._errors`):
 *
 *     SemmemError                   .code .status .details
 *     ├── InvalidRequest            invalid_request        400
 *     │   ├── InvalidArguments      invalid_arguments      422
 *     │   └── DeadlineExceeded      deadline_exceeded      400
 *     ├── Unauthorized              unauthorized           401
 *     ├── Forbidden                 forbidden              403
 *     │   └── QuotaExceeded         quota_exceeded         403
 *     ├── NotFound                  not_found              404
 *     ├── RequestTimeout            request_timeout        408 (retried first)
 *     ├── Conflict                  conflict               409: recall again
 *     │   └── IdempotencyMismatch   idempotency_mismatch   409
 *     ├── TooLarge                  too_large              413
 *     ├── Overloaded                overloaded             429 (retried first)
 *     │   └── RateLimited           rate_limited           429 (retried first)
 *     ├── InternalError             internal               500 (retried first)
 *     ├── Unavailable               unavailable            503 (retried first)
 *     ├── TransportError            transport              no answer: refused, reset, timed out
 *     └── ProtocolError             bad_response           an answer outside the contract
 *
 * Any of them may be `uncertain`: a write that may have committed though its answer never came
 * (a lost reply, a 5xx), its message saying so and `operationId` the id to replay it with.
 *
 * No message ever holds a token: messages are the server's (which never quote a credential)
 * or this client's own, which name the failure, never a header.
 */

export type Details = Record<string, unknown>;

export interface SemmemErrorOptions {
  status?: number | undefined;
  details?: Details | undefined;
  code?: string | undefined;
  uncertain?: boolean | undefined;
  operationId?: string | undefined;
}

export class SemmemError extends Error {
  static readonly code: string = "error";
  readonly code: string;
  readonly status: number | undefined;
  readonly details: Details;
  /** A write that may have committed though its answer never came (a lost reply): check its
   * effect, or replay it with `operationId` (the server answers a replay once). */
  readonly uncertain: boolean;
  /** The operation id of the write whose outcome is uncertain, when it has one. */
  readonly operationId: string | undefined;

  constructor(message: string, options: SemmemErrorOptions = {}) {
    super(message);
    this.name = new.target.name;
    this.code = options.code ?? (new.target as unknown as { code: string }).code;
    this.status = options.status;
    this.details = options.details ?? {};
    this.uncertain = options.uncertain ?? false;
    this.operationId = options.operationId;
  }
}

export class InvalidRequest extends SemmemError { static override readonly code: string = "invalid_request"; }
export class InvalidArguments extends InvalidRequest { static override readonly code: string = "invalid_arguments"; }
export class DeadlineExceeded extends InvalidRequest { static override readonly code: string = "deadline_exceeded"; }
export class Unauthorized extends SemmemError { static override readonly code: string = "unauthorized"; }
export class Forbidden extends SemmemError { static override readonly code: string = "forbidden"; }
export class QuotaExceeded extends Forbidden { static override readonly code: string = "quota_exceeded"; }
export class NotFound extends SemmemError { static override readonly code: string = "not_found"; }
export class RequestTimeout extends SemmemError { static override readonly code: string = "request_timeout"; }
export class Conflict extends SemmemError { static override readonly code: string = "conflict"; }
export class IdempotencyMismatch extends Conflict { static override readonly code: string = "idempotency_mismatch"; }
export class TooLarge extends SemmemError { static override readonly code: string = "too_large"; }
export class Overloaded extends SemmemError { static override readonly code: string = "overloaded"; }
export class RateLimited extends Overloaded { static override readonly code: string = "rate_limited"; }
export class InternalError extends SemmemError { static override readonly code: string = "internal"; }
export class Unavailable extends SemmemError { static override readonly code: string = "unavailable"; }
/** No answer (connection refused or reset, an attempt cut by the deadline) after the retries
 * the deadline allowed. A write may still have committed: retry with the same operation id. */
export class TransportError extends SemmemError { static override readonly code: string = "transport"; }
/** An answer that is not the contract's: not JSON, over 64 KiB, or an error without the envelope. */
export class ProtocolError extends SemmemError { static override readonly code: string = "bad_response"; }

type ErrorClass = (new (message: string, options?: SemmemErrorOptions) => SemmemError) & { code: string };

/** The classes of the codes a server answers with, by code. */
export const BY_CODE: ReadonlyMap<string, ErrorClass> = new Map(
  [InvalidRequest, InvalidArguments, DeadlineExceeded, Unauthorized, Forbidden, QuotaExceeded,
    NotFound, RequestTimeout, Conflict, IdempotencyMismatch, TooLarge, Overloaded, RateLimited,
    InternalError, Unavailable].map((cls) => [cls.code, cls as ErrorClass]),
);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The error an answer carries: by its envelope's code, else a `ProtocolError`. */
export function fromEnvelope(status: number, body: unknown): SemmemError {
  const error = isObject(body) ? body["error"] : undefined;
  if (!isObject(error) || typeof error["code"] !== "string") {
    return new ProtocolError(`HTTP ${status} without the error envelope`, { status });
  }
  const code = error["code"];
  const message = typeof error["message"] === "string" ? error["message"] : code;
  const details = isObject(error["details"]) ? error["details"] : undefined;
  const cls = BY_CODE.get(code) ?? SemmemError;
  return new cls(message, { status, ...(details ? { details } : {}), code });
}
