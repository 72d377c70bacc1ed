/**
 * The host's retry rule (contract, "Deadlines and retries"), as the Python client's
 * `semmem_client._retry`: one deadline across all attempts; transport failures, 408, 429 and
 * 5xx are retried at most twice, after 250 ms and then 1 s, or after a valid `Retry-After`
 * when that fits the deadline; every attempt sends the same bytes (the same operation id), so
 * a write whose reply was lost is replayed by the server, never applied twice. Other 4xx
 * answers are final. Only reads and idempotent writes are retried (the caller says which).
 *
 * Two additions for many calls at once: each wait is stretched by a random share of itself (up
 * to `jitter`), so a burst's retries spread out instead of meeting again; and a 429 (the server
 * refused the call at admission: nothing ran) is retried until the deadline, not only twice,
 * each wait past the rule's its `Retry-After` (else the rule's last wait) stretched by up to
 * as much again, so the retries of a burst keep arriving spread over the deadline.
 */

import { SemmemError, TransportError } from "./errors.js";

export interface RetryPolicy {
  /** The waits before each retry, in ms (their number is the retries). Default `[250, 1000]`. */
  readonly delaysMs: readonly number[];
  /** Whether a server's valid `Retry-After` replaces a wait when it fits the deadline. */
  readonly retryAfter: boolean;
  /** A 429 (refused at admission) is retried while the deadline leaves time, past `delaysMs`. */
  readonly overloadUntilDeadline?: boolean;
  /** Each wait is stretched by a random share of itself, up to this (0.5: up to half again). */
  readonly jitter?: number;
}

export const CONTRACT_RETRY: RetryPolicy = Object.freeze({
  delaysMs: Object.freeze([250, 1000]), retryAfter: true, overloadUntilDeadline: true, jitter: 0.5,
});
export const NO_RETRY: RetryPolicy = Object.freeze({ delaysMs: Object.freeze([]), retryAfter: false });

// The server's rule (semmem/protocol/untrusted.py): ASCII digits only, at most 18 of them.
const DELTA_SECONDS = /^[0-9]{1,18}$/;
// RFC 9110's preferred HTTP date (IMF-fixdate), the only date form a server should send.
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$/;

/** Whether a failure may be retried: no answer (`undefined`), 408, 429 or 5xx. */
export function retryable(status: number | undefined): boolean {
  return status === undefined || status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/** A `Retry-After` header in ms (delta-seconds or an HTTP date), `undefined` if invalid. */
export function retryAfterMs(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.replace(/^[ \t]+|[ \t]+$/g, "");
  if (DELTA_SECONDS.test(v)) return Number(v) * 1000;
  if (!HTTP_DATE.test(v)) return undefined;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The attempts of one call: the time each may take, and whether (and when) to try again. */
export class Attempts {
  readonly deadline: number;
  retries = 0;

  constructor(deadlineMs: number, readonly policy: RetryPolicy = CONTRACT_RETRY,
              private readonly clock: () => number = () => performance.now()) {
    this.deadline = clock() + deadlineMs;
  }

  /** Ms the next attempt may take; throws `last` when none are left. */
  timeout(last?: SemmemError): number {
    const left = this.deadline - this.clock();
    if (left <= 0) throw last ?? new TransportError("the call's deadline passed before an answer came");
    return left;
  }

  /** Ms to wait before retrying `failure`; throws it when it is not retried. */
  after(failure: SemmemError, retryAfter?: string | null): number {
    const delays = this.policy.delaysMs;
    const overload = failure.status === 429 && this.policy.overloadUntilDeadline === true && delays.length > 0;
    if (!retryable(failure.status) || (this.retries >= delays.length && !overload)) throw failure;
    const left = this.deadline - this.clock();
    const hinted = this.policy.retryAfter ? retryAfterMs(retryAfter) : undefined;
    const past = this.retries >= delays.length;  // a 429 retried past the rule's waits
    const base = hinted !== undefined && hinted < left ? hinted : past ? delays.at(-1)! : delays[this.retries]!;
    const delay = base * (1 + Math.random() * (past ? 1 : this.policy.jitter ?? 0));
    if (delay >= left) throw failure;
    this.retries += 1;
    return delay;
  }
}
